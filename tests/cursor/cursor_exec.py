"""The exec side of the Cursor-shaped client: it runs what an agent server asks (read, grep, ls,
shell, write) in a workspace directory and answers as the fact sheet says the client does: one
`exec_client_message` append with the same `id` and `exec_id`, then an `exec_client_control_message`
`stream_close` append for that id. A `shell_stream_args` is answered as a stream: `shell_stream`
events (start, stdout and stderr in chunks, exit with the code), each its own append, then the
stream_close (`shell_oneshot=True`: one `shell_result` instead). A grep answers as a workspace-wide
search does, in `workspace_results` (one entry: the workspace folder). Built byte by byte from the
fact sheet's field numbers (not from Glider's `.proto`).

`Executor(workspace).on_frame(flags, payload)` reads every frame of a RunSSE as it arrives: exec
messages are run and answered (through `send(message)`, given by the client), the tool-call updates
are recorded (`steps`: ("started" | "completed", call id, ToolCall member number)). `throw`: the execs
it answers with `exec_client_control_message.throw` (it could not run them).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cursor_wire import ld, vi
from fake_cursor import _fields

# ExecServerMessage members (args) -> names; the answer: the ExecClientMessage member of that number.
MEMBERS = {2: "shell", 3: "write", 4: "delete", 5: "grep", 7: "read", 8: "ls", 14: "shell"}
CHUNK = 7  # characters of output per streamed stdout / stderr event


class Leave(Exception):
    """Raised from `on_frame` to make the client drop its RunSSE connection."""


def _str(f: dict[int, Any], n: int) -> str:
    v = f.get(n, b"")
    return v.decode() if isinstance(v, bytes) else ""


class Executor:
    def __init__(
        self,
        workspace: Path,
        *,
        leave_after: str | None = None,
        hang: tuple[str, ...] = (),
        throw: tuple[str, ...] = (),
        shell_oneshot: bool = False,
    ) -> None:
        self.workspace = workspace
        self.shell_oneshot = shell_oneshot
        self.throw = throw  # execs it answers with `exec_client_control_message.throw`
        self.members: list[int] = []  # the ExecServerMessage member of each exec (14: a shell stream)

        self.hang = hang  # execs it takes and never answers (a command that runs for ever)
        self.send: Callable[[bytes], Awaitable[Any]] | None = None
        self.execs: list[tuple[str, dict[int, Any]]] = []
        self.steps: list[tuple[str, str, int | None]] = []
        self.tasks: list[asyncio.Task[Any]] = []
        # "completed": drop the stream at the first heartbeat after a completed step
        self.leave_after = leave_after

    def on_frame(self, flags: int, payload: bytes) -> None:
        if flags & 2:
            return
        f = _fields(payload)
        upd = f.get(1)
        if isinstance(upd, bytes):
            u = _fields(upd)
            for n, kind in ((2, "started"), (3, "completed")):
                if isinstance(u.get(n), bytes):
                    s = _fields(u[n])  # type: ignore[arg-type]
                    tc = s.get(2)
                    member = next(iter(_fields(tc))) if isinstance(tc, bytes) and tc else None
                    self.steps.append((kind, _str(s, 1), member))
            done = any(k == "completed" for k, _, _ in self.steps)
            if 13 in u and done and self.leave_after == "completed":
                raise Leave()  # a heartbeat after a step: the model's next call is running
        em = f.get(2)
        if isinstance(em, bytes):
            self.tasks.append(asyncio.get_running_loop().create_task(self._answer(_fields(em))))

    async def _answer(self, em: dict[int, Any]) -> None:
        number = em.get(1, 0)
        exec_id = _str(em, 15)
        member = next((n for n in MEMBERS if isinstance(em.get(n), bytes)), None)
        assert member is not None, f"an exec this client cannot run: {sorted(em)}"
        args = _fields(em[member])
        self.execs.append((MEMBERS[member], args))
        self.members.append(member)
        if MEMBERS[member] in self.hang:
            return
        assert self.send is not None
        if MEMBERS[member] in self.throw:  # ExecClientControlMessage.throw: 1 id, 2 error
            await self.send(ld(5, ld(2, vi(1, number) + ld(2, "EACCES: the sandbox refused it"))))
            return
        head = vi(1, number) + ld(15, exec_id)
        if member == 14 and not self.shell_oneshot:
            for event in self._shell_stream(args):
                await self.send(ld(2, head + ld(14, event)))  # ExecClientMessage.shell_stream
        else:
            answer = 2 if member == 14 else member  # a shell's one-shot answer is shell_result (2)
            await self.send(ld(2, head + ld(answer, getattr(self, "_" + MEMBERS[member])(args))))
        await self.send(ld(5, ld(1, vi(1, number))))  # stream_close

    def _path(self, raw: str) -> Path:
        p = Path(raw)
        return p if p.is_absolute() else self.workspace / p

    def _read(self, a: dict[int, Any]) -> bytes:
        path = self._path(_str(a, 1))
        if not path.is_file():
            return ld(4, ld(1, str(path)))  # file_not_found
        text = path.read_text()
        return ld(1, ld(1, str(path)) + ld(2, text) + vi(3, len(text.splitlines())))

    def _write(self, a: dict[int, Any]) -> bytes:
        path = self._path(_str(a, 1))
        text = _str(a, 2)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return ld(1, ld(1, str(path)) + vi(2, len(text.splitlines())) + vi(3, len(text.encode())))

    def _delete(self, a: dict[int, Any]) -> bytes:
        self._path(_str(a, 1)).unlink()
        return ld(1, b"")

    def _ls(self, a: dict[int, Any]) -> bytes:
        root = self._path(_str(a, 1))
        dirs = b"".join(ld(2, ld(1, str(p))) for p in sorted(root.iterdir()) if p.is_dir())
        files = b"".join(ld(3, ld(1, p.name)) for p in sorted(root.iterdir()) if p.is_file())
        return ld(1, ld(1, ld(1, str(root)) + dirs + files))

    def _grep(self, a: dict[int, Any]) -> bytes:
        pattern = re.compile(_str(a, 1))
        root = self._path(_str(a, 2) or ".")
        hits = [str(p.relative_to(self.workspace)) for p in sorted(root.rglob("*")) if p.is_file()]
        hits = [h for h in hits if pattern.search((self.workspace / h).read_text(errors="replace"))]
        files = b"".join(ld(1, h) for h in hits) + vi(2, len(hits))
        # GrepSuccess.workspace_results (4): a map entry {1: the folder, 2: a GrepUnionResult.files}
        entry = ld(1, str(self.workspace)) + ld(2, ld(2, files))
        return ld(1, ld(1, _str(a, 1)) + ld(3, "files_with_matches") + ld(4, entry))

    def _run(self, a: dict[int, Any]) -> subprocess.CompletedProcess[str]:
        """The command, within ShellArgs.timeout (3, milliseconds; 30 s when it has none)."""
        ms = a.get(3, 0)
        seconds = ms / 1000 if isinstance(ms, int) and ms > 0 else 30
        ws = self.workspace
        return subprocess.run(_str(a, 1), shell=True, cwd=ws, capture_output=True, text=True, timeout=seconds)

    def _shell(self, a: dict[int, Any]) -> bytes:
        command = _str(a, 1)
        done = self._run(a)
        out = ld(1, command) + ld(2, str(self.workspace)) + vi(3, done.returncode)
        out += ld(5, done.stdout) + ld(6, done.stderr)
        return ld(1 if done.returncode == 0 else 2, out)

    def _shell_stream(self, a: dict[int, Any]) -> list[bytes]:
        """ShellStream events: 4 start, 1 stdout{1 data}, 2 stderr{1 data}, 3 exit{1 code, 2 cwd}."""
        done = self._run(a)
        events = [ld(4, b"")]
        for number, text in ((1, done.stdout), (2, done.stderr)):
            events += [ld(number, ld(1, text[i : i + CHUNK])) for i in range(0, len(text), CHUNK)]
        return [*events, ld(3, vi(1, done.returncode) + ld(2, str(self.workspace)))]
