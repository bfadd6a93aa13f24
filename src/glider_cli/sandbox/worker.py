"""The script worker: `python -m glider_cli.sandbox.worker MEMORY_MB BOARD_FD`.

Started by sandbox.supervisor, never by hand. It reads frames (sandbox.wire) on stdin and answers
on stdout, one request at a time, in order. Before it says HELLO it
- caps its address space at its start-up footprint plus MEMORY_MB (RLIMIT_AS; a script that needs
  more fails its allocation: a MemoryError, a panic, or an abort that ends this process), and
  allows no core file (an abort must not write hundreds of MB to the working directory);
- moves the protocol to private descriptors and points stdin and stdout at /dev/null, so a
  script's `print` cannot corrupt a frame;
It runs in a session of its own (the supervisor starts it so): Ctrl-C in the terminal of `glider
serve` reaches the server, which closes the pipe, and not the worker in the middle of a call.
It imports only the standard library and starlark-pyo3 (a new worker is ready sooner).
It exits when stdin reaches end of file (the supervisor closed it or died). The progress board
(BOARD_FD, shared memory) always holds the sequence number of the call and the index of the script
running, so the supervisor can name the script it had to kill the worker for.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
from typing import TYPE_CHECKING

from glider_cli.sandbox import wire

if TYPE_CHECKING:
    from typing import Any


class _Reader:
    """Frames from a pipe, read in large chunks (one read per request in the common case)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()

    def next(self) -> tuple[int, int, bytes] | None:
        """The next frame, or None at end of file or on a frame over the size limit."""
        size = wire.HEADER.size
        while True:
            if len(self.buf) >= size:
                length, kind, seq = wire.HEADER.unpack_from(self.buf, 0)
                if length > wire.MAX_BODY:
                    return None
                end = size + length
                if len(self.buf) >= end:
                    body = bytes(self.buf[size:end])
                    del self.buf[:end]
                    return kind, seq, body
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buf += chunk


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _footprint() -> int:
    """This process's address-space size in bytes now (0 when the platform does not say)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * mmap.PAGESIZE


def _cap_memory(memory_mb: int) -> int:
    """Cap the address space; returns the cap in MiB (0 when the platform has no RLIMIT_AS)."""
    try:
        import resource
    except ImportError:
        return 0
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    base = _footprint() or (256 << 20)
    cap = base + (memory_mb << 20)
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap >> 20


def serve(rfd: int, wfd: int, board: mmap.mmap | None, limit_mb: int) -> None:
    """Answer frames on `rfd` until end of file (see the module contract)."""
    from glider_cli.sandbox.starlark_eval import Evaluator

    seq_now = [0]

    def mark(index: int) -> None:
        if board is not None:
            wire.BOARD.pack_into(board, 0, seq_now[0], index)

    def partial(index: int, outcome: dict[str, Any]) -> None:
        body = _dumps({"index": index, "outcome": outcome})
        _write_all(wfd, wire.frame(wire.PARTIAL, seq_now[0], body))

    engine = Evaluator(mark)
    _write_all(wfd, wire.frame(wire.HELLO, 0, _dumps({"pid": os.getpid(), "limit_mb": limit_mb})))
    frames = _Reader(rfd)
    while True:
        got = frames.next()
        if got is None:
            return
        kind, seq, body = got
        seq_now[0] = seq
        reply: Any
        if kind == wire.CALL:
            nl = body.index(b"\n")
            ids = tuple(json.loads(body[:nl])["ids"])
            try:
                outcomes = engine.call(ids, body[nl + 1 :].decode(), partial)
            except MemoryError:
                outcomes = [{"matched": False, "action": None, "error": "ran out of memory"}]
            reply = {"outcomes": outcomes}
        elif kind == wire.LOAD:
            req = json.loads(body)
            reply = engine.load(req["id"], req["source"], req["filename"], req["deadline"], req["load"])
        elif kind == wire.CHECK:
            req = json.loads(body)
            reply = engine.check(req["source"], req["filename"], req["load"])
        elif kind == wire.DROP:
            engine.drop(json.loads(body)["ids"])
            continue
        else:
            return
        _write_all(wfd, wire.frame(wire.REPLY, seq, _dumps(reply)))


def main(argv: list[str]) -> int:
    memory_mb, board_fd = int(argv[0]), int(argv[1])
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    board = mmap.mmap(board_fd, wire.BOARD.size) if board_fd >= 0 else None
    # Loaded before the cap, so the cap counts only what scripts use.
    import glider_cli.sandbox.starlark_eval  # noqa: F401

    limit_mb = _cap_memory(memory_mb)
    serve(rfd, wfd, board, limit_mb)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
