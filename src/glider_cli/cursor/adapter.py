"""The adapter between the Cursor proxy and Glider's request pipeline (`proxy.engine.Proxy`): the one
module here that reaches into the engine, the turns lifecycle and the backends.

- `open(chat, local_ok)`: the request placed in its turn family and decided by the router
  (`turns.lifecycle.Turns.open`, the same core as every client's); its events (`TurnOpened`,
  `RouteDecided` with `client: cursor` and what the Cursor message was, `StickyBound`) emitted at
  once. `local_ok` false: the router's capability gate refuses the local side, saying why (Cursor
  runs follow-ons, summaries, titles and subagents itself: they need its tools and state). None when
  the router cannot decide (no rule; an explicit `/local` no local backend can take): then the
  request passes through to Cursor unrecorded. A non-turn request of a family held local (`/local`)
  keeps the family's local decision in its record, marked `served_by: origin`.
- `close(opened, served)`: the closing events (`FulfilledLocal` / `OriginPassthrough`, the family's
  bookkeeping) and `glider serve`'s line per request (`Dispatch.observer`).
- `failed(opened, backend, message)`: `UpstreamFailed` and `FallbackUsed` (to Cursor) for a local
  backend that failed before its first byte.
- `local_text(opened, chat, text)`: the local backend's answer to the person's text, as text pieces:
  the pack (`proxy.local_path`: the text, up to N episodes of the same conversation, a short system
  part) in OpenAI Chat shape, sent through the engine's own call (`Dispatch.call`: model, pack and
  translation to the backend's wire) and read back as it streams. Raises BackendError when the
  backend fails before answering.
- `local_chat(opened, backend, body, usage, tools=, tap=)`: one model call of an OpenAI Chat body (a
  local agent loop's step: packed here with exactly the tools it offers, the episodes and a short
  system part), its text pieces as they stream and its tool calls fed to `tap`.
- `can_call_tools(backend)`, `tool_lists()` (`routing.tool_followup` as the server runs it now) and
  `tool_step(opened, data)` (the `ToolStepDecided` record) for the agent loop.
The cloud side for Cursor is Cursor itself: the outcome names the `origin` backend of the config, or
`cursor` when it has none.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from glider_cli.backends.registry import Backend
from glider_cli.domain import ChatRequest, Deferred
from glider_cli.errors import BackendError, GateRefused, GliderError
from glider_cli.protocol.reply_tap import ReplyTap
from glider_cli.protocol.sse import SSEDecoder
from glider_cli.protocol.token_counts import Usage
from glider_cli.protocol.translate_stream import stream_converter
from glider_cli.proxy.calls import Inbound, Job, failure_record
from glider_cli.proxy.engine import Proxy
from glider_cli.store.eventlog.events import (
    FALLBACK_USED,
    ROUTE_DECIDED,
    TOOL_STEP_DECIDED,
    UPSTREAM_FAILED,
)
from glider_cli.turns.lifecycle import Opened, Served
from glider_cli.values import replace

CLIENT = "cursor"
_NOT_HERE = "Cursor runs this kind of request itself (it needs Cursor's tools and state)"


class CursorAdapter:
    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    # ------------------------------------------------------------------ decide

    def origin_name(self) -> str:
        reg = self.proxy.registry
        for name in reg.names():
            if reg.get(name).kind == "origin":
                return name
        return CLIENT

    def open(self, chat: ChatRequest, *, local_ok: bool, what: dict[str, Any]) -> Opened | None:
        turns = self.proxy.turns

        def refuse(name: str | None) -> str | None:
            return _NOT_HERE

        try:
            opened = turns.open(chat, None, gate=None if local_ok else refuse)
        except GateRefused:
            if local_ok:
                return None
            # A family held local (a `/local` turn's follow-on) with no fallback backend: the decision
            # stays the family's, and the record says Cursor serves it all the same.
            try:
                opened = turns.open(chat, None)
            except GliderError:
                return None
            what = {**what, "served_by": "origin", "note": _NOT_HERE}
        except GliderError:
            return None
        decision = opened.decision
        for kind, data, tid in opened.events:
            if kind == ROUTE_DECIDED:
                data = Deferred(lambda: {**decision.to_record(), "client": CLIENT, "cursor": what})
            self.proxy.sink.emit(kind, data, turn_id=tid)
        return opened

    def local_backend(self, opened: Opened) -> Backend:
        return self.proxy.registry.choose("local", opened.decision.backend)

    def fallback_allowed(self, opened: Opened, backend: Backend) -> bool:
        rule = opened.decision.fallback
        explicit = rule if rule is not None else backend.fallback
        return explicit != "none" and not self.proxy.turns.local_only

    # ------------------------------------------------------------------ record

    def close(self, opened: Opened, served: Served) -> None:
        for kind, data, tid in self.proxy.turns.close(opened, served):
            self.proxy.dispatch.closing.emit(kind, data, turn_id=tid)
        observer = self.proxy.dispatch.observer
        if observer is not None:
            inb = Inbound(CLIENT, b"", {}, [], "", opened.chat)
            try:
                observer(Job(inb, opened), served)
            except Exception:
                pass

    def served_origin(
        self, opened: Opened, status: int, ms: float, complete: bool, fallback_from: str | None = None
    ) -> Served:
        model = opened.chat.model or None
        return Served(
            self.origin_name(),
            "cloud",
            model,
            status,
            ms=round(ms, 1),
            complete=complete,
            answered=status < 400,
            fallback_from=fallback_from,
        )

    def served_local(
        self,
        opened: Opened,
        usage: Usage,
        status: int,
        ms: float,
        *,
        complete: bool,
        answered: bool,
        disconnected: bool = False,
        end: str | None = None,
    ) -> Served:
        """What a run answered locally: its backend and model, the tokens its `usage` counted."""
        backend = self.local_backend(opened)
        return Served(
            backend.name,
            "local",
            self.model_of(opened, backend),
            status,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            ms=round(ms, 1),
            complete=complete,
            answered=answered,
            disconnected=disconnected,
            end=end,
        )

    def failed(self, opened: Opened, backend: Backend, exc: BackendError, fallback: bool) -> None:
        sink = self.proxy.sink
        sink.emit(UPSTREAM_FAILED, failure_record(backend, exc, "before_first_byte"), turn_id=opened.turn_id)
        if self.proxy.local is not None:
            self.proxy.local.failed(backend.name, exc.message)
        if fallback:
            data = {"from": backend.name, "to": self.origin_name(), "reason": exc.message}
            sink.emit(FALLBACK_USED, data, turn_id=opened.turn_id)

    # ------------------------------------------------------------------ answer locally

    async def local_text(
        self, opened: Opened, backend: Backend, text: str, usage: Usage
    ) -> AsyncIterator[str]:
        """Text pieces of the local answer (see the module contract); `usage` is filled as it streams."""
        body: dict[str, Any] = {"model": "", "stream": True, "messages": [{"role": "user", "content": text}]}
        async for piece in self.local_chat(opened, backend, body, usage):
            yield piece

    async def local_chat(
        self,
        opened: Opened,
        backend: Backend,
        body: dict[str, Any],
        usage: Usage,
        *,
        tools: tuple[str, ...] = (),
        tap: ReplyTap | None = None,
    ) -> AsyncIterator[str]:
        """One model call of an OpenAI Chat `body` (a local agent loop's step when `tools` names the
        tools it offers: the pack keeps exactly those); text pieces as they stream, the reply's tool
        calls fed to `tap`. Raises BackendError when the backend fails before answering."""
        proxy = self.proxy
        chat = replace(opened.chat, model="")
        packed = self._packed(opened, body, tools) if tools else None
        sent = packed if packed is not None else body
        inb = Inbound("openai_chat", orjson.dumps(sent), sent, [], "", chat, "/v1/chat/completions")
        inb.pack = not tools
        call = proxy.dispatch.call(inb, opened.decision, backend)
        resp = await proxy.dispatch.send(call)
        if resp.status >= 400:
            data = await resp.read()
            await resp.aclose()
            raise BackendError(f"local backend {backend.name} answered {resp.status}: {data[:200]!r}")
        convert = (
            None
            if call.passthrough
            else stream_converter("openai_chat", backend.wire, model=call.model or "", body=sent)
        )
        sse = SSEDecoder()
        try:
            async for chunk in resp.aiter_bytes():
                usage.feed(chunk)
                out = chunk if convert is None else convert.feed(chunk)
                if tap is not None:
                    tap.feed(out)
                for piece in _pieces(sse, out):
                    yield piece
            if convert is not None:
                tail = convert.close()
                if tap is not None:
                    tap.feed(tail)
                for piece in _pieces(sse, tail):
                    yield piece
                if convert.failure is not None:
                    raise BackendError(f"local backend {backend.name} failed: {convert.failure}")
        finally:
            await resp.aclose()
        if proxy.local is not None:
            proxy.local.answered(backend.name)

    def _packed(self, opened: Opened, body: dict[str, Any], tools: tuple[str, ...]) -> dict[str, Any] | None:
        """The pack of a loop's step (the turn whole, episodes, a short system part, exactly `tools`)."""
        local = self.proxy.local
        if local is None or not local.settings.transform.local_context:
            return None
        from glider_cli.turns.pack import pack

        transform = replace(local.settings.transform, local_tools=tools)
        return dict(
            pack("openai_chat", body, transform, episodes=local.episodes(opened.chat), tools=True).body
        )

    def can_call_tools(self, backend: Backend) -> bool:
        """Unknown counts as yes (as the capability gate has it); `tools: false` or a probe's no: no."""
        local = self.proxy.local
        cap = local.caps.get(backend.name) if local is not None else None
        return cap is None or cap.tools is not False

    def tool_lists(self) -> tuple[frozenset[str], frozenset[str]]:
        """`routing.tool_followup` as the server runs it now (a reload swaps it): allow, deny."""
        return self.proxy.turns.tool_lists

    def tool_step(self, opened: Opened | None, data: dict[str, Any]) -> None:
        """A tool step's allow/deny decision (`ToolStepDecided`): applied for a local turn, recorded
        only ("would have been") for a turn Cursor runs."""
        tid = opened.turn_id if opened is not None else None
        self.proxy.sink.emit(TOOL_STEP_DECIDED, {"client": CLIENT, **data}, turn_id=tid)

    def model_of(self, opened: Opened, backend: Backend) -> str | None:
        from glider_cli.backends.registry import model_for

        d = opened.decision
        return model_for(backend, d.backend, d.model, d.adapter, "") or None

    @staticmethod
    def now() -> float:
        return time.perf_counter()


def _pieces(sse: SSEDecoder, data: bytes) -> list[str]:
    out: list[str] = []
    for ev in sse.feed(data):
        obj = ev.json_object()
        if obj is None:
            continue
        for choice in obj.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            piece = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(piece, str) and piece:
                out.append(piece)
    return out
