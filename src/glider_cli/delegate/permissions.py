"""The permission relay: what a delegate's CLI refused to do for lack of permission, in the vendor's own
words; the grant that allows exactly that, for one resumed run; and one-shot tokens to answer with.

Refusals (`refusals(vendor, stdout)`), as each CLI reports them:
- claude (`-p --output-format json`): the result object's `permission_denials`, each
  `{tool_name, tool_use_id, tool_input}`.
- cursor-agent (`--output-format stream-json`): `tool_call` events whose tool's `result` is
  `rejected` (`{"tool_call": {"shellToolCall": {"args": {"command": …}, "result": {"rejected": …}}}}`).
- codex (`exec --json`): items completed with status `declined` (a `command_execution`'s command, a
  `file_change`'s paths); and what `codex exec` (whose approval policy is always "never") logs on its
  stderr when it rejects a call asking for escalated permissions (`codex_rejections`: the tool router's
  `error=… reject command …` line, in its own words).
Grants (`Refusal.grant`): the vendor's own rule for exactly what was refused, or None when the vendor
has none that narrow. Claude Code's `--allowedTools` rules: `Bash(<the command>)` (None when the
command holds `*`, which Claude Code reads as a wildcard), `Edit(//<path>)` for Edit / Write /
MultiEdit / NotebookEdit on an absolute path (an Edit rule covers every editing tool), `Read(//<path>)`,
`WebFetch(domain:<host>)`, and the bare name of a tool that takes no specifier (an MCP tool: that
tool only). cursor-agent's only headless switch is `--force` (everything) and codex exec's approvals
are its sandbox modes: their refusals are named, never granted.
Tokens (`Grants`): `offer(...)` keeps what a run was refused with the vendor's session id and gives a
token when something can be granted; `take(token)` gives it back once, within `ttl` seconds (600),
else None. In memory only: a grant is never written anywhere and lives as long as one resumed run.
`answer(typed)`: `/allow <token>` or `/deny <token>` in what the person typed (also `<token> /allow`
alone, what Claude Code's custom `/allow` command from `glider setup claude-code` sends).
Pure apart from the lock: no I/O.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from glider_cli.values import Frozen, init_fields

__all__ = ["Grants", "Pending", "Refusal", "answer", "describe", "refusals"]

TTL = 600.0
_ANSWER = re.compile(r"(?:^|\s)/(allow|deny)\s+([a-z0-9]{8,32})(?=\s|$)")
# Claude Code's custom command (`glider setup claude-code`) expands `/allow TOKEN` into `TOKEN /allow`.
_EXPANDED = re.compile(r"^\s*([a-z0-9]{8,32})\s+/(allow|deny)\s*$")
_EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
_READ_TOOLS = ("Read",)
# Tools whose Claude Code rules take a specifier: a bare name would allow every use.
_SPECIFIED = ("Bash", *_EDIT_TOOLS, *_READ_TOOLS, "WebFetch", "Glob", "Grep", "WebSearch")


class Refusal(Frozen):
    """One refused action: the tool, what it was for (command, path, URL) and the grant, if any."""

    tool: str
    target: str
    grant: str | None

    def __init__(self, tool: str, target: str, grant: str | None) -> None:
        init_fields(self, tool, target, grant)

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "target": self.target, "grant": self.grant}

    def line(self) -> str:
        return f"{self.tool}: {self.target}" if self.target else self.tool


def _claude_grant(tool: str, args: Mapping[str, Any]) -> tuple[str, str | None]:
    command, path, url = (
        args.get("command"),
        args.get("file_path") or args.get("notebook_path"),
        args.get("url"),
    )
    if tool == "Bash" and isinstance(command, str):
        return command, None if "*" in command or not command.strip() else f"Bash({command})"
    if tool in (*_EDIT_TOOLS, *_READ_TOOLS) and isinstance(path, str):
        rule = "Edit" if tool in _EDIT_TOOLS else "Read"
        return path, f"{rule}(/{path})" if path.startswith("/") and "*" not in path else None
    if tool == "WebFetch" and isinstance(url, str):
        host = urlsplit(url).hostname
        return url, f"WebFetch(domain:{host})" if host else None
    target = next((str(v) for v in args.values() if isinstance(v, str)), "")
    return target[:200], None if tool in _SPECIFIED else tool


def _claude(objs: list[dict[str, Any]]) -> list[Refusal]:
    result = next((o for o in reversed(objs) if o.get("type") == "result"), None)
    denials = result.get("permission_denials") if result is not None else None
    out = []
    for d in denials if isinstance(denials, list) else ():
        if isinstance(d, dict) and isinstance(d.get("tool_name"), str):
            args = d.get("tool_input")
            target, grant = _claude_grant(d["tool_name"], args if isinstance(args, dict) else {})
            out.append(Refusal(d["tool_name"], target, grant))
    return out


def _cursor(objs: list[dict[str, Any]]) -> list[Refusal]:
    out = []
    for o in objs:
        call = o.get("tool_call")
        if o.get("type") != "tool_call" or not isinstance(call, dict):
            continue
        for kind, body in call.items():
            result = body.get("result") if isinstance(body, dict) else None
            if not (isinstance(result, dict) and "rejected" in result):
                continue
            args = body.get("args") if isinstance(body.get("args"), dict) else {}
            target = next((str(args[k]) for k in ("command", "path", "url") if args.get(k)), "")
            out.append(Refusal(kind.removesuffix("ToolCall") or kind, target, None))
    return out


def _codex(objs: list[dict[str, Any]]) -> list[Refusal]:
    out = []
    for o in objs:
        item = o.get("item")
        if (
            o.get("type") != "item.completed"
            or not isinstance(item, dict)
            or item.get("status") != "declined"
        ):
            continue
        if item.get("type") == "command_execution":
            out.append(Refusal("command", str(item.get("command") or ""), None))
        elif item.get("type") == "file_change":
            paths = [str(c.get("path")) for c in item.get("changes") or () if isinstance(c, dict)]
            out.append(Refusal("patch", ", ".join(paths), None))
        else:
            out.append(Refusal(str(item.get("type") or "item"), "", None))
    return out


_CODEX_REJECT = re.compile(r"codex_core::tools::router: error=(.*\breject(?:ed)? (?:command|patch).*)$", re.M)


def codex_rejections(stderr: str) -> tuple[Refusal, ...]:
    """The calls `codex exec` rejected for lack of approval, as its stderr says (never granted)."""
    return tuple(
        dict.fromkeys(
            Refusal("command", m.group(1).strip()[:300], None) for m in _CODEX_REJECT.finditer(stderr)
        )
    )


_BY_VENDOR: Mapping[str, Callable[[list[dict[str, Any]]], list[Refusal]]] = {
    "claude": _claude,
    "cursor-agent": _cursor,
    "codex": _codex,
}


def refusals(vendor: str, objs: Iterable[dict[str, Any]]) -> tuple[Refusal, ...]:
    """What `vendor` reports it refused, from its output's JSON objects (unique, in order)."""
    read = _BY_VENDOR.get(vendor)
    found = read(list(objs)) if read is not None else []
    return tuple(dict.fromkeys(found))


