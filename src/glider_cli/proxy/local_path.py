"""What `glider serve` knows about its local backends, and the capability gate it builds from it.

Contract:
- `LocalPath(registry, settings)` holds one `backends.probe.Capability` per local backend: what the
  server said (`probe`) with the config's `context_window` / `tools` laid over it. Until probed, the
  config's values alone (`source: "not probed"`, or "config"). `health()` is what `/healthz` shows.
- The first probe runs beside the server: the lifespan calls `start_probe(timeout)`, which starts it
  as a task and returns at once, so `glider serve` listens (and `/healthz` answers) while a slow
  backend is asked. `probing` is true until that probe is over (answered, failed, timed out or
  cancelled at shutdown); a proxied request that comes meanwhile awaits `ready()` before its gate is
  built, so it is decided with the probed capabilities (its wait is bounded by the probe's timeout).
  Once the probe is over a request pays one attribute test (`probing`).
  Each good probe is also kept in `cache` (`backends.probe_cache`: `$GLIDER_HOME/run/probes.json`),
  so `glider lint` knows what a backend served when it last answered.
- A backend that failed (`failed(name, why)`, called by the proxy on a refused connection, a
  timeout, a 5xx) is marked down with the reason; `watch()` re-probes the backends marked down every
  `interval` seconds and marks them up again when they answer, so a backend that comes back is
  read afresh (its models, its window). A reply from a backend marks it up (`answered`). Each
  backend a probe reached is told to `reached` (given at construction: the app's circuit breakers,
  `Breakers.probed`: a probe that answers after the cool-down closes an open one).
- `gate(chat)` is the router's capability gate for one request (`router.decide.Gate`): for the
  local backend a rule would use, why it cannot take the request, or None. It refuses when the turn
  in progress uses tools (its messages since the latest real user message carry tool calls or
  results) and the backend cannot call tools, and when what would be sent (`size(backend)`:
  the request's token estimate, or the pack's when the local side gets a pack) leaves the backend's
  window too little output (`backends.output_budget`: the client's `max_tokens` is a ceiling, cut
  to what the window leaves, but never below 1,024 tokens or the ceiling), and when the request asks
  for structured output (`protocol.structured`) from a backend that cannot give it
  (`structured_output: false`). A backend that takes the request with its `max_tokens` cut answers
  a `router.decide.GateNote` saying so (the trace carries it). `output(name, chat, tokens)` is that
  budget, by which `proxy.outgoing` sends the cut `max_tokens`. `dialect(name)`: the structured-output
  dialect the probe found, by which `server.outbound` writes a JSON Schema request for the server.
  An unknown window or tool support never refuses: unknown is not "too small".
- `gates`: whether any local backend has a limit the gate checks (a known window, no tools, no
  structured output), known each time a probe changes what they are; while it is false no request
  builds a gate (`Engine` asks this first), as `gate` would build none.
- `window(name)`: the context window Ollama is told to use (`options.num_ctx`), or None.
- `packed(protocol, body, chat, name)`: what a local backend receives (`turns.pack`) when
  `transform.local_context` is on — the current turn whole, a short system prompt, the tools the
  backend can take (none when it cannot call tools) and up to `transform.local_episode_count`
  episodes of the same session (`episodes`: from the live writer's ring; the turn in progress left
  out). Made once per request and backend tool support (`cache`), so the gate's size and the body
  sent are the same pack. None when the setting is off. `step_pack(chat, body, tools)`: the pack of
  an OpenAI Chat body a door built (a Cursor agent loop's step): the turn whole, the episodes, a short
  system part and exactly `tools`. `calls_tools(name)`: whether a backend can call tools (unknown: yes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from glider_cli.backends.output_budget import OutputBudget, output_budget
from glider_cli.backends.probe import Capability, merge, probe_all
from glider_cli.backends.registry import Backend, BackendRegistry
from glider_cli.config.settings import Settings
from glider_cli.domain import ChatRequest
from glider_cli.router.decide import GateNote
from glider_cli.store.eventlog.events import TURN_OPENED
from glider_cli.turns.pack import PACKABLE, Packed, pack
from glider_cli.values import replace

__all__ = ["LocalPath", "turn_uses_tools"]

Size = Callable[[str], int]
_log = logging.getLogger("uvicorn.error")  # where uvicorn reports failures of the app it runs


def turn_uses_tools(chat: ChatRequest) -> bool:
    """The turn in progress (from the latest real user message on) has tool calls or results."""
    for m in reversed(chat.messages):
        if m.tool_calls or m.tool_results:
            return True
        if m.role == "user" and m.content.strip():
            return False
    return False


class LocalPath:
    """See the module contract. One per app; used from the event loop only."""

    def __init__(
        self,
        registry: BackendRegistry,
        settings: Settings,
        recent: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
        cache: Path | None = None,
        reached: Callable[[str], None] | None = None,
    ) -> None:
        self.registry = registry
        self.cache = cache
        # Told of each backend a probe reached (the app gives its circuit breakers: `backends.breaker`).
        self.reached = reached
        self.settings = settings
        self._recent = recent
        self._local: list[Backend] = [
            registry.get(n) for n in registry.names() if registry.get(n).side == "local"
        ]
        self.caps: dict[str, Capability] = {
            b.name: self._merged(Capability(b.name, source="not probed")) for b in self._local
        }
        # Whether any local backend has a limit the gate checks (`gates`): known each time the caps change.
        self.gates = self._gates()
        # True while the first probe (`start_probe`) is in flight: the request path's only test.
        self.probing = False
        self._first: asyncio.Task[Any] | None = None

    def _gates(self) -> bool:
        return any(
            c.context_window is not None or c.tools is False or c.structured == "none"
            for c in self.caps.values()
        )

    def _merged(self, cap: Capability) -> Capability:
        bs = self.settings.backends.get(cap.backend)
        if bs is None:
            return cap
        return merge(cap, bs.context_window, bs.tools, bs.structured_output)

    # ------------------------------------------------------------------------------ probing

    async def probe(
        self, names: Iterable[str] | None = None, *, timeout: float = 2.0
    ) -> dict[str, Capability]:
        wanted = set(names) if names is not None else None
        backends = [b for b in self._local if wanted is None or b.name in wanted]
        if not backends:
            return {}
        found = await probe_all(backends, timeout=timeout)
        for name, cap in found.items():
            self.caps[name] = self._merged(cap)
            if cap.reachable and self.reached is not None:
                self.reached(name)
        self.gates = self._gates()
        if self.cache is not None:
            from glider_cli.backends import probe_cache

            await asyncio.to_thread(probe_cache.remember, self.cache, backends, found)
        return {n: self.caps[n] for n in found}

    def start_probe(self, timeout: float = 2.0) -> asyncio.Task[Any]:
        """Start the first probe of every local backend as a task and return it without waiting:
        `probing` is true until it is over, however it ends (cancel the task to stop it)."""
        self.probing = True
        first = asyncio.get_running_loop().create_task(self.probe(timeout=timeout))
        first.add_done_callback(self._probed)
        self._first = first
        return first

    def _probed(self, first: asyncio.Task[Any]) -> None:
        self.probing = False
        # A backend that cannot be reached is a Capability, not an exception: one raised here is a
        # fault of the probe itself. It is reported once, where uvicorn reports the app's failures,
        # and the backends stay as they were (not probed); the server goes on.
        if not first.cancelled() and (exc := first.exception()) is not None:
            _log.error("the first probe of the local backends failed", exc_info=exc)

    async def ready(self) -> None:
        """Wait until the first probe is over. A caller cancelled while it waits leaves the probe
        running, and a probe that failed or was cancelled does not raise here."""
        first = self._first
        if first is not None and not first.done():
            await asyncio.wait((first,))

    async def watch(self, interval: float = 15.0) -> None:
        """Re-probe the backends marked down until cancelled."""
        while True:
            await asyncio.sleep(interval)
            down = [n for n, c in self.caps.items() if c.reachable is False]
            if down:
                await self.probe(down)

    def failed(self, name: str, why: str) -> None:
        cap = self.caps.get(name)
        if cap is not None:
            self.caps[name] = replace(cap, reachable=False, error=why)

    def answered(self, name: str) -> None:
        cap = self.caps.get(name)
        if cap is not None and cap.reachable is not True:
            self.caps[name] = replace(cap, reachable=True, error=None)

    def health(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.caps.values()]

    def window(self, name: str) -> int | None:
        cap = self.caps.get(name)
        return cap.context_window if cap is not None else None

    def dialect(self, name: str) -> str | None:
        """The structured-output dialect of a local backend (`protocol.structured`), or None: unknown."""
        cap = self.caps.get(name)
        return cap.structured if cap is not None else None

    # ------------------------------------------------------------------------------ the pack

    def episodes(self, chat: ChatRequest) -> list[str]:
        """Short summaries of this session's earlier turns, oldest first (at most the configured count)."""
        n = self.settings.transform.local_episode_count
        if n <= 0 or not chat.session_id or self._recent is None:
            return []
        from glider_cli.store.views.episodes import build

        events = list(self._recent())
        ask = chat.last_user_text
        turns = set()
        for e in events:
            data = e.get("data") or {}
            same = e.get("type") == TURN_OPENED and data.get("session_id") == chat.session_id
            if same and data.get("ask") != ask:  # the turn in progress is not an earlier episode
                turns.add(e.get("turn_id"))
        if not turns:
            return []
        return [ep.summary for ep in build(e for e in events if e.get("turn_id") in turns)][-n:]

    def packed(
        self, protocol: str, body: Mapping[str, Any], chat: ChatRequest, name: str, cache: dict[bool, Packed]
    ) -> Packed | None:
        transform = self.settings.transform
        if not transform.local_context or protocol not in PACKABLE:
            return None
        cap = self.caps.get(name)
        tools = cap is None or cap.tools is not False
        found = cache.get(tools)
        if found is None:
            # Sized from the request already parsed (`chat`): only the pack itself is parsed.
            found = pack(protocol, body, transform, episodes=self.episodes(chat), tools=tools, request=chat)
            cache[tools] = found
        return found

    def step_pack(
        self, chat: ChatRequest, body: Mapping[str, Any], tools: tuple[str, ...]
    ) -> dict[str, Any] | None:
        """The pack of an OpenAI Chat `body` a door built for `chat`'s turn (see the module contract);
        None when `transform.local_context` is off."""
        if not self.settings.transform.local_context:
            return None
        transform = replace(self.settings.transform, local_tools=tools)
        return dict(pack("openai_chat", body, transform, episodes=self.episodes(chat), tools=True).body)

    def calls_tools(self, name: str) -> bool:
        """Whether backend `name` can call tools: unknown counts as yes (as the gate has it)."""
        cap = self.caps.get(name)
        return cap is None or cap.tools is not False

    def pack_tokens(self, name: str, cache: dict[bool, Packed]) -> int | None:
        """The estimated tokens of the pack `packed` made for backend `name` (None: it made none)."""
        cap = self.caps.get(name)
        found = cache.get(cap is None or cap.tools is not False)
        return found.report.tokens_after if found is not None else None

    # ------------------------------------------------------------------------------ the gate

    def gate(
        self, chat: ChatRequest, size: Size | None = None, *, structured: bool = False
    ) -> Callable[[str | None], str | None] | None:
        """The gate for this request (`structured`: it asks for a reply to a JSON Schema); None when no
        local backend has a known limit to check (never one when `gates` is false)."""
        limited = (c.context_window is not None or c.tools is False for c in self.caps.values())
        if not any(limited) and not (structured and any(c.structured == "none" for c in self.caps.values())):
            return None
        uses_tools = turn_uses_tools(chat)

        def check(name: str | None) -> str | None:
            cap = self.caps.get(name) if name else None
            if cap is None:
                return None
            if uses_tools and cap.tools is False:
                return f"the turn is using tools and {cap.backend} cannot call tools"
            if structured and cap.structured == "none":
                why = "cannot constrain its output to a JSON Schema (structured_output: false)"
                return f"the request asks for structured output and {cap.backend} {why}"
            tokens = size(cap.backend) if size is not None else chat.estimated_tokens
            what = f"pack {tokens:,} tokens" if size is not None else f"request {tokens:,} tokens"
            budget = self.output(cap.backend, chat, tokens, what=what)
            if budget is None:
                return None
            if budget.refused is not None:
                return budget.refused
            note = budget.note
            return GateNote(note) if note is not None else None

        return check

    def output(
        self, name: str, chat: ChatRequest, tokens: int, *, what: str | None = None
    ) -> OutputBudget | None:
        """The output a request of `tokens` (the pack's, or the request's) gets from local backend
        `name` (`backends.output_budget`); None when its window is unknown."""
        cap = self.caps.get(name)
        window = cap.context_window if cap is not None else None
        if window is None:
            return None
        bs = self.settings.backends.get(name)
        return output_budget(window, tokens, chat.max_tokens, bs.max_tokens if bs else None, what=what)
