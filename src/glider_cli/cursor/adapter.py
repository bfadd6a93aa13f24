"""The Cursor door's adapter: Cursor's messages in, the engine's operations (`glider_cli.proxy.Engine`),
Cursor's frames out. The one module of `cursor/` that drives the engine.

- `open(chat, local_ok, what)`: the request placed in its turn family and decided by the router
  (`Engine.open`, the same core as every client's); its events (`TurnOpened`, `RouteDecided` with
  `client: cursor` and what the Cursor message was, `StickyBound`) recorded at once. `local_ok`
  false: the router's capability gate refuses the local side, saying why (Cursor runs follow-ons,
  summaries, titles and subagents itself: they need its tools and state). None when the router
  cannot decide (no rule; an explicit `/local` no local backend can take): then the request passes
  through to Cursor unrecorded. A non-turn request of a family held local (`/local`) keeps the
  family's local decision in its record, marked `served_by: origin`.
- `close(opened, served)`: the closing events (`FulfilledLocal` / `OriginPassthrough`, the family's
  bookkeeping) and `glider serve`'s line per request (`Engine.close`).
- `failed(opened, backend, exc, fallback)`: `UpstreamFailed` and `FallbackUsed` (to Cursor) for a
  local backend that failed before its first byte (`Engine.failed`).
- `local_text(opened, backend, text, usage)`: the local backend's answer to the person's text, as text
  pieces: the request (the text as one user message, in OpenAI Chat shape) sent through the engine's
  own call (`Engine.local_chat`: the pack of the text, up to N episodes of the same conversation and
  a short system part; model and translation to the backend's wire) and read back as it streams.
  Raises BackendError when the backend fails before answering.
- `local_chat(opened, backend, body, usage, tools=, tap=)`: one model call of an OpenAI Chat body (a
  local agent loop's step: packed by the engine with exactly the tools it offers), its text pieces as
  they stream and its tool calls fed to `tap`.
- `can_call_tools(backend)`, `tool_lists()` (`routing.tool_followup` as the server runs it now) and
  `tool_step(opened, data)` (the `ToolStepDecided` record) for the agent loop.
The cloud side for Cursor is Cursor itself: the outcome names the `origin` backend of the config, or
`cursor` when it has none.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from glider_cli.domain import ChatRequest
from glider_cli.errors import BackendError, GateRefused, GliderError
from glider_cli.protocol.reply_tap import ReplyTap
from glider_cli.protocol.sse import SSEDecoder
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy import Backend, Engine, Opened, Served
from glider_cli.store.eventlog.events import TOOL_STEP_DECIDED

CLIENT = "cursor"
_NOT_HERE = "Cursor runs this kind of request itself (it needs Cursor's tools and state)"


class CursorAdapter:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ decide

    def origin_name(self) -> str:
        for backend in self.engine.backends():
            if backend.kind == "origin":
                return backend.name
        return CLIENT

    def open(self, chat: ChatRequest, *, local_ok: bool, what: dict[str, Any]) -> Opened | None:
        def refuse(name: str | None) -> str | None:
            return _NOT_HERE

        try:
            return self.engine.open(
                chat, gate=None if local_ok else refuse, decided={"client": CLIENT, "cursor": what}
            )
        except GateRefused:
            if local_ok:
                return None
        except GliderError:
            return None
        # A family held local (a `/local` turn's follow-on) with no fallback backend: the decision stays
        # the family's, and the record says Cursor serves it all the same.
        held = {**what, "served_by": "origin", "note": _NOT_HERE}
        try:
            return self.engine.open(chat, decided={"client": CLIENT, "cursor": held})
        except GliderError:
            return None

    def local_backend(self, opened: Opened) -> Backend:
        return self.engine.choose("local", opened.decision.backend)

    def fallback_allowed(self, opened: Opened, backend: Backend) -> bool:
        rule = opened.decision.fallback
        explicit = rule if rule is not None else backend.fallback
        return explicit != "none" and not self.engine.local_only

    # ------------------------------------------------------------------ record

    def close(self, opened: Opened, served: Served) -> None:
        self.engine.close(opened, served, client=CLIENT)

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
        self.engine.failed(opened, backend, exc, to=self.origin_name() if fallback else None)

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
        sse = SSEDecoder()
        async for chunk in self.engine.local_chat(opened, backend, body, usage, tools=tools, tap=tap):
            for piece in _pieces(sse, chunk):
                yield piece

    def can_call_tools(self, backend: Backend) -> bool:
        """Unknown counts as yes (as the capability gate has it); `tools: false` or a probe's no: no."""
        return self.engine.can_call_tools(backend)

    def tool_lists(self) -> tuple[frozenset[str], frozenset[str]]:
        """`routing.tool_followup` as the server runs it now (a reload swaps it): allow, deny."""
        return self.engine.tool_lists

    def tool_step(self, opened: Opened | None, data: dict[str, Any]) -> None:
        """A tool step's allow/deny decision (`ToolStepDecided`): applied for a local turn, recorded
        only ("would have been") for a turn Cursor runs."""
        tid = opened.turn_id if opened is not None else None
        self.engine.emit(TOOL_STEP_DECIDED, {"client": CLIENT, **data}, tid)

    def model_of(self, opened: Opened, backend: Backend) -> str | None:
        return self.engine.model_of(opened, backend)

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
