"""The tools a local Cursor turn's model may call, mapped onto Cursor's exec messages.

In Cursor's protocol the agent loop runs on the server: it sends `exec_server_message`s (read, grep,
ls, shell, write, delete, ...) on the run's stream, the client runs them on the person's machine and
answers each with an `exec_client_message` (same `id`) in a BidiAppend. A local turn's loop
(`cursor.agent_loop`) does the same with these pieces:

- `TOOLS`: the model-facing tools (OpenAI function shape) the mapping covers: `read`, `grep`, `ls`,
  `shell`, `write`, `edit` (a read exec, the replacement made here, then a write exec) and `task` (a
  subagent, run by the loop itself). `specs(names)` the definitions of some of them.
- `Request`: one exec the loop sends (`request(name, args, call_id)` builds it from a model's call;
  ArgumentError names what is wrong with the arguments). `Request.frame(id, exec_id)` is the
  `AgentServerMessage` envelope; `Request.tool_call(result)` what the IDE renders in the step's
  `tool_call_started` / `tool_call_completed` updates (shell, grep, read, ls and delete have a
  ToolCall member; write has none in the fact sheet, its updates carry the call id only).
- `render(result)`: the text a model reads for the client's answer (the member of
  `ExecClientMessage` that answers the exec, or a `throw`).
- `started(...)`, `completed(...)`: the update frames; `abort(id)` stops an exec the loop no longer
  waits for (the turn's deadline, the client gone).
Field numbers: the fact sheet's; members Glider does not read stay unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.framing import frame

# What a result may hand the model, at most (the rest is cut, saying so).
RESULT_CHARS = 16_000

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
    "shell": _fn("shell", "Run a shell command in the workspace.", {"command": _STR}, ["command"]),
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

    def tool_call(self, result: pb.ExecClientMessage | None = None) -> pb.ToolCall:
        tc = pb.ToolCall()
        step = _STEPS.get(self.kind)
        if step is not None:  # write and edit steps have no ToolCall member (the fact sheet lists none)
            member, result_field = step
            call = getattr(tc, member)
            call.args.CopyFrom(getattr(self.message, self.kind))
            if result_field is not None and result is not None and result.HasField(result_field):
                call.result.CopyFrom(getattr(result, result_field))
        return tc


# An exec member -> the ToolCall member that shows its step, and the exec result that completes it.
_STEPS: dict[str, tuple[str, str | None]] = {
    "shell_args": ("shell_tool_call", "shell_result"),
    "read_args": ("read_tool_call", "read_result"),
    "grep_args": ("grep_tool_call", "grep_result"),
    "ls_args": ("ls_tool_call", "ls_result"),
    "delete_args": ("delete_tool_call", None),
}


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


def request(name: str, args: Mapping[str, Any], call_id: str) -> Request:
    """The exec for a model's call of `read`, `grep`, `ls`, `shell` or `write` (`edit` starts with a
    read: see `cursor.agent_loop`). KeyError: not one of them."""
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
        m.shell_args.command = _need(args, "command")
        m.shell_args.tool_call_id = call_id
        return Request("shell_args", m)
    raise KeyError(name)


# ---------------------------------------------------------------- the client's answers


def _cut(text: str) -> str:
    if len(text) <= RESULT_CHARS:
        return text
    return text[:RESULT_CHARS] + f"\n[... {len(text) - RESULT_CHARS} more characters cut]"


def _which(msg: Any, field: str) -> str | None:
    return msg.WhichOneof(field)  # type: ignore[no-any-return]


def render(result: pb.ExecClientMessage) -> str:
    """The text the model reads for one exec's answer."""
    kind = _which(result, "message")
    if kind == "read_result":
        r = result.read_result
        which = _which(r, "result")
        if which == "success":
            s = r.success
            body = s.content if _which(s, "output") == "content" else f"<{len(s.data)} bytes of binary data>"
            return _cut(body) + ("\n[truncated by the client]" if s.truncated else "")
        if which == "error":
            return f"error: {r.error.error}"
        if which == "file_not_found":
            return f"error: file not found: {r.file_not_found.path}"
        return f"error: {which or 'no result'}"
    if kind == "write_result":
        w = result.write_result
        which = _which(w, "result")
        if which == "success":
            return f"wrote {w.success.path} ({w.success.lines_created} lines, {w.success.file_size} bytes)"
        if which == "error":
            return f"error: {w.error.error}"
        return f"error: {which or 'no result'}"
    if kind == "shell_result":
        sr = result.shell_result
        which = _which(sr, "result")
        if which in ("success", "failure"):
            o = getattr(sr, which)
            out = f"exit code {o.exit_code}\n"
            if o.stdout:
                out += f"stdout:\n{o.stdout}\n"
            if o.stderr:
                out += f"stderr:\n{o.stderr}\n"
            return _cut(out.rstrip())
        return f"error: the command was not run ({which or 'no result'})"
    if kind == "grep_result":
        g = result.grep_result
        if _which(g, "result") == "error":
            return f"error: {g.error.error}"
        union = g.success.active_editor_result
        if _which(union, "result") == "files":
            files = list(union.files.files)
            return _cut("\n".join(files)) if files else "no matches"
        return "no matches"
    if kind == "ls_result":
        lr = result.ls_result
        if _which(lr, "result") != "success":
            return f"error: {lr.error.error or _which(lr, 'result') or 'no result'}"
        lines: list[str] = []
        _tree(lr.success.directory_tree_root, "", lines)
        return _cut("\n".join(lines))
    if kind == "delete_result":
        return "deleted" if _which(result.delete_result, "result") == "success" else "error: not deleted"
    return "error: the client sent no result this tool can read"


def _tree(node: pb.LsDirectoryTreeNode, indent: str, lines: list[str]) -> None:
    if len(lines) > 2000:
        return
    for d in node.children_dirs:
        name = d.abs_path.rstrip("/").rsplit("/", 1)[-1]
        lines.append(f"{indent}{name}/")
        _tree(d, indent + "  ", lines)
    for f in node.children_files:
        lines.append(f"{indent}{f.name}")


def read_content(result: pb.ExecClientMessage) -> str | None:
    """The text of a successful read (what `edit` changes), else None."""
    if result.HasField("read_result") and _which(result.read_result, "result") == "success":
        s = result.read_result.success
        return s.content if _which(s, "output") == "content" and not s.truncated else None
    return None


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
