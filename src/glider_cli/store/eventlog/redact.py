"""Redaction: secrets never reach disk.

`redact(value)` returns a copy of a JSON-like value in which
- the value under a key-ish name (Authorization, x-api-key, `*-token`, `*_secret`, cookies,
  `SecretAccessKey`, `AccountKey`, ...) is replaced by "[REDACTED]" when it is a string (numbers such
  as `max_tokens` are not secrets);
- any Mapping (MappingProxyType, Starlette Headers) becomes a dict, tuples and sets lists, bytes and
  other objects the (redacted) text they would be written as;
- header pairs given as `[name, value]` lists are treated like mapping entries;
- inside every other string, each match of a shape in `SHAPES` (the one table of key and token
  shapes: PEM private keys, AWS key ids and secret keys, GCP service-account keys, Azure account keys,
  connection strings, SAS signatures and client secrets, GitHub, GitLab, Slack, Stripe, OpenAI and
  Anthropic keys, Google API keys, JWTs, `Authorization:` and `Bearer` values) is replaced by
  "[REDACTED]"; a shape found by its label (`aws_secret_access_key = ...`) keeps the label.
The event writer applies it to every event before the event reaches the in-memory ring or disk; the
continuity record and `context export` hold only what went through it.

Every pattern is RE2 (linear in the text, whatever it holds), and only the shapes whose trigger
occurs in a text are run on it. The fast paths decide that nothing needs to change, in one RE2 scan:
- `text_may_need_redaction(text)` is False only when `redact_text(text)` is `text`: no shape's
  trigger (a literal every match of the shape contains) occurs in it;
- `may_need_redaction(blob)`, given the exact JSON bytes (orjson output) of a value made of dicts,
  lists, strings, numbers, booleans and None, is False only when `redact` would return an equal
  value: no trigger, and no string (key or value) that ends in a word every sensitive name ends in.
Both are conservative: false positives only cost the full pass; a false negative would be a bug.

The patterns are compiled on first use (`import re2` included), once, under a lock: the event writer's
thread and the event loop may both be first. Importing this module compiles nothing, so `glider serve`
starts without it (a request's events are written after its reply; issue 29).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

REDACTED = "[REDACTED]"


class Shape(NamedTuple):
    """One key or token shape: `pattern` (RE2, so linear in the text; a `(?P<keep>...)` part is kept,
    the rest replaced) and `trigger` (RE2; every match of `pattern` contains a match of it)."""

    name: str
    pattern: str
    trigger: str


# Separators between a label and its value: `=`, `:`, quotes (also JSON-escaped ones) and spaces.
_SEP = r"""[\\"'\s]*[:=][\\"'\s]*"""
_B64 = r"[A-Za-z0-9/+]"

SHAPES: tuple[Shape, ...] = (
    Shape(
        "pem-private-key",  # also a GCP service-account JSON's "private_key" (with its \n escapes)
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?s:.*?)-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?s:.*)$)",
        "PRIVATE KEY",
    ),
    Shape("gcp-private-key-id", rf"(?P<keep>private_key_id{_SEP})[0-9a-f]{{40}}\b", "private_key_id"),
    Shape("anthropic-openai-key", r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{8,}", "sk-"),
    Shape("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}", "k_live_|k_test_"),
    Shape("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9]{16,}", "whsec_"),
    Shape("github-token", r"\bgh[pousr]_[A-Za-z0-9]{16,}", "gh[pousr]_"),
    Shape("github-fine-grained-token", r"\bgithub_pat_[A-Za-z0-9_]{16,}", "github_pat_"),
    Shape("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{16,}", "glpat-"),
    Shape("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{8,}", "xox"),
    Shape("slack-app-token", r"\bxapp-\d-[A-Za-z0-9\-]{8,}", "xapp-"),
    Shape(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{8,}",
        "hooks.slack.com",
    ),
    Shape("google-api-key", r"\bAIza[0-9A-Za-z_\-]{30,}", "AIza"),
    Shape(
        "aws-access-key-id",  # with the secret key that follows it (`AKIA…,wJalr…` in a credentials CSV)
        rf"\b(?:AKIA|ASIA)[0-9A-Z]{{16}}\b(?:[\s,;:|=\"']{{1,8}}{_B64}{{40}}[A-Za-z0-9/+=]*)?",
        "AKIA|ASIA",
    ),
    Shape(
        "aws-secret-access-key",
        rf"(?P<keep>(?i:(?:aws_?)?secret_?(?:access_?)?key){_SEP}){_B64}{{40}}[A-Za-z0-9/+=]*",
        "(?i)secret_?(?:access_?)?key",
    ),
    Shape(
        "aws-session-token",
        rf"(?P<keep>(?i:session_?token){_SEP})[A-Za-z0-9/+=]{{100,}}",
        "(?i)session_?token",
    ),
    Shape(
        "azure-account-key",  # storage and Service Bus connection strings
        r"(?P<keep>(?i:AccountKey|SharedAccessKey)\s*=\s*)[A-Za-z0-9/+=]{20,}",
        "(?i)accountkey|(?i)sharedaccesskey",
    ),
    Shape("azure-sas-signature", r"(?P<keep>[?&]sig=)[A-Za-z0-9%/+=]{20,}", "sig="),
    Shape("azure-client-secret", r"\b[A-Za-z0-9_.\-~]{3}\dQ~[A-Za-z0-9_.\-~]{31,34}", "Q~"),
    Shape("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", "eyJ"),
    Shape(
        "authorization-value",  # `Authorization: Basic …`, `authorization=token …` in logs and curl lines
        rf"(?P<keep>(?i:(?:proxy-)?authorization){_SEP}"
        r"(?:(?i:basic|bearer|token|digest|negotiate|ntlm|apikey|sso-key)\s+)?)[^\s\"'\\,;]{6,}",
        "(?i)authorization",
    ),
    Shape("bearer-value", r"\b[Bb]earer\s+[A-Za-z0-9._~+/=\-]{6,}", "[Bb]earer"),
)


