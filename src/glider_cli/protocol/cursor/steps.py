"""What the IDE draws for a local tool step: the `ToolCall` of the step's `tool_call_started` (its
args) and `tool_call_completed` (its args and its result) updates, in the member's own messages as the
fact sheet's §6c gives them, with exactly one member of `tool` set. Cursor's client decodes these
with protobuf-es, which rejects a whole frame whose field has the wrong wire type: the exec messages
are reused only where Cursor's schema reuses them.

- `for_exec(req, result)`: the step of one exec. Shell, grep, ls and delete: `shell_tool_call` /
  `grep_tool_call` / `ls_tool_call` / `delete_tool_call` with the exec's own args and result. Read:
  `read_tool_call` with `ReadToolArgs` and a `ReadToolResult` (a success with the content, whether
  it is empty or was cut, the line count, size, path and the range read; any failure its `error`).
- `failed(req, why, aborted)`: the step of an exec the client could not run (`throw`) or that the
  loop stopped, as the member's own failure (a shell's spawn error or aborted failure, a grep's or
  an ls's error, a read's error).
- `edit(path, stream_content, result)`: a write or an edit (`edit_tool_call`, `EditArgs`), its
  result from `edited(path, before, after, write)` (a success saying the lines added and removed with
  the diff, or the write's failure as the edit's own), `edit_read_failed(path, read)` (an edit whose
  read failed) or `edit_error(path, why)`.
"""

from __future__ import annotations

import difflib
from typing import Any

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.exec import Request
from glider_cli.protocol.cursor.exec_results import read_failure

_INT32 = (1 << 31) - 1
_UINT32 = (1 << 32) - 1

# An exec member -> the ToolCall member drawn for it (read has messages of its own: `_read`).
_MEMBERS = {
    "shell_args": "shell_tool_call",
    "shell_stream_args": "shell_tool_call",
    "grep_args": "grep_tool_call",
    "ls_args": "ls_tool_call",
    "delete_args": "delete_tool_call",
}
_RESULTS = {
    "shell_tool_call": "shell_result",
    "grep_tool_call": "grep_result",
    "ls_tool_call": "ls_result",
    "delete_tool_call": "delete_result",
}


def _which(msg: Any, field: str) -> str | None:
    return msg.WhichOneof(field)  # type: ignore[no-any-return]


def for_exec(req: Request, result: pb.ExecClientMessage | None = None) -> pb.ToolCall:
    """The step of exec `req`: its args, and with `result` (the client's answer) its result."""
    tc = pb.ToolCall()
    if req.kind in ("read_args", "redacted_read_args"):
        _read(tc.read_tool_call, req.args, result)
        return tc
    member = _MEMBERS[req.kind]
    call = getattr(tc, member)
    call.args.CopyFrom(req.args)
    if result is not None:
        answer = _RESULTS[member]
        if result.HasField(answer):
            call.result.CopyFrom(getattr(result, answer))
        else:  # an answer of another kind, or none: the member's own failure, never an empty result
            _fail(member, call, req, "the client sent no result this step can show", aborted=False)
    return tc


def failed(req: Request, why: str, *, aborted: bool = False) -> pb.ToolCall:
    """The step of exec `req` that ended without an answer: the client's `throw`, or the loop stopped."""
    tc = pb.ToolCall()
    if req.kind in ("read_args", "redacted_read_args"):
        _read_args(tc.read_tool_call.args, req.args)
        tc.read_tool_call.result.error.error_message = why
        return tc
    member = _MEMBERS[req.kind]
    call = getattr(tc, member)
    call.args.CopyFrom(req.args)
    _fail(member, call, req, why, aborted=aborted)
    return tc


def _fail(member: str, call: Any, req: Request, why: str, *, aborted: bool) -> None:
    r = call.result
    if member == "shell_tool_call":
        args = req.args
        if aborted:
            r.failure.command, r.failure.working_directory = args.command, args.working_directory
            r.failure.aborted = True
            r.failure.stderr = why
        else:
            r.spawn_error.command, r.spawn_error.working_directory = args.command, args.working_directory
            r.spawn_error.error = why
    elif member == "grep_tool_call":
        r.error.error = why
    elif member == "ls_tool_call":
        r.error.path, r.error.error = req.args.path, why
    else:  # delete: its failures carry no fields this proto declares
        r.error.SetInParent()


