"""Connect envelopes: `flags(1) | length(4, big-endian) | payload`.

Flag bit 0 (`0x01`): the payload is compressed with the stream's `Connect-Content-Encoding` (gzip);
bit 1 (`0x02`): end of stream, the payload a JSON object (`{}` or `{"error": {...}}`).

`FrameReader.feed(chunk)` takes bytes as they come off a socket (one envelope may span several reads,
one read may hold several) and returns each whole envelope as soon as its last byte is in, with its
raw bytes, so a relay forwards exactly what it got, one whole envelope at a time. `close()` returns
what is left over (a truncated frame) so it can be forwarded too: a reader never drops a byte.
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from typing import Any

from glider_cli.values import Frozen

COMPRESSED = 0x01
END_STREAM = 0x02
HEADER = 5
# A frame longer than this is not a Connect frame this proxy decodes (it is still relayed as it came).
MAX_DECODE = 64 * 1024 * 1024
STREAM_TYPES = frozenset({"application/connect+proto", "application/grpc-web+proto", "text/event-stream"})


class Envelope(Frozen):
    """One whole envelope: its flags, its payload as sent (maybe compressed) and its raw bytes."""

    flags: int
    payload: bytes
    raw: bytes

    def __init__(self, flags: int, payload: bytes, raw: bytes) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.flags = flags
        s.payload = payload
        s.raw = raw

    @property
    def compressed(self) -> bool:
        return bool(self.flags & COMPRESSED)

    @property
    def end_stream(self) -> bool:
        return bool(self.flags & END_STREAM)

    def message(self) -> bytes | None:
        """The payload uncompressed; None when it is marked gzip and is not valid gzip."""
        if not self.compressed:
            return self.payload
        return gunzip(self.payload)

    def trailer(self) -> dict[str, Any] | None:
        """An end-of-stream envelope's JSON object; None when it is not one or not valid JSON."""
        if not self.end_stream:
            return None
        data = self.message()
        if data is None:
            return None
        try:
            obj = json.loads(data or b"{}")
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None


def gunzip(data: bytes) -> bytes | None:
    """gzip-decoded bytes, or None when `data` is not a whole valid gzip stream."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return None


def frame(payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def end_stream(error: dict[str, Any] | None = None) -> bytes:
    """The end-of-stream envelope: `{}`, or `{"error": {"code": ..., "message": ...}}`."""
    body = {} if error is None else {"error": error}
    return frame(json.dumps(body, separators=(",", ":")).encode(), END_STREAM)


class FrameReader:
    """Splits a byte stream into whole envelopes (see the module contract)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[Envelope]:
        self._buf += chunk
        out: list[Envelope] = []
        buf = self._buf
        at = 0
        while len(buf) - at >= HEADER:
            flags, n = struct.unpack_from(">BI", buf, at)
            end = at + HEADER + n
            if len(buf) < end:
                break
            raw = bytes(buf[at:end])
            out.append(Envelope(flags, raw[HEADER:], raw))
            at = end
        if at:
            del buf[:at]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)

    def close(self) -> bytes:
        """The bytes of an unfinished envelope (empty when the stream ended on a frame boundary)."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest


def split(body: bytes) -> tuple[list[Envelope], bytes]:
    """All whole envelopes of a complete body, and the trailing bytes that make no whole envelope."""
    reader = FrameReader()
    frames = reader.feed(body)
    return frames, reader.close()