# No match of any shape is shorter than this.
_MIN_LEN = 11

_EXACT_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "apikey",
        "api-key",
        "x-api-key",
        "token",
        "access-token",
        "refresh-token",
        "id-token",
        "session-token",
        "secret",
        "client-secret",
        "password",
        "passwd",
        "private-key",
        "credentials",
        "credential",
        "bearer",
    }
)
# Names written together (camelCase JSON: `accessToken`, `SecretAccessKey`, `AccountKey`).
_COMPACT_NAMES = frozenset(
    {
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "sessiontoken",
        "clientsecret",
        "privatekey",
        "secretaccesskey",
        "awssecretaccesskey",
        "secretkey",
        "accountkey",
        "sharedaccesskey",
    }
)
_NAME_SUFFIXES = (
    "-api-key",
    "-apikey",
    "-secret",
    "-password",
    "-token",
    "-credentials",
    "-private-key",
    "-secret-key",
    "-access-key",
    "-account-key",
)
# Every name `sensitive_name` accepts ends, once stripped and lower-cased, in one of these (`_` for
# `-` included; `x-...-key` ends in `-key`; the compact names end in a word listed here).
_NAME_ENDS = (
    "authorization",
    "cookie",
    "apikey",
    "-key",
    "_key",
    "token",
    "secret",
    "password",
    "passwd",
    "credentials",
    "credential",
    "bearer",
    "privatekey",
    "accesskey",
    "secretkey",
    "accountkey",
)
# A string ends where a `"` follows after optional whitespace: raw ASCII, escaped (`\n`, `\u001f`) or
# any non-ASCII character (a possible Unicode space). RE2's case folding also folds the Kelvin sign
# (U+212A) to `k`, as str.lower() does for the names `sensitive_name` sees; the sign itself is a
# trigger too, so the check never depends on it.
_STRING_END = r'''(?:[ \t\n\r\x0b\x0c]|[^\x00-\x7f]|\\u[\s\S]{4}|\\[\s\S])*"'''


