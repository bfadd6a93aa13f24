"""`deferred(prefixes, build) -> list[Route]`: placeholders for a group of Starlette routes that is built
(and whose modules are imported) when a request first asks for one of them.

Contract:
- `build()` returns the group's routes; it is called once, on the first request that reaches one of
  the placeholders, never at start: `glider serve` answers its first model request without importing
  the context store, its worker, the dashboard's APIs (issue 29's cold start).
- Every path the group serves is one of `prefixes` or under one (`<prefix>/…`); a placeholder per
  prefix and one under it take every method there.
- On that first request the placeholders are replaced, in place in the app's route list, by the
  group's routes, and the request is routed again: from then on the group answers exactly as if it
  had been in the list from the start (its 405s, its 404s, the routes after it), through the app's
  own router and exception handlers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send


class _Group:
    """The placeholders' ASGI endpoint (a plain class: Starlette calls it as an ASGI app)."""

    def __init__(self, build: Callable[[], Sequence[BaseRoute]], prefixes: Sequence[str]) -> None:
        self._build: Callable[[], Sequence[BaseRoute]] | None = build
        # A placeholder per prefix and one under it, each routed to this group.
        self.placeholders: list[BaseRoute] = [
            Route(path, self) for p in prefixes for path in (p, p + "/{rest:path}")
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        router = scope["app"].router
        if self._build is not None:
            build, self._build = self._build, None
            built = list(build())
            routes = router.routes
            at = min(i for i, r in enumerate(routes) if any(r is p for p in self.placeholders))
            routes[:] = [r for r in routes if not any(r is p for p in self.placeholders)]
            routes[at:at] = built
        # Routed again from the top, without what the placeholder's match put in the scope.
        again = {k: v for k, v in scope.items() if k not in ("endpoint", "path_params")}
        await router(again, receive, send)


def deferred(prefixes: Sequence[str], build: Callable[[], Sequence[BaseRoute]]) -> list[BaseRoute]:
    return list(_Group(build, prefixes).placeholders)
