"""The tools a local Cursor turn's model may call, mapped onto Cursor's exec messages.

In Cursor's protocol the agent loop runs on the server: it sends `exec_server_message`s (read, grep,
ls, shell, write, delete, ...) on the run's stream, the client runs them on the person's machine and
answers each with `exec_client_message`s (same `id`) in BidiAppends, then an
`exec_client_control_message.stream_close`. A local turn's loop (`cursor.agent_loop`) does the same
with these pieces:

- `TOOLS`: the model-facing tools (OpenAI function shape) the mapping covers: `read`, `grep`, `ls`,
  `shell`, `write`, `edit` (a read exec, the replacement made here, then a write exec) and `task` (a
  subagent, run by the loop itself). `specs(names)` the definitions of some of them.
- `Request`: one exec the loop sends (`request(name, args, call_id, shell_timeout)` builds it from a
  model's call; ArgumentError names what is wrong with the arguments). `Request.frame(id, exec_id)`
  is the `AgentServerMessage` envelope. A shell runs as `shell_stream_args` with a real timeout (the
  model's `timeout` in seconds when it gives one, else the loop's `cursor.shell_timeout_seconds`).
- `started(...)`, `completed(...)`: the step updates around a step's execs (their `ToolCall`: see
  `protocol.cursor.steps`); `abort(id)` stops an exec the loop no longer waits for (the turn's
  deadline, the client gone).
The client's answers are assembled by `protocol.cursor.answers` and read for the model by
`protocol.cursor.exec_results`. Field numbers: the fact sheet's; members Glider does not read stay unknown
fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.framing import frame

# A shell timeout, at most (ShellArgs.timeout is an int32 of milliseconds).
MAX_SHELL_SECONDS = 86_400

_STR = {"type": "string"}
_INT = {"type": "integer"}


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    params = {"type": "object", "properties": props, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


TOOLS: dict[str, dict[str, Any]] = {
    "read": _fn(
        "read",
        "Read a file of the workspace. Optional: offset (first line, 1-based) and limit (lines).",
        {"path": _STR, "offset": _INT, "limit": _INT},
        ["path"],
    ),
    "grep": _fn(
        "grep",
        "Search the workspace for a regular expression; lists the files that match.",
        {"pattern": _STR, "path": _STR, "glob": _STR},
        ["pattern"],
    ),
    "ls": _fn("ls", "List a directory of the workspace.", {"path": _STR}, ["path"]),
    "shell": _fn(
        "shell",
        "Run a shell command in the workspace. Optional: timeout (seconds).",
        {"command": _STR, "timeout": _INT},
        ["command"],
    ),
    "write": _fn(
        "write",
        "Write a whole file (created or replaced).",
        {"path": _STR, "content": _STR},
        ["path", "content"],
    ),
    "edit": _fn(
        "edit",
        "Replace one exact piece of text in a file with another.",
        {"path": _STR, "old_text": _STR, "new_text": _STR},
        ["path", "old_text", "new_text"],
    ),
    "task": _fn(
        "task",
        "Hand a self-contained sub-task to a subagent; returns its answer.",
        {"prompt": _STR, "description": _STR},
        ["prompt"],
    ),
}


class ArgumentError(ValueError):
    """A model's call whose arguments the tool cannot take (told to the model as the call's result)."""


def specs(names: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    return [TOOLS[n] for n in names if n in TOOLS]


def _need(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or (key != "content" and not value):
        raise ArgumentError(f"`{key}` must be a non-empty string")
    return value


def _opt_int(args: Mapping[str, Any], key: str) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ArgumentError(f"`{key}` must be a non-negative integer")
    return value


class Request:
    """One exec to send: `message` is the ExecServerMessage without its id; `kind` its member."""

    def __init__(self, kind: str, message: pb.ExecServerMessage) -> None:
        self.kind = kind
        self.message = message

    def frame(self, number: int, exec_id: str) -> bytes:
        msg = pb.AgentServerMessage()
        msg.exec_server_message.CopyFrom(self.message)
        msg.exec_server_message.id = number
        msg.exec_server_message.exec_id = exec_id
        return frame(msg.SerializeToString())

    @property
    def args(self) -> Any:
        """The exec's arguments (the member `kind` of the ExecServerMessage)."""
        return getattr(self.message, self.kind)


def read(path: str, call_id: str, offset: int | None = None, limit: int | None = None) -> Request:
    m = pb.ExecServerMessage()
    m.read_args.path = path
    m.read_args.tool_call_id = call_id
    if offset is not None:
        m.read_args.offset = offset
    if limit is not None:
        m.read_args.limit = limit
    return Request("read_args", m)


def write(path: str, text: str, call_id: str) -> Request:
    m = pb.ExecServerMessage()
    m.write_args.path = path
    m.write_args.file_text = text
    m.write_args.tool_call_id = call_id
    return Request("write_args", m)


def request(name: str, args: Mapping[str, Any], call_id: str, shell_timeout: float = 120.0) -> Request:
    """The exec for a model's call of `read`, `grep`, `ls`, `shell` or `write` (`edit` starts with a
    read: see `cursor.agent_loop`); `shell_timeout`: seconds, when the model gives none. KeyError: not
    one of them."""
    m = pb.ExecServerMessage()
    if name == "read":
        return read(_need(args, "path"), call_id, _opt_int(args, "offset"), _opt_int(args, "limit"))
    if name == "edit":
        _need(args, "old_text")
        return read(_need(args, "path"), call_id)
    if name == "write":
        return write(_need(args, "path"), _need(args, "content"), call_id)
    if name == "grep":
        m.grep_args.pattern = _need(args, "pattern")
        for key in ("path", "glob"):
            value = args.get(key)
            if isinstance(value, str) and value:
                setattr(m.grep_args, key, value)
        m.grep_args.output_mode = "files_with_matches"
        m.grep_args.tool_call_id = call_id
        return Request("grep_args", m)
    if name == "ls":
        m.ls_args.path = _need(args, "path")
        m.ls_args.tool_call_id = call_id
        return Request("ls_args", m)
    if name == "shell":
        m.shell_stream_args.command = _need(args, "command")
        m.shell_stream_args.tool_call_id = call_id
        seconds = _opt_int(args, "timeout") or shell_timeout
        m.shell_stream_args.timeout = int(min(seconds, MAX_SHELL_SECONDS) * 1000)  # milliseconds
        return Request("shell_stream_args", m)
    raise KeyError(name)


# ---------------------------------------------------------------- the step updates


def _update(u: pb.InteractionUpdate) -> bytes:
    msg = pb.AgentServerMessage()
    msg.interaction_update.CopyFrom(u)
    return frame(msg.SerializeToString())


def started(call_id: str, tool_call: pb.ToolCall, model_call_id: str) -> bytes:
    u = pb.InteractionUpdate()
    u.tool_call_started.call_id = call_id
    u.tool_call_started.tool_call.CopyFrom(tool_call)
    u.tool_call_started.model_call_id = model_call_id
    return _update(u)


def completed(call_id: str, tool_call: pb.ToolCall, model_call_id: str) -> bytes:
    u = pb.InteractionUpdate()
    u.tool_call_completed.call_id = call_id
    u.tool_call_completed.tool_call.CopyFrom(tool_call)
    u.tool_call_completed.model_call_id = model_call_id
    return _update(u)


def abort(number: int) -> bytes:
    """`exec_server_control_message.abort`: the server no longer waits for exec `number`."""
    msg = pb.AgentServerMessage()
    msg.exec_server_control_message.abort.id = number
    return frame(msg.SerializeToString())
