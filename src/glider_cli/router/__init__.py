"""The router: pure functions from a ChatRequest and a profile to a RouteDecision.

`Router(config).decide(request, sticky=None)` is the entry point (see `router.decide`).
"""

from __future__ import annotations

from glider_cli.router.compiled import CompiledRule
from glider_cli.router.decide import Router
from glider_cli.router.sticky_view import StickyView

__all__ = ["CompiledRule", "Router", "StickyView"]
