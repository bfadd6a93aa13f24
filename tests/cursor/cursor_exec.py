"""The exec side of the Cursor-shaped client: it runs what an agent server asks (read, grep, ls,
shell, write) in a workspace directory and answers as the fact sheet says the client does: one
`exec_client_message` append with the same `id` and `exec_id`, then an `exec_client_control_message`
`stream_close` append for that id. Built byte by byte from the fact sheet's field numbers (not from
Glider's `.proto`).

`Executor(workspace).on_frame(flags, payload)` reads every frame of a RunSSE as it arrives: exec
messages are run and answered (through `send(message)`, given by the client), the tool-call updates
are recorded (`steps`: ("started" | "completed", call id, ToolCall member number)).
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
MEMBERS = {2: "shell", 3: "write", 4: "delete", 5: "grep", 7: "read", 8: "ls"}


class Leave(Exception):
    """Raised from `on_frame` to make the client drop its RunSSE connection."""


def _str(f: dict[int, Any], n: int) -> str:
    v = f.get(n, b"")
    return v.decode() if isinstance(v, bytes) else ""


class Executor:
    def __init__(
        self, workspace: Path, *, leave_after: str | None = None, hang: tuple[str, ...] = ()
    ) -> None:
        self.workspace = workspace
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
        if MEMBERS[member] in self.hang:
            return
        result = getattr(self, "_" + MEMBERS[member])(args)
        assert self.send is not None
        await self.send(ld(2, vi(1, number) + ld(15, exec_id) + ld(member, result)))
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
        return ld(1, ld(1, _str(a, 1)) + ld(3, "files_with_matches") + ld(5, ld(2, files)))

    def _shell(self, a: dict[int, Any]) -> bytes:
        command = _str(a, 1)
        ws = self.workspace
        done = subprocess.run(command, shell=True, cwd=ws, capture_output=True, text=True, timeout=30)
        out = ld(1, command) + ld(2, str(self.workspace)) + vi(3, done.returncode)
        out += ld(5, done.stdout) + ld(6, done.stderr)
        return ld(1 if done.returncode == 0 else 2, out)
