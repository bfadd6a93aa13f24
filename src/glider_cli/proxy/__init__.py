"""The request engine of `glider serve`: a model request read, routed, sent (with fallback), relayed and
recorded. No Starlette or uvicorn here: `server/` (the HTTP door) and `cursor.adapter` (the Cursor
door) drive it through this module only; nothing outside `proxy/` imports a submodule of it.

The engine's API, one line per operation (`engine = Engine(...)`: one per app, built by `server.app`):
    await engine.handle(protocol, scope, raw) -> Reply      an HTTP model request: parse, open, call, reply
    await engine.count_tokens(protocol, scope, raw) -> Reply  a token count, routed like a request
    engine.error(protocol, status, message) -> Reply        an error reply in the client's protocol
    engine.open(chat, body, gate=, decided=) -> Opened      open a turn for a parsed request; events recorded
    engine.choose(side, name) -> Backend                    the backend a decision names (else the default)
    engine.local_chat(opened, backend, body, usage, tools=, tap=)  call a local backend; its reply's chunks
    engine.failed(opened, backend, exc, to=)                a backend failed before its first byte
    engine.close(opened, served, client=)                   close the turn with what served it; observer told
    engine.emit(kind, data, turn_id)                        one event of a door's own about a turn
What a door reads: `engine.local_only`, `engine.tool_lists`, `engine.backends()`,
`engine.can_call_tools(backend)`, `engine.model_of(opened, backend)`; what the app reads: `engine.local`
(`LocalPath`), `engine.breakers`, `engine.turns` (a reload swaps its settings), `engine.delegation`.

Value types: `Reply` and `Scope` (what the HTTP door reads and sends), `Opened` and `Served` (a turn as
opened, what served it), `Backend` (what `choose` gives), `Observed` (what the observers are told of a
request, with its `Call`s: one per attempt), `Inbound` (a request as read), `Observer` /
`RefusedObserver`, `Decider` (the router seam), `Parser`. Assembly: `Engine`, `Delegation`, `LocalPath`,
`app_breakers`. The strategies (`proxy.strategies`) are imported when a strategy first runs, not here.
"""

from __future__ import annotations

from glider_cli.backends.registry import Backend
from glider_cli.proxy.calls import Call, Inbound, Observed
from glider_cli.proxy.delegation import Delegation
from glider_cli.proxy.engine import Decider, Engine, Parser, app_breakers
from glider_cli.proxy.ledger import Observer, RefusedObserver
from glider_cli.proxy.local_path import LocalPath
from glider_cli.proxy.reply import Reply, Scope
from glider_cli.turns.lifecycle import Opened, Served

__all__ = [
    "Backend",
    "Call",
    "Decider",
    "Delegation",
    "Engine",
    "Inbound",
    "LocalPath",
    "Observed",
    "Observer",
    "Opened",
    "Parser",
    "RefusedObserver",
    "Reply",
    "Scope",
    "Served",
    "app_breakers",
]
