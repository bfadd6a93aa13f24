"""The frames the supervisor and the worker exchange over a pipe pair.

A frame is a 9-byte header, `<IBI` (body length, kind, sequence number), then the body. Bodies are
orjson, except CALL's: a JSON header line (`{"ids": [...]}`), a newline, then the request payload
as UTF-8. Every request but DROP gets exactly one REPLY with the request's sequence number; the
worker answers in order. PARTIAL frames (an outcome a call produced before it went on to the next
script) may come before a CALL's REPLY, so a call cut short still reports what already happened.
The worker writes HELLO once it is ready. A body is at most `MAX_BODY` bytes in either direction:
a longer frame is a protocol error and ends the worker.
"""

from __future__ import annotations

import struct

HEADER = struct.Struct("<IBI")
# Worker's progress board: (sequence number of the call, index of the script it is running).
BOARD = struct.Struct("<II")

LOAD = 1  # {"id", "source", "filename", "deadline"} -> {"ok": true} | {"diagnostic": {...}}
CHECK = 2  # {"source", "filename", "deadline"} -> {"diagnostics": [...]}
CALL = 3  # {"ids": [...]}\n<payload> -> {"outcomes": [...]}
DROP = 4  # {"ids": [...]}, no reply
HELLO = 16  # {"pid", "limit_mb"}
REPLY = 17
PARTIAL = 18  # {"index", "outcome"}

MAX_BODY = 64 << 20  # a request payload can be a few MB; replies are far smaller
MAX_REPLY = 1 << 20


def frame(kind: int, seq: int, body: bytes) -> bytes:
    return HEADER.pack(len(body), kind, seq) + body


def split(buf: bytearray, limit: int) -> list[tuple[int, int, bytes]]:
    """Take every complete frame off the front of `buf`. Raises ValueError for an oversized one."""
    out: list[tuple[int, int, bytes]] = []
    size = HEADER.size
    pos = 0
    while len(buf) - pos >= size:
        length, kind, seq = HEADER.unpack_from(buf, pos)
        if length > limit:
            raise ValueError(f"a frame of {length} bytes (at most {limit})")
        end = pos + size + length
        if end > len(buf):
            break
        out.append((kind, seq, bytes(buf[pos + size : end])))
        pos = end
    if pos:
        del buf[:pos]
    return out
