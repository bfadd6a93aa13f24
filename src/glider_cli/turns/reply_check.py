"""Whether a model's reply can be used by the agent that asked: read in the client's own protocol.

Small local models fail in a few recognisable ways (issue 42): a tool call whose name was never
offered (`bad_tool_name`), arguments that are not a JSON object or lack a required property of the
offered tool's schema (`bad_tool_args`), or a reply with neither text nor a tool call
(`empty_reply`). `proxy.escalate` asks this module before the first byte of a local reply goes out.

- `offered_tools(protocol, body)`: the tools the request offers (`Offered`): names and each one's
  required properties. A request that offers tools this module cannot name precisely (an Anthropic
  deferred tool a `tool_reference` has not named yet is named once it has; a Codex `namespace`, a
  Chat `custom` tool's free-form input) leaves unknown names alone (`Offered.open`).
- `whole_verdict(protocol, body, offered)`: a non-streaming reply body (parsed JSON) -> `Verdict`.
- `StreamCheck(protocol, offered)`: `feed(chunk)` the stream's bytes as the client would get them;
  it returns None while undecided and a `Verdict` once it is decided: usable as soon as a text delta
  with visible characters arrives (text goes out as today), or, when the reply opens with a tool call,
  once that call is complete (then checked); `close()` at the stream's end decides what is still
  open (a call never completed is checked as it stands; nothing at all is `empty_reply`).
  Thinking and whitespace-only text leave it undecided. A Gemini `alt=json` stream (one JSON array)
  is not SSE: the caller checks it as a whole.

Pure: no I/O, no clock, nothing of routing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from glider_cli.protocol.sse import parse_block
from glider_cli.values import Frozen, init_fields

BAD_TOOL_NAME = "bad_tool_name"
BAD_TOOL_ARGS = "bad_tool_args"
EMPTY_REPLY = "empty_reply"
REASONS = (BAD_TOOL_NAME, BAD_TOOL_ARGS, EMPTY_REPLY)


class Verdict(Frozen):
    """`reason` is None for a usable reply, else one of `REASONS`; `detail` says what was wrong."""

    reason: str | None
    detail: str

    def __init__(self, reason: str | None, detail: str = "") -> None:
        init_fields(self, reason, detail)

    @property
    def ok(self) -> bool:
        return self.reason is None


USABLE = Verdict(None)


class Offered(Frozen):
    """The tools a request offers: name -> its required properties; `open`: other names may be valid."""

    required: Mapping[str, tuple[str, ...]]
    open: bool

    def __init__(self, required: Mapping[str, tuple[str, ...]], open: bool = False) -> None:
        init_fields(self, required, open)


def _required(schema: Any) -> tuple[str, ...]:
    req = schema.get("required") if isinstance(schema, Mapping) else None
    return tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()


def _references(body: Mapping[str, Any]) -> Iterable[str]:
    """Tool names an Anthropic `tool_reference` block (ToolSearch's result) has loaded."""
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            inner = block.get("content")
            for ref in inner if isinstance(inner, list) else ():
                if isinstance(ref, Mapping) and ref.get("type") == "tool_reference":
                    name = ref.get("tool_name")
                    if isinstance(name, str):
                        yield name


def offered_tools(protocol: str, body: Mapping[str, Any]) -> Offered:
    """The tools `body` (a request in `protocol`) offers; see the module contract."""
    out: dict[str, tuple[str, ...]] = {}
    open_ = False
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        if protocol == "gemini":
            decls = tool.get("functionDeclarations") or tool.get("function_declarations") or ()
            for d in decls if isinstance(decls, list) else ():
                if isinstance(d, Mapping) and isinstance(d.get("name"), str):
                    schema = d.get("parametersJsonSchema") or d.get("parameters_json_schema")
                    out[d["name"]] = _required(schema if schema is not None else d.get("parameters"))
        elif protocol == "anthropic":
            if tool.get("defer_loading"):
                open_ = open_ or tool.get("name") == "DeferredToolPlaceholder"
                continue
            if isinstance(tool.get("name"), str):
                out[tool["name"]] = _required(tool.get("input_schema"))
        elif protocol == "openai_responses":
            kind = tool.get("type")
            if kind == "function" and isinstance(tool.get("name"), str):
                out[tool["name"]] = _required(tool.get("parameters"))
            elif kind in ("namespace", "custom"):
                open_ = True
        else:
            fn = tool.get("function")
            if tool.get("type", "function") == "function" and isinstance(fn, Mapping):
                if isinstance(fn.get("name"), str):
                    out[fn["name"]] = _required(fn.get("parameters"))
            elif tool.get("type") == "custom":
                open_ = True
    if protocol == "anthropic" and open_:
        for name in _references(body):
            out.setdefault(name, ())
        open_ = False  # a deferred tool is callable once ToolSearch named it, not before
    return Offered(out, open_)


def call_verdict(name: str, arguments: Any, offered: Offered) -> Verdict:
    """One tool call: `arguments` is the parsed object, or the text when it came as JSON text."""
    if name not in offered.required:
        if offered.open:
            return USABLE
        return Verdict(BAD_TOOL_NAME, f"tool {name!r} was not offered")
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError:
            return Verdict(BAD_TOOL_ARGS, f"the arguments of {name!r} are not JSON")
    if not isinstance(arguments, Mapping):
        return Verdict(BAD_TOOL_ARGS, f"the arguments of {name!r} are not a JSON object")
    missing = [r for r in offered.required[name] if r not in arguments]
    if missing:
        return Verdict(BAD_TOOL_ARGS, f"{name!r} lacks its required {', '.join(missing)}")
    return USABLE


def _visible(text: Any) -> bool:
    return isinstance(text, str) and bool(text.strip())


def whole_verdict(protocol: str, body: Any, offered: Offered) -> Verdict:
    """A non-streaming reply of `protocol` (parsed JSON): its first tool call is checked, else it
    must have visible text (see the module contract)."""
    texts: list[Any] = []
    calls: list[tuple[str, Any]] = []
    if not isinstance(body, Mapping):
        return Verdict(EMPTY_REPLY, "the reply is not a JSON object")
    if protocol == "anthropic":
        for b in body.get("content") or ():
            if isinstance(b, Mapping) and b.get("type") == "text":
                texts.append(b.get("text"))
            elif isinstance(b, Mapping) and b.get("type") == "tool_use":
                calls.append((str(b.get("name") or ""), b.get("input")))
    elif protocol == "openai_responses":
        for item in body.get("output") or ():
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "message":
                for part in item.get("content") or ():
                    if isinstance(part, Mapping):
                        texts.append(part.get("text"))
            elif item.get("type") == "function_call":
                calls.append((str(item.get("name") or ""), str(item.get("arguments") or "")))
    elif protocol == "gemini":
        for name, args, text in _gemini_parts(body):
            texts.append(text)
            if name is not None:
                calls.append((name, args))
    else:
        for choice in body.get("choices") or ():
            msg = choice.get("message") if isinstance(choice, Mapping) else None
            if not isinstance(msg, Mapping):
                continue
            texts.append(msg.get("content"))
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(fn, Mapping):
                    calls.append((str(fn.get("name") or ""), str(fn.get("arguments") or "")))
    for name, args in calls:
        verdict = call_verdict(name, args, offered)
        if not verdict.ok:
            return verdict
    if calls or any(_visible(t) for t in texts):
        return USABLE
    return Verdict(EMPTY_REPLY, "the reply has neither text nor a tool call")


def _gemini_parts(data: Mapping[str, Any]) -> Iterable[tuple[str | None, Any, Any]]:
    """(call name or None, call args, text) of each part of the first candidate (thoughts: no text)."""
    candidates = data.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else None
    content = first.get("content") if isinstance(first, Mapping) else None
    parts = content.get("parts") if isinstance(content, Mapping) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        call = part.get("functionCall") or part.get("function_call")
        if isinstance(call, Mapping):
            yield str(call.get("name") or ""), call.get("args", {}), None
        elif not part.get("thought"):
            yield None, None, part.get("text")


class StreamCheck:
    """See the module contract: fed a stream in the client's protocol, decides once."""

    def __init__(self, protocol: str, offered: Offered) -> None:
        self.protocol = protocol
        self.offered = offered
        self._buf = bytearray()
        self._name: str | None = None  # the call being held
        self._key: Any = None  # its index (Anthropic, Chat)
        self._args: list[str] = []
        self.verdict: Verdict | None = None

    def feed(self, chunk: bytes) -> Verdict | None:
        if self.verdict is not None:
            return self.verdict
        buf = self._buf
        buf += chunk
        if chunk.find(b"\r") >= 0:  # not `in`: on 3.11 bytes `in` first tries an int (~1k more)
            self._buf = buf = bytearray(buf.replace(b"\r\n", b"\n"))
        end = buf.rfind(b"\n\n")
        if end < 0:
            return None
        done = bytes(buf[:end])
        del buf[: end + 2]
        for block in done.split(b"\n\n"):
            self.verdict = self._block(block)
            if self.verdict is not None:
                break
        return self.verdict

    def close(self) -> Verdict:
        """The verdict at the stream's end (what is still undecided is decided now)."""
        if self.verdict is None and self._buf.strip():
            tail, self._buf = bytes(self._buf), bytearray()
            self.verdict = self._block(tail)
        if self.verdict is None:
            self.verdict = self._held() or Verdict(EMPTY_REPLY, "the reply has neither text nor a tool call")
        return self.verdict

    def _held(self) -> Verdict | None:
        if self._name is None:
            return None
        return call_verdict(self._name, "".join(self._args), self.offered)

    def _block(self, block: bytes) -> Verdict | None:
        ev = parse_block(block)
        if ev is None or ev.data == "[DONE]":
            return self._held() if ev is not None else None
        data = ev.json_object()
        if data is None:
            return None
        proto = self.protocol
        if proto == "anthropic":
            return self._anthropic(data)
        if proto == "openai_responses":
            return self._responses(data)
        if proto == "gemini":
            for name, args, text in _gemini_parts(data):
                if name is not None:
                    return call_verdict(name, args, self.offered)
                if _visible(text):
                    return USABLE
            return None
        return self._chat(data)

    def _anthropic(self, data: Mapping[str, Any]) -> Verdict | None:
        kind = data.get("type")
        if kind == "content_block_start":
            cb = data.get("content_block")
            if isinstance(cb, Mapping) and cb.get("type") == "tool_use":
                self._name, self._key = str(cb.get("name") or ""), data.get("index")
                inp = cb.get("input")
                if isinstance(inp, Mapping) and inp:  # a whole input given at the start
                    self._args = [orjson.dumps(inp).decode()]
            elif isinstance(cb, Mapping) and cb.get("type") == "text" and _visible(cb.get("text")):
                return USABLE
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if not isinstance(delta, Mapping):
                return None
            if delta.get("type") == "text_delta" and _visible(delta.get("text")):
                return USABLE
            if delta.get("type") == "input_json_delta" and self._name is not None:
                self._args.append(str(delta.get("partial_json") or ""))
        elif kind == "message_stop" or (kind == "content_block_stop" and data.get("index") == self._key):
            return self._held()
        return None

    def _responses(self, data: Mapping[str, Any]) -> Verdict | None:
        kind = data.get("type")
        if kind == "response.output_text.delta" and _visible(data.get("delta")):
            return USABLE
        item = data.get("item")
        if kind == "response.output_item.added" and isinstance(item, Mapping):
            if item.get("type") == "function_call":
                self._name = str(item.get("name") or "")
        elif (
            kind == "response.output_item.done"
            and isinstance(item, Mapping)
            and item.get("type") == "function_call"
        ):
            name, args = str(item.get("name") or ""), str(item.get("arguments") or "")
            return call_verdict(name, args, self.offered)
        return None

    def _chat(self, data: Mapping[str, Any]) -> Verdict | None:
        for choice in data.get("choices") or ():
            if not isinstance(choice, Mapping):
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                if _visible(delta.get("content")):
                    return USABLE
                for call in delta.get("tool_calls") or ():
                    if not isinstance(call, Mapping):
                        continue
                    key = call.get("index", 0)
                    if self._name is not None and key != self._key:
                        return self._held()  # the next call began: the first is complete
                    fn = call.get("function")
                    fn = fn if isinstance(fn, Mapping) else {}
                    if self._name is None:
                        self._name, self._key = str(fn.get("name") or ""), key
                    if fn.get("arguments"):
                        self._args.append(str(fn["arguments"]))
            if choice.get("finish_reason") and self._name is not None:
                return self._held()
        return None
