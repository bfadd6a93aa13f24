"""The records a turn opens with, apart from `turns.lifecycle` so each module stays small.

- `opened_record(chat)`: a `TurnOpened` event's data (what the person asked, the session, the client,
  how many messages, and the turn keys `turns.turn_keys.opening` reads).
- `refusal_events(chat, plan, exc)`: the events that record a request the capability gate refused
  (`TurnOpened` for a new turn, `RouteDecided` with `refused`, and the local outcome with status 400
  and `outcome: refused`), which `GateRefused` carries for the caller to emit.
"""

from __future__ import annotations

from typing import Any

from glider_cli.domain import ChatRequest
from glider_cli.errors import GateRefused
from glider_cli.store.eventlog.events import FULFILLED_LOCAL, ROUTE_DECIDED, SIDE_REQUEST_KINDS, TURN_OPENED
from glider_cli.turns import turn_keys
from glider_cli.turns.sticky import Events, StickyPlan


def refusal_events(chat: ChatRequest, plan: StickyPlan, exc: GateRefused) -> Events:
    """What a request the capability gate refused leaves in the log: its `TurnOpened` (a new turn),
    a `RouteDecided` with `refused` (the gate's message), and its outcome (`FulfilledLocal`, status
    400, `outcome: refused`): recorded like any other request, never bound, never sent anywhere."""
    turn_id = plan.turn_id
    events: Events = []
    if plan.placement.new_turn:
        events.append((TURN_OPENED, opened_record(chat), turn_id))
    rule = exc.rule or "gate"
    decided: dict[str, Any] = {
        "target": "local",
        "rule": rule,
        "priority": None,
        "backend": exc.backend,
        "model": None,
        "strategy": "single",
        "delegate": None,
        "refused": exc.message,
        "request": {"estimated_tokens": chat.estimated_tokens, "has_tools": chat.has_tools},
        "trace": [{"rule": rule, "priority": None, "matched": True, "reason": f"refused: {exc.message}"}],
        "family": plan.placement.to_dict(),
    }
    events.append((ROUTE_DECIDED, decided, turn_id))
    # No backend answered (none was asked): the refusal is not held against the backend's health.
    outcome: dict[str, Any] = {"backend": None, "model": None, "status": 400, "ms": 0.0, "complete": False}
    outcome.update(outcome="refused", error=exc.message)
    if plan.placement.kind in SIDE_REQUEST_KINDS:
        outcome["request_kind"] = plan.placement.kind  # not one of the turn's replies
    events.append((FULFILLED_LOCAL, outcome, turn_id))
    return events


def opened_record(chat: ChatRequest) -> dict[str, Any]:
    data: dict[str, Any] = {"ask": chat.last_user_text, "session_id": chat.session_id}
    data.update(client=chat.protocol, messages=len(chat.messages))
    data.update(turn_keys.opening(chat))
    return data
