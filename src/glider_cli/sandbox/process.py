"""One script worker process as the supervisor sees it: spawn, frames both ways, death.

`WorkerProcess(memory_mb)` starts `python -m glider_cli.sandbox.worker` with pipes on its stdin and
stdout, stderr to /dev/null, a progress board (shared memory, sandbox.wire.BOARD) and an
environment that holds only what the interpreter needs (no API keys: a script cannot read the
environment anyway, but the worker has no reason to hold them). `pump(deadline, done)` moves bytes
both ways without blocking past the deadline: replies are kept by sequence number, PARTIAL outcomes
by call, and the reloads a fresh worker starts with are settled as their replies come in.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from glider_cli.sandbox import wire
from glider_cli.sandbox.results import Diagnostic

_ENV_KEEP = ("PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "SYSTEMROOT", "TMPDIR", "LANG", "LC_ALL")
_PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux fcntl: a bigger pipe lets a request payload go in one write


def _board_fd() -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("glider-sandbox-board")
    else:
        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, wire.BOARD.size)
    return fd


def _env() -> dict[str, str]:
    """The worker's environment: what the interpreter needs to start, and no credentials."""
    import glider_cli

    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP}
    roots = [str(Path(glider_cli.__file__).resolve().parent.parent)]
    roots += [p for p in sys.path if p and os.path.isdir(p) and p not in roots]
    env["PYTHONPATH"] = os.pathsep.join(roots)
    return env


def death_reason(returncode: int | None, memory_mb: int, *, started: bool = True) -> str:
    """Why a worker ended, as a phrase for the trace."""
    if not started:
        status = "no exit status" if returncode is None else f"exit status {returncode}"
        return f"the script worker did not start ({status})"
    if returncode is None:
        return "crashed the script worker"
    if returncode == -signal.SIGABRT:
        return f"crashed the script worker (aborted: most likely out of memory, the limit is {memory_mb} MiB)"
    if returncode == -signal.SIGKILL:
        return "crashed the script worker (killed: perhaps the system ran out of memory)"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"crashed the script worker ({name})"
    return f"crashed the script worker (exit status {returncode})"


class WorkerProcess:
    """One worker process and what the supervisor knows of it."""

    def __init__(self, memory_mb: int) -> None:
        board_fd = _board_fd()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "glider_cli.sandbox.worker", str(memory_mb), str(board_fd)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(board_fd,),
                env=_env(),
                start_new_session=True,  # no terminal signals (Ctrl-C, Ctrl-Z) reach the worker
            )
            self.board = mmap.mmap(board_fd, wire.BOARD.size)
        finally:
            os.close(board_fd)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd, self.rfd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.wfd, False)
        os.set_blocking(self.rfd, False)
        with contextlib.suppress(OSError, AttributeError):
            import fcntl

            fcntl.fcntl(self.wfd, _F_SETPIPE_SZ, _PIPE_SIZE)
        self.started = time.monotonic()
        self.hello = False
        self.alive = True
        self.seq = 0
        self._in = bytearray()
        self._out = bytearray()
        self._writing = False
        self._poll = select.poll()
        self._poll.register(self.rfd, select.POLLIN)
        self.replies: dict[int, bytes] = {}
        self.partials: dict[int, dict[int, Any]] = {}
        self.reloads: dict[int, int] = {}  # seq -> script id, for the reloads a new worker starts with
        self.loaded: set[int] = set()
        self.broken: dict[int, str] = {}

    @property
    def ready(self) -> bool:
        return self.hello and not self.reloads

    def request(self, kind: int, body: bytes) -> int:
        self.seq += 1
        self._out += wire.frame(kind, self.seq, body)
        return self.seq

    def progress(self, seq: int) -> int:
        """The index of the script call `seq` was running (0 when the board says nothing of it)."""
        at_seq, index = wire.BOARD.unpack_from(self.board, 0)
        return int(index) if at_seq == seq else 0

    def pump(self, deadline: float, done: Callable[[], bool], *, spin_s: float = 0.0) -> bool:
        """Move bytes both ways until `done()`, the deadline or the worker's end; returns `done()`.

        For the first `spin_s` seconds the pipe is polled without sleeping: a reply that comes within
        a script call's usual time is read at once, not after this process is woken up again (on a
        virtual machine's idle CPU that wake-up can cost more than the scripts themselves)."""
        spin_until = time.monotonic() + spin_s
        while True:
            if done():
                return True
            if self._out:
                self._flush()
            if not self.alive:
                return done()
            now = time.monotonic()
            wait = deadline - now
            if wait <= 0:
                return done()
            for fd, ev in self._poll.poll(0 if now < spin_until else math.ceil(wait * 1000)):
                if fd == self.rfd:
                    self._read()
                elif ev & (select.POLLERR | select.POLLHUP):
                    self.alive = False

    def _flush(self) -> None:
        try:
            n = os.write(self.wfd, self._out)
        except BlockingIOError:
            n = 0
        except OSError:
            self.alive = False
            return
        del self._out[:n]
        if bool(self._out) != self._writing:
            self._writing = bool(self._out)
            if self._writing:
                self._poll.register(self.wfd, select.POLLOUT)
            else:
                self._poll.unregister(self.wfd)

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.rfd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.alive = False
                break
            self._in += chunk
            if len(chunk) < 1 << 16:
                break
        try:
            frames = wire.split(self._in, wire.MAX_REPLY)
        except ValueError:
            self.alive = False
            return
        for kind, seq, body in frames:
            if kind == wire.REPLY:
                sid = self.reloads.pop(seq, None)
                if sid is None:
                    self.replies[seq] = body
                    continue
                reply = orjson.loads(body)
                if reply.get("ok"):
                    self.loaded.add(sid)
                else:
                    diag = Diagnostic.from_dict(reply.get("diagnostic"))
                    self.broken[sid] = f"could not be loaded again after a restart: {diag.message}"
            elif kind == wire.PARTIAL:
                part = orjson.loads(body)
                self.partials.setdefault(seq, {})[int(part["index"])] = part["outcome"]
            elif kind == wire.HELLO:
                self.hello = True

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.alive = False

    def returncode(self, wait_s: float) -> int | None:
        try:
            return self.proc.wait(timeout=max(wait_s, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def put_to_work(self) -> None:
        """A worker kept in reserve is taken: its start-up clock (`started`) runs from now."""
        self.started = time.monotonic()

    def release(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(BufferError, ValueError):
            self.board.close()
