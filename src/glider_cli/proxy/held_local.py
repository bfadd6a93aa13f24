"""Where a request an explicit `/local` (or `/fast`) keeps on the machine may fall back.

An explicit local command is the person saying "not the cloud". The router names the explicit rule
that keeps a request local, for the command's own request and for its family (title, subagents,
continuations, compaction): `RouteDecision.held_local`. When the local backend cannot answer it —
a refused connection, a timeout, an error answer, an open breaker, a continuation taken off local
after replies that kept stopping at the limit — the ordinary fallback (`BackendRegistry.fallback_for`:
the rule's, the backend's, else local -> the default cloud backend) may go on to another local
backend, and to a cloud backend only when the rule itself names it as its `fallback`. Otherwise the
chain ends there and the client gets its protocol's error naming what failed (`proxy.failed`).

    cloud_barred(decision, current, nxt)  # True: `nxt` would take a held request to the cloud
    barred_note(decision)                 # why, as the client's error says it
"""

from __future__ import annotations

from glider_cli.backends.registry import Backend
from glider_cli.domain import RouteDecision

__all__ = ["barred_note", "cloud_barred"]


def cloud_barred(decision: RouteDecision, current: Backend, nxt: Backend | None) -> bool:
    """`nxt`, the fallback after `current`, would take a request held on the machine to the cloud
    without the holding rule's own `fallback` naming it."""
    if decision.held_local is None or nxt is None:
        return False
    return current.side == "local" and nxt.side != "local" and nxt.name != decision.fallback


def barred_note(decision: RouteDecision) -> str:
    """What the client's error adds when the chain stopped short of the cloud."""
    how = f"an explicit {decision.command}" if decision.command else "a turn an explicit command holds local"
    return (
        f"{how} (rule {decision.held_local}) is never sent to the cloud: no local backend could "
        "answer it (send it with /cloud, or give the rule a `fallback` backend)"
    )
