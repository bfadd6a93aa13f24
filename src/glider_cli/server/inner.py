"""`Inner`, `State`, `CursorSlot` and `Hooks`: the part of `create_app`'s app behind its layers (every
request that is not a model call), with the Starlette app built when the first of them arrives (issue 29's
cold start).

Contract:
- `State`: the app's state, attributes as Starlette's `State` (an attribute never set is an
  AttributeError); the Starlette app, once built, takes this object as its own `state`.
- `Inner(build, lifespan, state)`: an ASGI app that runs the lifespan itself, as Starlette's router
  runs one (`lifespan.startup.complete` / `.failed` with the traceback, then the shutdown's), with
  itself as the lifespan's `app`, and hands every other scope to `build()`'s Starlette app, built
  once, on the first of them.
- `CursorSlot`: the Cursor proxy the lifespan started (`service`, None until then), which `/healthz`
  describes.
- `Hooks(notice=, ready=, probed=, reloaded=)`: what the app's runner (`glider serve`) is told, given
  to `create_app` and kept in the state as `on_notice` (the Cursor proxy's one-off notices), `on_ready`
  (the lifespan started), `on_probed` (the first probe of the local backends is over) and
  `on_reloaded(outcome)` (a hot reload swapped a config in); None: not told.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from starlette.applications import Starlette

Lifespan = Callable[[Any], contextlib.AbstractAsyncContextManager[None]]


@dataclass(frozen=True)
class Hooks:
    """What the app's runner is told (see the module contract)."""

    notice: Callable[[str], None] | None = None
    ready: Callable[[], None] | None = None
    probed: Callable[[], None] | None = None
    reloaded: Callable[[Any], None] | None = None


class State:
    """The app's state (`proxy`, `registry`, `live`, `events`, `limits`, and the hooks as `on_<name>`),
    given at construction: attributes, as Starlette's `State`. The Starlette app, once built, has this
    one as its `state`, so a route's `request.app.state` is `GliderApp.state`."""

    def __init__(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only for an attribute never set (as Starlette's State: AttributeError, so getattr's default).
        raise AttributeError(f"'State' object has no attribute {name!r}")


class CursorSlot:
    """The Cursor proxy (`cursor.port`) once the lifespan started it, for `/healthz`; None before, and
    when there is none."""

    def __init__(self) -> None:
        self.service: Any = None

    def started(self, service: Any) -> None:
        self.service = service


class Inner:
    """What the layers hand every request that is not a model call: the Starlette app, built (and
    Starlette imported) when the first of them arrives. The lifespan is run here, as Starlette's
    router runs one (`Router.lifespan`), with this object as its `app` (its `state` is the app's)."""

    def __init__(self, build: Callable[[], Starlette], lifespan: Lifespan, state: State) -> None:
        self._build = build
        self._app: Starlette | None = None
        self.lifespan = lifespan
        self.state = state

    @property
    def starlette(self) -> Starlette:
        if self._app is None:
            self._app = self._build()
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        else:
            await self.starlette(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        started = False
        await receive()
        try:
            async with self.lifespan(self):
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()
        except BaseException:
            text = traceback.format_exc()
            kind = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": kind, "message": text})
            raise
        else:
            await send({"type": "lifespan.shutdown.complete"})
