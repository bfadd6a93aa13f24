"""`routing.tool_followup` for the tool steps of a Cursor turn: each step an allow or deny decision.

`Policy(allowlist, denylist).verdict(tool)` -> ("allow" | "deny", why). Tool names are the local
loop's (`protocol.cursor.exec.TOOLS`: read, grep, ls, shell, write, edit, task) and, for a turn
Cursor runs, the exec member Cursor's server sent named the same way (`exec_tool`): a tool on the
denylist is denied; one on the allowlist, or on neither list, is allowed. A local turn does not offer
a denied tool to its model (and refuses a call of it); for a cloud turn the decision is recorded only.
"""

from __future__ import annotations

from collections.abc import Iterable

# Cursor's exec members (what its server sends) -> the tool names the policy lists.
EXEC_TOOLS = {
    "read_args": "read",
    "redacted_read_args": "read",
    "grep_args": "grep",
    "ls_args": "ls",
    "shell_args": "shell",
    "shell_stream_args": "shell",
    "background_shell_spawn_args": "shell",
    "write_args": "write",
    "delete_args": "delete",
    "subagent_args": "task",
    "mcp_args": "mcp",
    "fetch_args": "fetch",
}


def exec_tool(member: str | None) -> str | None:
    """The tool an exec member runs; None for one that is no tool step (a request for context...)."""
    return EXEC_TOOLS.get(member or "")


class Policy:
    def __init__(self, allowlist: Iterable[str], denylist: Iterable[str]) -> None:
        self.allow = frozenset(allowlist)
        self.deny = frozenset(denylist)

    def verdict(self, tool: str) -> tuple[str, str]:
        if tool in self.deny:
            return "deny", f"{tool} on routing.tool_followup.denylist"
        if tool in self.allow:
            return "allow", f"{tool} on routing.tool_followup.allowlist"
        return "allow", f"{tool} on neither list of routing.tool_followup"
