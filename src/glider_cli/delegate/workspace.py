"""Which workspace a client request belongs to, from what the client itself sends.

Sources, first match wins:
1. a header `x-glider-workspace: /abs/dir` (any client, or a user's wrapper);
2. Claude Code's `# Environment` block (a `role: system` message or the system prompt):
   ` - Primary working directory: /abs/dir` (older versions: `Working directory: /abs/dir`);
3. Codex's `<environment_context>` user message: `<cwd>/abs/dir</cwd>`.

Only absolute paths count. The directory is then normalised to its repository root (the nearest
ancestor holding `.git`), so a client started in a sub-folder and `glider delegate` run from the
root share one continuity record. No subprocess, only a few `stat` calls.

`client_name(headers)` is the front CLI of a proxied request; `shell_front(environ)` the front CLI a
shell command (`glider delegate`) runs under, from its environment markers or its ancestor processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from glider_cli.domain import ChatRequest
from glider_cli.turns import turn_keys

# The environment lines are read by `turns.turn_keys` (the turn index's `clone_path` comes from them too).
HEADER = turn_keys.HEADER
from_texts = turn_keys.workspace_in


def from_request(req: ChatRequest) -> Path | None:
    """The request's workspace, normalised to its repository root; None when the client names none."""
    raw = named_in(req)
    return normalise(raw) if raw else None


def named_in(req: ChatRequest) -> str | None:
    """The workspace the request names, as the client wrote it (no I/O); None when it names none."""
    texts = [req.system, *(m.content for m in req.messages if m.role in ("system", "developer", "user"))]
    return from_texts(texts, req.headers) or None


def normalise(path: str | Path) -> Path:
    """Absolute path, resolved; the nearest ancestor holding `.git` when there is one."""
    p = Path(path).expanduser().absolute()
    try:
        p = p.resolve()
    except OSError:
        return p
    for candidate in (p, *p.parents):
        if (candidate / ".git").exists():
            return candidate
    return p


def client_name(headers: Mapping[str, str]) -> str:
    """The front CLI's name from its request headers (recorded as an entry's `source_cli`)."""
    low = {k.lower(): v for k, v in headers.items()}
    ua = low.get("user-agent", "").lower()
    originator = low.get("originator", "").lower()
    if "claude-cli" in ua or "x-claude-code-session-id" in low:
        return "claude-code"
    if originator.startswith("codex") or ua.startswith("codex"):
        return "codex"
    if "geminicli" in ua:
        return "gemini-cli"
    if ua.startswith("anthropic/python") or ua.startswith("openai/python"):
        return ua.split("/", 1)[0] + "-sdk"
    return "client"


# What a coding agent's shell tool leaves in the environment of the commands it runs.
_ENV_FRONTS = (
    ("CLAUDECODE", "claude-code"),
    ("CODEX_THREAD_ID", "codex"),
    ("CODEX_SANDBOX", "codex"),
    ("CODEX_SANDBOX_NETWORK_DISABLED", "codex"),
    ("GEMINI_CLI", "gemini-cli"),
    ("CURSOR_AGENT", "cursor-agent"),
)
# An ancestor process by its name (or its script's, under node).
_PROC_FRONTS = {
    "claude": "claude-code",
    "codex": "codex",
    "gemini": "gemini-cli",
    "cursor-agent": "cursor-agent",
    "agy": "agy",
}
ANCESTORS = 8


def _ancestor_names(pid: int, proc: Path) -> list[str]:
    names: list[str] = []
    for _ in range(ANCESTORS):
        try:
            stat = (proc / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
            argv = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")[:2]
        except OSError:
            break
        comm, rest = stat[stat.find("(") + 1 : stat.rfind(")")], stat[stat.rfind(")") + 2 :].split()
        names.append(comm)
        names += [Path(a.decode("utf-8", "replace")).name for a in argv if a]
        pid = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else 0
        if pid <= 1:
            break
    return names


def shell_front(environ: Mapping[str, str], pid: int | None = None, proc: Path = Path("/proc")) -> str:
    """The front CLI a shell command runs under (`glider delegate` from Claude Code's Bash tool records
    its outcome as Claude Code's): the environment markers its shell tool sets, else the nearest
    ancestor process named like one; `glider-cli` when neither says."""
    for var, front in _ENV_FRONTS:
        if environ.get(var):
            return front
    import os

    for name in _ancestor_names(os.getppid() if pid is None else pid, proc):
        found = _PROC_FRONTS.get(name)
        if found is not None:
            return found
    return "glider-cli"
