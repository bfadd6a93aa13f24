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

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True)
class SSEEvent:
    event: str | None
    data: str

    def json(self) -> Any:
        return orjson.loads(self.data)


class SSEDecoder:
    def __init__(self) -> None:
        self._buf = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buf += chunk
        out: list[SSEEvent] = []
        while True:
            nl = self._buf.find(b"\n")
            cr = self._buf.find(b"\r")
            if nl < 0 and cr < 0:
                break
            if cr >= 0 and (nl < 0 or cr < nl):
                if cr == len(self._buf) - 1:
                    break  # a lone CR at the end may be the first half of CRLF
                end, skip = cr, 2 if self._buf[cr + 1 : cr + 2] == b"\n" else 1
            else:
                end, skip = nl, 1
            line = self._buf[:end].decode("utf-8", errors="replace")
            self._buf = self._buf[end + skip :]
            event = self._line(line)
            if event is not None:
                out.append(event)
        return out

    def flush(self) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        if self._buf:
            tail = self._buf.decode("utf-8", errors="replace").rstrip("\r")
            self._buf = b""
            event = self._line(tail)
            if event is not None:
                out.append(event)
        event = self._line("")
        if event is not None:
            out.append(event)
        return out

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SSEEvent(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


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


def encode_ndjson(data: Any) -> bytes:
    return _dumps(data) + b"\n"
