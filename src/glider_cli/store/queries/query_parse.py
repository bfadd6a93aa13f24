"""The `context query` grammar (memory-and-context.md), parsed into a value.

    <turn_id> [key=clone_path|goal|plan|file-tree] [kind=note|file|dir|symbol]
              [prov=RUNTIME|EXTRACTED|INFERRED] [path=<from>-><to>] [neigh=id] [explain=id]
              [communities=1] [limit=N] keyword…

- Tokens are separated by whitespace; options may appear anywhere after the turn id, each at most
  once. `*` as the turn id means every turn.
- Keywords: juxtaposition means AND; `OR` or `|` (standalone, or inside a token as in `a|b`) joins
  its neighbours into one any-of group, so `a b OR c` means a AND (b OR c).
- `path=`, `neigh=`, `explain=` and `communities=` choose a graph mode; at most one per query.
  `communities=louvain` (needs the optional `graph` extra, networkx) is an addition beyond the spec.
- Values of key/kind/prov are matched case-insensitively and normalised.
Every malformed input raises QueryError with `position`, the offset of the bad token in the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rapidfuzz import process

from glider_cli.errors import QueryError
from glider_cli.values import Frozen, init_fields

KEYS = ("clone_path", "goal", "plan", "file-tree")
QUERY_KINDS = ("note", "file", "dir", "symbol")
PROVS = ("RUNTIME", "EXTRACTED", "INFERRED")
OPTIONS = ("key", "kind", "prov", "path", "neigh", "explain", "communities", "limit")
MODES = ("path", "neigh", "explain", "communities")
MAX_LIMIT = 10_000
DEFAULT_LIMIT = 20

_TOKEN = re.compile(r"\S+")
_OPTION = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)=(.*)$", re.DOTALL)
_WORD = re.compile(r"[^\W_]", re.UNICODE)


class ParsedQuery(Frozen):
    text: str
    turn_id: str
    key: str | None
    kind: str | None
    prov: str | None
    path: tuple[str, str] | None
    neigh: str | None
    explain: str | None
    communities: str | None
    limit: int
    groups: tuple[tuple[str, ...], ...]
    # Offset of each option's value (and of "turn_id") in `text`, for errors found while answering.
    positions: Mapping[str, int]

    def __init__(
        self,
        text: str,
        turn_id: str,
        key: str | None = None,
        kind: str | None = None,
        prov: str | None = None,
        path: tuple[str, str] | None = None,
        neigh: str | None = None,
        explain: str | None = None,
        communities: str | None = None,
        limit: int = DEFAULT_LIMIT,
        groups: tuple[tuple[str, ...], ...] = (),
        positions: Mapping[str, int] | None = None,
    ) -> None:
        init_fields(
            self,
            text,
            turn_id,
            key,
            kind,
            prov,
            path,
            neigh,
            explain,
            communities,
            limit,
            groups,
            {} if positions is None else positions,
        )

    @property
    def mode(self) -> str:
        for m in MODES:
            if getattr(self, m) is not None:
                return m
        return "key" if self.key is not None and not self.groups else "search"

    @property
    def keywords(self) -> tuple[str, ...]:
        return tuple(t for g in self.groups for t in g)


def _fail(text: str, message: str, pos: int) -> QueryError:
    return QueryError(f"{message} (at position {pos})", position=pos, hint=f"\n    {text}\n    {' ' * pos}^")


def _did_you_mean(value: str, choices: tuple[str, ...]) -> str:
    best = process.extractOne(value, choices, score_cutoff=60)
    return f"; did you mean {best[0]!r}?" if best else ""


def _choice(text: str, name: str, value: str, choices: tuple[str, ...], pos: int, upper: bool) -> str:
    norm = value.upper() if upper else value.lower()
    if norm in choices:
        return norm
    raise _fail(
        text,
        f"{name}={value!r} is not one of {', '.join(choices)}{_did_you_mean(norm, choices)}",
        pos,
    )


def parse(text: str) -> ParsedQuery:
    """Parse one query (see the module contract)."""
    tokens = [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]
    if not tokens:
        raise _fail(text, "empty query: expected a turn id first", 0)
    turn_id, tpos = tokens[0]
    if turn_id in ("OR", "|") or _OPTION.match(turn_id):
        raise _fail(text, f"expected a turn id first, got {turn_id!r}", tpos)
    opts: dict[str, str | int | tuple[str, str]] = {}
    positions: dict[str, int] = {"turn_id": tpos}
    words: list[tuple[str, int]] = []
    for tok, pos in tokens[1:]:
        m = _OPTION.match(tok)
        if m is None:
            words.append((tok, pos))
            continue
        name, value = m.group(1), m.group(2)
        vpos = pos + len(name) + 1
        if name not in OPTIONS:
            raise _fail(text, f"unknown option {name!r}{_did_you_mean(name, OPTIONS)}", pos)
        if name in opts:
            raise _fail(text, f"option {name!r} given twice", pos)
        if not value:
            raise _fail(text, f"option {name!r} needs a value", vpos)
        if name in MODES:
            other = next((o for o in MODES if o in opts), None)
            if other is not None:
                raise _fail(text, f"{name}= cannot be combined with {other}=", pos)
        opts[name] = _option_value(text, name, value, vpos)
        positions[name] = vpos
        if name == "path":
            positions["path.to"] = vpos + value.index("->") + 2
    groups = _groups(text, words)
    return ParsedQuery(
        text=text,
        turn_id=turn_id,
        key=_opt_str(opts, "key"),
        kind=_opt_str(opts, "kind"),
        prov=_opt_str(opts, "prov"),
        path=opts["path"] if isinstance(opts.get("path"), tuple) else None,  # type: ignore[arg-type]
        neigh=_opt_str(opts, "neigh"),
        explain=_opt_str(opts, "explain"),
        communities=_opt_str(opts, "communities"),
        limit=int(opts.get("limit", DEFAULT_LIMIT)),  # type: ignore[arg-type]
        groups=groups,
        positions=positions,
    )


def _opt_str(opts: dict[str, str | int | tuple[str, str]], name: str) -> str | None:
    v = opts.get(name)
    return v if isinstance(v, str) else None


def _option_value(text: str, name: str, value: str, vpos: int) -> str | int | tuple[str, str]:
    if name == "key":
        return _choice(text, name, value, KEYS, vpos, upper=False)
    if name == "kind":
        return _choice(text, name, value, QUERY_KINDS, vpos, upper=False)
    if name == "prov":
        return _choice(text, name, value, PROVS, vpos, upper=True)
    if name == "limit":
        if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
            raise _fail(text, f"limit={value!r} must be a whole number from 1 to {MAX_LIMIT}", vpos)
        return int(value)
    if name == "communities":
        if value.lower() in ("1", "true", "yes", "components"):
            return "components"
        if value.lower() == "louvain":
            return "louvain"
        raise _fail(text, f"communities={value!r}: use communities=1 (or communities=louvain)", vpos)
    if name == "path":
        src, sep, dst = value.partition("->")
        if not sep:
            raise _fail(text, f"path={value!r} must be <from>-><to>", vpos)
        if not src:
            raise _fail(text, "path= is missing the entity before '->'", vpos)
        if not dst:
            raise _fail(text, "path= is missing the entity after '->'", vpos + len(src) + 2)
        return (src, dst)
    return value


def _groups(text: str, words: list[tuple[str, int]]) -> tuple[tuple[str, ...], ...]:
    # Split `a|b` into a, |, b keeping offsets.
    parts: list[tuple[str, int]] = []
    for tok, pos in words:
        if tok in ("OR", "|"):
            parts.append(("|", pos))
            continue
        off = 0
        for i, piece in enumerate(tok.split("|")):
            if i:
                parts.append(("|", pos + off - 1))
            if piece:
                parts.append((piece, pos + off))
            off += len(piece) + 1
    groups: list[list[str]] = []
    pending_or: int | None = None
    for i, (tok, pos) in enumerate(parts):
        if tok == "|":
            if i == 0 or pending_or is not None:
                raise _fail(text, "OR needs a keyword on its left", pos)
            pending_or = pos
            continue
        if not _WORD.search(tok):
            raise _fail(text, f"keyword {tok!r} has no letters or digits", pos)
        term = tok.lower()
        if pending_or is not None:
            groups[-1].append(term)
            pending_or = None
        else:
            groups.append([term])
    if pending_or is not None:
        raise _fail(text, "OR needs a keyword on its right", pending_or)
    return tuple(tuple(dict.fromkeys(g)) for g in groups)
