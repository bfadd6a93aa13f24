"""Which workspace a client request belongs to, from what the client itself sends.

Sources, first match wins:
1. a header `x-glider-workspace: /abs/dir` (any client, or a user's wrapper);
2. Claude Code's `# Environment` block (a `role: system` message or the system prompt):
   ` - Primary working directory: /abs/dir` (older versions: `Working directory: /abs/dir`);
3. Codex's `<environment_context>` user message: `<cwd>/abs/dir</cwd>`.

Only absolute paths count. The directory is then normalised to its repository root (the nearest
ancestor holding `.git`), so a client started in a sub-folder and `glider delegate` run from the
root share one continuity record. No subprocess, only a few `stat` calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from glider_cli.domain import ChatRequest
from glider_cli.store import turn_keys

# The environment lines are read by `store.turn_keys` (the turn index's `clone_path` comes from them too).
HEADER = turn_keys.HEADER
from_texts = turn_keys.workspace_in


def from_request(req: ChatRequest) -> Path | None:
    """The request's workspace, normalised to its repository root; None when the client names none."""
    texts = [req.system, *(m.content for m in req.messages if m.role in ("system", "developer", "user"))]
    raw = from_texts(texts, req.headers)
    return normalise(raw) if raw else None


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