def _read_args(out: pb.ReadToolArgs, args: pb.ReadArgs) -> None:
    out.path = args.path
    if args.HasField("offset"):
        out.offset = args.offset
    if args.HasField("limit"):
        out.limit = min(args.limit, _INT32)


def _read(call: pb.ReadToolCall, args: pb.ReadArgs, result: pb.ExecClientMessage | None) -> None:
    _read_args(call.args, args)
    if result is None:
        return
    r = result.read_result
    if not result.HasField("read_result") or _which(r, "result") != "success":
        call.result.error.error_message = read_failure(r)
        return
    got, out = r.success, call.result.success
    lines = 0
    if _which(got, "output") == "data":
        out.data = got.data
        out.is_empty = not got.data
    else:
        out.content = got.content
        out.is_empty = not got.content
        lines = len(got.content.splitlines())
    out.exceeded_limit = got.truncated
    out.total_lines = min(max(got.total_lines, 0), _UINT32)
    out.file_size = min(max(got.file_size, 0), _UINT32)
    out.path = got.path or args.path
    if args.HasField("offset") or args.HasField("limit"):
        start = max(args.offset, 1) if args.HasField("offset") else 1
        out.read_range.start_line = start
        out.read_range.end_line = start + max(lines, 1) - 1


# ---------------------------------------------------------------- writes and edits


def edit(path: str, stream_content: str | None = None, result: pb.EditResult | None = None) -> pb.ToolCall:
    """An `edit_tool_call` (a write or an edit): `stream_content` a write's text; `result` when done."""
    tc = pb.ToolCall()
    call = tc.edit_tool_call
    call.args.path = path
    if stream_content is not None:
        call.args.stream_content = stream_content
    if result is not None:
        call.result.CopyFrom(result)
    return tc


def edited(path: str, before: str | None, after: str, write: pb.ExecClientMessage) -> pb.EditResult:
    """The result of a write exec that replaced `before` (None: unknown, a whole-file write) by `after`."""
    out = pb.EditResult()
    w = write.write_result
    which = _which(w, "result") if write.HasField("write_result") else None
    if which == "success":
        s = out.success
        s.path = w.success.path or path
        diff = list(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile="/dev/null" if before is None else f"a/{path}",
                tofile=f"b/{path}",
            )
        )
        s.lines_added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
        if before is not None:  # a whole-file write does not know what it replaced
            s.lines_removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
            s.before_full_file_content = before
        s.diff_string = "".join(d if d.endswith("\n") else d + "\n" for d in diff)
        s.after_full_file_content = after
        return out
    if which == "permission_denied":
        out.write_permission_denied.path = path
        out.write_permission_denied.error = "permission denied"
    elif which == "rejected":
        out.rejected.path, out.rejected.reason = path, "the write was rejected"
    elif which == "no_space":
        return edit_error(path, "no space left on the device")
    elif which == "error":
        return edit_error(path, w.error.error or "the write failed")
    else:
        return edit_error(path, "the client sent no write result")
    return out


def edit_read_failed(path: str, read: pb.ExecClientMessage) -> pb.EditResult:
    """An edit whose read (of the text to change) failed, as the edit's own failure."""
    out = pb.EditResult()
    r = read.read_result
    which = _which(r, "result") if read.HasField("read_result") else None
    if which == "file_not_found":
        out.file_not_found.path = r.file_not_found.path or path
    elif which == "permission_denied":
        out.read_permission_denied.path = path
    elif which == "rejected":
        out.rejected.path, out.rejected.reason = path, "the read was rejected"
    elif which == "success":  # binary or cut by the client: no text to replace in
        return edit_error(path, "the file's whole text could not be read (binary, or cut by the client)")
    else:
        return edit_error(path, read_failure(r))
    return out


def edit_error(path: str, why: str) -> pb.EditResult:
    out = pb.EditResult()
    out.error.path, out.error.error, out.error.model_visible_error = path, why, why
    return out