class _Patterns(NamedTuple):
    """Everything compiled from `SHAPES` and `_NAME_ENDS`."""

    # Each shape compiled on its own, with its trigger: only the shapes whose trigger occurs are run.
    compiled: tuple[tuple[Any, Any, bool], ...]
    # Any shape's trigger.
    trigger: Any
    # A trigger, or a string (key or value) ending in a word every sensitive name ends in.
    blob: Any
    # `blob` as a one-pattern `re2.Set` for the writer's yes/no question on bytes: a Set only says
    # whether the pattern matches, without the match object and the Python-side bookkeeping of
    # `search` (~2.5 us a call on a request's ~2 KB of lines, more than the scan itself; issue 29).
    blob_set: Any


_patterns: _Patterns | None = None
_patterns_lock = threading.Lock()


def patterns() -> _Patterns:
    """The compiled patterns (`blob` is the reference `may_need_redaction` answers for), built by the
    first caller, whichever thread, and shared from then on."""
    global _patterns
    with _patterns_lock:
        if _patterns is None:
            import re2

            trigger = re2.compile("|".join(f"(?:{s.trigger})" for s in SHAPES))
            blob = re2.compile(
                "(?:"
                + trigger.pattern
                + ")|\u212a|(?i:"
                + "|".join(re.escape(w) for w in _NAME_ENDS)
                + ")"
                + _STRING_END
            )
            blob_set = re2.Set.SearchSet()
            blob_set.Add(blob.pattern)
            blob_set.Compile()
            compiled = tuple(
                (re2.compile(s.pattern), re2.compile(s.trigger), "(?P<keep>" in s.pattern) for s in SHAPES
            )
            _patterns = _Patterns(compiled, trigger, blob, blob_set)
        return _patterns


def text_may_need_redaction(text: str) -> bool:
    """False when `redact_text(text)` is `text` (see the module contract)."""
    return len(text) >= _MIN_LEN and (_patterns or patterns()).trigger.search(text) is not None


def may_need_redaction(blob: bytes) -> bool:
    """False when the JSON bytes `blob` hold nothing `redact` would change (see the module contract)."""
    return (_patterns or patterns()).blob_set.Match(blob) is not None


def blob_matcher() -> Callable[[bytes], Any]:
    """`may_need_redaction` as the one call it makes: a callable that returns None exactly when
    `may_need_redaction(blob)` is False (for a caller that keeps it: the writer's usual batch)."""
    return patterns().blob_set.Match  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=4096)
def sensitive_name(name: str) -> bool:
    """True for header/field names whose string values are credentials."""
    n = name.strip().lower().replace("_", "-")
    if n in _EXACT_NAMES or n.endswith(_NAME_SUFFIXES):
        return True
    if "-" not in n and n in _COMPACT_NAMES:  # written together: the fast path sees the same ending
        return True
    return n.startswith("x-") and n.endswith("-key")


def _keep_label(m: Any) -> str:
    return str(m.group("keep")) + REDACTED


def redact_text(text: str) -> str:
    """`text` with every match of every shape in `SHAPES` redacted, in table order."""
    if len(text) < _MIN_LEN:
        return text
    compiled = (_patterns or patterns()).compiled
    present: set[int] = set()
    for m in (_patterns or patterns()).trigger.finditer(text):
        # The shapes whose trigger is here: looked up in a window around the hit, which also holds
        # any trigger the combined scan's hit overlaps (triggers are far shorter than the window).
        window = text[max(m.start() - 64, 0) : m.end() + 64]
        present.update(i for i, (_, trigger, _) in enumerate(compiled) if trigger.search(window) is not None)
    for i in sorted(present):
        pattern, _, keep = compiled[i]
        text = pattern.sub(_keep_label if keep else REDACTED, text)
    return text


def redact(value: Any) -> Any:
    """A redacted copy of a JSON-like value (see the module contract)."""
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(k)
            if isinstance(v, str | bytes) and sensitive_name(key):
                out[key] = REDACTED
            else:
                out[key] = redact(v)
        return out
    if isinstance(value, list | tuple):
        if (
            len(value) == 2
            and isinstance(value[0], str)
            and isinstance(value[1], str | bytes)
            and (sensitive_name(value[0]))
        ):
            return [value[0], REDACTED]
        return [redact(v) for v in value]
    if isinstance(value, set | frozenset):
        return [redact(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return redact_text(bytes(value).decode("utf-8", "replace"))
    # Anything else would be written as its str(): redact that string now.
    return redact_text(str(value))
