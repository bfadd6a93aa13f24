"""SSE and NDJSON framing: incremental decoders of upstream bytes, and encoders of one event.

Contract:
- `SSEDecoder.feed(chunk)` accepts bytes cut at arbitrary points (even inside a UTF-8 sequence or
  a CRLF pair) and returns the events completed so far, in order; `flush()` returns an event that
  was not terminated by a blank line when the stream ended. Comment lines (`:`) are skipped;
  several `data:` lines are joined with "\\n" (the SSE spec).
- `NDJSONDecoder` does the same for newline-delimited JSON (Ollama); a line that is not a JSON
  object is returned as `{"error": <line>}` so a broken upstream surfaces as an error event.
- Encoders return one complete event as bytes, ready to flush.
"""

from __future__ import annotations

from typing import Any

import orjson

from glider_cli.values import Frozen


class SSEEvent(Frozen):
    event: str | None
    data: str

    def __init__(self, event: str | None, data: str) -> None:
        s: Any = self  # the fields are set here only (see `values`): one per event of a stream
        s.event = event
        s.data = data

    def json(self) -> Any:
        return orjson.loads(self.data)

    def json_object(self) -> dict[str, Any] | None:
        """The data as a JSON object; None when it is not JSON or not an object (decoders skip it)."""
        try:
            data = orjson.loads(self.data)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None


class SSEDecoder:
    """Incremental SSE decoder. `feed_blocks` gives the raw event blocks (cheap: lets a passthrough
    tap skip blocks it does not care about); `parse_block` turns one into an SSEEvent."""

    def __init__(self) -> None:
        self._buf = b""

    def feed_blocks(self, chunk: bytes) -> list[bytes]:
        buf = self._buf + chunk
        if buf.find(b"\r") >= 0:  # not `in`: on 3.11 bytes `in` first tries an int (~1k more)
            # CRLF and lone CR end lines too; a CR at the very end may be half of a CRLF, so keep it.
            keep = buf.endswith(b"\r")
            body = (buf[:-1] if keep else buf).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            buf = body + b"\r" if keep else body
        end = buf.rfind(b"\n\n")
        if end < 0:
            self._buf = buf
            return []
        self._buf = buf[end + 2 :]
        return [b for b in buf[:end].split(b"\n\n") if b.strip(b"\n")]

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        return [ev for block in self.feed_blocks(chunk) if (ev := parse_block(block)) is not None]

    def flush_blocks(self) -> list[bytes]:
        tail, self._buf = self._buf.rstrip(b"\r\n"), b""
        return [tail] if tail else []

    def flush(self) -> list[SSEEvent]:
        return [ev for block in self.flush_blocks() if (ev := parse_block(block)) is not None]


def parse_block(block: bytes) -> SSEEvent | None:
    """One event block (its lines, without the terminating blank line) -> SSEEvent, or None when it
    holds only comments."""
    event: str | None = None
    data: list[str] = []
    for line in block.decode("utf-8", errors="replace").split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if not data and event is None:
        return None
    return SSEEvent(event, "\n".join(data))


class NDJSONDecoder:
    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buf += chunk
        out: list[dict[str, Any]] = []
        while (nl := self._buf.find(b"\n")) >= 0:
            line, self._buf = self._buf[:nl], self._buf[nl + 1 :]
            self._parse(line, out)
        return out

    def flush(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        line, self._buf = self._buf, b""
        self._parse(line, out)
        return out

    @staticmethod
    def _parse(line: bytes, out: list[dict[str, Any]]) -> None:
        line = line.strip()
        if not line:
            return
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            out.append(value)
        else:
            out.append({"error": line.decode("utf-8", errors="replace")})


def _dumps(data: Any) -> bytes:
    return orjson.dumps(data)


def encode_sse(event: str | None, data: Any) -> bytes:
    """`event: NAME` (when given) and one `data:` line of compact JSON, then the blank line."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + _dumps(data) + b"\n\n"


def encode_done() -> bytes:
    return b"data: [DONE]\n\n"
