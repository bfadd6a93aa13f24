"""The client's answer to one exec, assembled from the messages it sends for it.

A one-shot answer (`read_result`, `write_result`, `grep_result`, `ls_result`, `delete_result`, a
`shell_result` whatever the request's form) is one `exec_client_message`: `Answer.take` returns it at
once. A streamed shell answer (to `shell_stream_args`) is several `shell_stream` events with the same
id, `start`, `stdout` / `stderr` chunks, `exit` (or `rejected`, `permission_denied`,
`backgrounded`), then an `exec_client_control_message.stream_close`: `Answer.take` gathers them and
`Answer.close` (at the stream_close) returns them as one `shell_result` (success for exit code 0, a
failure otherwise, a timeout when the client aborted it for its timeout), the output cut middle-out
past `CHARS` per stream with the cut said. A stream_close that comes before any answer returns an
empty `ExecClientMessage` (no member: "no result").
"""

from __future__ import annotations

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.exec_results import SHELL_CHARS, cut_marker

# What a streamed answer keeps of each of stdout and stderr (the first and the last half).
CHARS = SHELL_CHARS


class MiddleOut:
    """Text appended piece by piece, of which the first and the last `limit // 2` characters are kept."""

    def __init__(self, limit: int = CHARS) -> None:
        self.half = limit // 2
        self.head = ""
        self.tail = ""
        self.total = 0

    def add(self, piece: str) -> None:
        self.total += len(piece)
        room = self.half - len(self.head)
        if room > 0:
            self.head += piece[:room]
            piece = piece[room:]
        if piece:
            self.tail = (self.tail + piece)[-self.half :]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        return self.head + (cut_marker(dropped) if dropped > 0 else "") + self.tail


class Answer:
    """The answer to one exec (`command`, `working_directory`: a shell's, for its result)."""

    def __init__(self, command: str = "", working_directory: str = "", timeout_ms: int = 0) -> None:
        self.command = command
        self.working_directory = working_directory
        self.timeout_ms = timeout_ms
        self.stdout = MiddleOut()
        self.stderr = MiddleOut()
        self.streamed = False
        self.exit: pb.ShellStreamExit | None = None
        self.refused: pb.ShellStream | None = None  # a rejected or permission_denied event
        self.backgrounded = False

    def take(self, message: pb.ExecClientMessage) -> pb.ExecClientMessage | None:
        """One message for this exec: the whole answer when it is one, else None (a stream goes on)."""
        if message.WhichOneof("message") != "shell_stream":
            return message
        self.streamed = True
        event = message.shell_stream
        which = event.WhichOneof("event")
        if which == "stdout":
            self.stdout.add(event.stdout.data)
        elif which == "stderr":
            self.stderr.add(event.stderr.data)
        elif which == "exit":
            self.exit = event.exit
        elif which in ("rejected", "permission_denied"):
            self.refused = event
        elif which == "backgrounded":
            self.backgrounded = True
        return None

    def close(self) -> pb.ExecClientMessage:
        """The answer at the exec's stream_close."""
        out = pb.ExecClientMessage()
        if self.streamed:
            out.shell_result.CopyFrom(self.shell_result())
        return out

    def shell_result(self) -> pb.ShellResult:
        r = pb.ShellResult()
        if self.refused is not None:
            which = self.refused.WhichOneof("event")
            getattr(r, str(which)).CopyFrom(getattr(self.refused, str(which)))
            return r
        e = self.exit
        if e is not None and e.aborted and e.abort_reason == pb.SHELL_ABORT_REASON_TIMEOUT:
            r.timeout.command = self.command
            r.timeout.working_directory = e.cwd or self.working_directory
            r.timeout.timeout_ms = self.timeout_ms
            return r
        code = 0 if e is None else _signed(e.code)
        if (e is not None and code == 0 and not e.aborted) or (e is None and self.backgrounded):
            s = r.success
            s.command, s.working_directory, s.exit_code = self.command, self.working_directory, code
            s.stdout, s.stderr = self.stdout.text(), self.stderr.text()
            if e is not None and e.cwd:
                s.working_directory = e.cwd
            if self.backgrounded:
                r.is_background = True
            return r
        f = r.failure
        f.command, f.working_directory, f.exit_code = self.command, self.working_directory, code
        f.stdout, f.stderr = self.stdout.text(), self.stderr.text()
        if e is None:  # the stream closed before the command exited
            f.aborted = True
        else:
            f.working_directory = e.cwd or self.working_directory
            f.aborted = e.aborted
            if e.HasField("abort_reason"):
                f.abort_reason = e.abort_reason
        return r


def _signed(code: int) -> int:
    """A uint32 exit code as ShellSuccess/ShellFailure's int32 (Windows' 0xC0000005 stays negative)."""
    return code - (1 << 32) if code >= 1 << 31 else code