def answer(typed: str) -> tuple[str, str] | None:
    """("allow" | "deny", token) when the person typed `/allow <token>` or `/deny <token>`."""
    m = _ANSWER.search(typed)
    if m:
        return m.group(1), m.group(2)
    e = _EXPANDED.match(typed)
    return (e.group(2), e.group(1)) if e else None


class Pending(Frozen):
    """A refused run waiting for the person's answer."""

    token: str
    vendor: str
    session_id: str
    refused: tuple[Refusal, ...]
    workspace: str
    task: str
    source_cli: str

    def __init__(
        self,
        token: str,
        vendor: str,
        session_id: str,
        refused: tuple[Refusal, ...],
        workspace: str,
        task: str,
        source_cli: str,
    ) -> None:
        init_fields(self, token, vendor, session_id, refused, workspace, task, source_cli)

    @property
    def grants(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.grant for r in self.refused if r.grant))


def describe(vendor: str, refused: tuple[Refusal, ...], token: str | None, ttl: float = TTL) -> str:
    """What the person reads: each refusal as the vendor reported it, then how to answer (or why not)."""
    lines = [f"{vendor} was refused permission for:"]
    lines += [f"  - {r.line()}" for r in refused]
    grants = tuple(dict.fromkeys(r.grant for r in refused if r.grant))
    if token is not None and grants:
        rules = " ".join(f'"{g}"' for g in grants)
        lines.append(
            f"Answer `/allow {token}` to let {vendor} continue the same run with exactly this allowed "
            f"(its own terms: --allowedTools {rules}), or `/deny {token}`. "
            f"The token works once, for {ttl / 60:g} minutes."
        )
    else:
        lines.append(f"{vendor} has no switch that allows exactly this for one run: no token.")
    return "\n".join(lines)


class Grants:
    """One-shot tokens for refused runs (see the module contract). Thread-safe."""

    def __init__(self, ttl: float = TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[float, Pending]] = {}

    def offer(
        self,
        vendor: str,
        session_id: str | None,
        refused: tuple[Refusal, ...],
        workspace: str,
        task: str,
        source_cli: str,
    ) -> str | None:
        """A token for this refused run, or None when nothing in it can be granted (or it cannot be
        resumed: the vendor gave no session id)."""
        if not session_id or not any(r.grant for r in refused):
            return None
        token = secrets.token_hex(6)
        now = self._clock()
        with self._lock:
            self._pending = {k: v for k, v in self._pending.items() if v[0] > now}
            self._pending[token] = (
                now + self.ttl,
                Pending(token, vendor, session_id, refused, workspace, task, source_cli),
            )
        return token

    def take(self, token: str) -> Pending | None:
        """The refused run of `token`, once and within its time; None otherwise."""
        with self._lock:
            found = self._pending.pop(token, None)
        if found is None or found[0] <= self._clock():
            return None
        return found[1]
