"""Which tool calls a reply issued, read from the bytes the client receives (`turns.sticky` records them).

`ReplyTap(protocol, stream)`: `feed(chunk)` every chunk of the reply as relayed, then `close()` returns
the `IssuedCall`s (id, name, parsed arguments) in the client's own protocol: Anthropic `tool_use`
blocks (arguments from `input_json_delta`), Responses `function_call` items (`call_id`), Chat
`tool_calls` deltas, Gemini `functionCall` parts (which Google gives no id: they are numbered from the
request's count of calls on, `gemini_request.reply_call_id`, so pass the `request`). Streams are cut
into complete SSE events (CRLF framing accepted) and only events
holding a tool-call marker are parsed; a non-streaming body is parsed whole at `close()`, up to
`max_body` bytes. `whole_reply_calls(protocol, body)` reads a parsed non-streaming body. Calls
without an id are dropped; unparsable arguments read as `{}` (the call's `malformed` says so). No
I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.domain import ChatRequest


class IssuedCall(Frozen):
    id: str
    name: str
    arguments: Mapping[str, Any]
    malformed: bool  # its arguments were sent but are not a JSON object (read as {})

    def __init__(self, id: str, name: str, arguments: Mapping[str, Any], malformed: bool = False) -> None:
        init_fields(self, id, name, arguments, malformed)


_MARKERS: dict[str, tuple[bytes, ...]] = {
    "anthropic": (b'"tool_use"', b"input_json_delta"),
    "openai_responses": (b"function_call",),
    "openai_chat": (b"tool_calls",),
    "gemini": (b"functionCall", b"function_call"),
}


class ReplyTap:
    """Collect the tool calls in a reply as the client receives it (its own protocol's bytes).

    Streams are cut into complete SSE events, and only events holding a tool-call marker are parsed:
    a stretch of text deltas costs one substring search per marker and chunk. A whole
    (non-streaming) body is parsed at `close()`, up to `max_body` bytes.
    """

    def __init__(
        self,
        protocol: str,
        stream: bool,
        *,
        max_body: int = 8 * 1024 * 1024,
        request: ChatRequest | None = None,
    ) -> None:
        self.protocol = protocol
        self.stream = stream
        self.request = request
        self._markers = _MARKERS.get(protocol, _MARKERS["openai_chat"])
        self._buf = bytearray()
        self._body = bytearray()
        self._max = max_body
        self._names: dict[int, tuple[str, str]] = {}
        self._args: dict[int, list[str]] = {}
        self._done: list[IssuedCall] = []

    def feed(self, chunk: bytes) -> None:
        if not self.stream:
            if len(self._body) + len(chunk) <= self._max:
                self._body += chunk
            return
        buf = self._buf
        buf += chunk
        if chunk.find(b"\r") >= 0:  # not `in`: on 3.11 bytes `in` first tries an int (~1k more)
            # CRLF framing: normalise (a CR left at the end is completed by the next chunk).
            self._buf = buf = bytearray(buf.replace(b"\r\n", b"\n"))
        end = buf.rfind(b"\n\n")
        if end < 0:
            if len(buf) > self._max:
                buf.clear()
            return
        done = bytes(buf[:end])
        del buf[: end + 2]
        self._events(done)

    def _events(self, done: bytes) -> None:
        if not any(done.find(m) >= 0 for m in self._markers):
            return
        for block in done.split(b"\n\n"):
            if any(block.find(m) >= 0 for m in self._markers):
                self._block(block)

    def close(self) -> list[IssuedCall]:
        if not self.stream:
            try:
                body = orjson.loads(bytes(self._body)) if self._body else None
            except orjson.JSONDecodeError:
                body = None
            return whole_reply_calls(self.protocol, body, request=self.request)
        tail, self._buf = bytes(self._buf), bytearray()
        if tail.strip():
            self._events(tail)
        out = list(self._done)
        for key, (cid, name) in self._names.items():
            out.append(_call(cid, name, "".join(self._args.get(key, []))))
        return [c for c in out if c.id]

    def _block(self, block: bytes) -> None:
        from glider_cli.protocol.sse import parse_block

        ev = parse_block(block)
        if ev is None:
            return
        try:
            data = ev.json()
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        if self.protocol == "gemini":
            self._done.extend(_gemini_calls(data, self.request, len(self._done)))
        elif self.protocol == "anthropic":
            kind = data.get("type")
            if kind == "content_block_start":
                cb = data.get("content_block") or {}
                if isinstance(cb, dict) and cb.get("type") == "tool_use":
                    self._names[int(data.get("index") or 0)] = (
                        str(cb.get("id") or ""),
                        str(cb.get("name") or ""),
                    )
            elif kind == "content_block_delta":
                delta = data.get("delta") or {}
                if isinstance(delta, dict) and delta.get("type") == "input_json_delta":
                    self._args.setdefault(int(data.get("index") or 0), []).append(
                        str(delta.get("partial_json", ""))
                    )
        elif self.protocol == "openai_responses":
            item = data.get("item")
            done = data.get("type") == "response.output_item.done"
            if done and isinstance(item, dict) and item.get("type") == "function_call":
                text = str(item.get("arguments") or "")
                self._done.append(_call(str(item.get("call_id") or ""), str(item.get("name") or ""), text))
        else:
            for choice in data.get("choices") or []:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                for call in (delta or {}).get("tool_calls") or []:
                    key = int(call.get("index") or 0)
                    fn = call.get("function") or {}
                    if key not in self._names:
                        self._names[key] = (str(call.get("id") or ""), str(fn.get("name") or ""))
                    if fn.get("arguments"):
                        self._args.setdefault(key, []).append(str(fn["arguments"]))


def _args(text: str) -> dict[str, Any]:
    return _parsed(text)[0]


def _parsed(text: str) -> tuple[dict[str, Any], bool]:
    """The arguments and whether they were malformed (text that is not a JSON object)."""
    try:
        value = orjson.loads(text) if text.strip() else {}
    except orjson.JSONDecodeError:
        return {}, True
    return (value, False) if isinstance(value, dict) else ({}, True)


def _call(cid: str, name: str, text: str) -> IssuedCall:
    args, bad = _parsed(text)
    return IssuedCall(cid, name, args, bad)


def _gemini_calls(data: dict[str, Any], request: ChatRequest | None, seen: int) -> list[IssuedCall]:
    from glider_cli.protocol.gemini_request import get, parts_of, reply_call_id

    out: list[IssuedCall] = []
    candidates = data.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else None
    for part in parts_of(first.get("content") if isinstance(first, dict) else None):
        call = get(part, "functionCall")
        if isinstance(call, Mapping):
            name = str(call.get("name") or "")
            args = call.get("args")
            cid = reply_call_id(request, seen + len(out), name)
            out.append(IssuedCall(cid, name, args if isinstance(args, dict) else {}))
    return out


def whole_reply_calls(protocol: str, body: Any, *, request: ChatRequest | None = None) -> list[IssuedCall]:
    """The tool calls in a non-streaming reply body of the client's protocol (a Gemini reply's are
    numbered after the calls of `request`)."""
    out: list[IssuedCall] = []
    if not isinstance(body, dict):
        return out
    if protocol == "gemini":
        return _gemini_calls(body, request, 0)
    if protocol == "anthropic":
        for b in body.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                inp = b.get("input")
                out.append(
                    IssuedCall(
                        str(b.get("id") or ""), str(b.get("name") or ""), inp if isinstance(inp, dict) else {}
                    )
                )
    elif protocol == "openai_responses":
        for item in body.get("output") or []:
            if isinstance(item, dict) and item.get("type") == "function_call":
                text = str(item.get("arguments") or "")
                out.append(_call(str(item.get("call_id") or ""), str(item.get("name") or ""), text))
    else:
        for choice in body.get("choices") or []:
            msg = choice.get("message") if isinstance(choice, dict) else None
            for call in (msg or {}).get("tool_calls") or []:
                fn = call.get("function") or {}
                out.append(
                    _call(
                        str(call.get("id") or ""), str(fn.get("name") or ""), str(fn.get("arguments") or "")
                    )
                )
    return [c for c in out if c.id]
