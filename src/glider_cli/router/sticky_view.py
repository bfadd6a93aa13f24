"""What the router needs to know about turn-family stickiness (produced by the turn index elsewhere).

A bound view means the request belongs to a turn family that is held off the local model (after a
`/cloud` command or a cloud decision, for a TTL and a grace time). The router then refuses local for
every follow-on: a request whose most recent message is not new user text (a tool result, an
assistant or system continuation). `follow_on` overrides that test when the producer knows better.

`forced` names a side (and backend, model) the request must go to whatever the rules say — a tool
result returning to the side that issued its call, a denylisted tool following its parent — and
`family` is the turn index's placement record; the router puts both into the one decision it makes
(the trace's `sticky` line, `extra["family"]`).

`held_by` names the explicit rule (`/local`, `/fast`) whose local decision opened the family: the
request stays on the local side as that rule sends it, and only a capability gate can move it (to
the rule's `fallback`, else the router refuses it as it would the command itself). `quoted` is the
prompt a title request quotes ahead of its own turn: the explicit command in it (never a delegate
flag) gives the side the turn will take. `commands` is false for a request that carries none of
the person's own text (a title, a summary, count_tokens, a subagent): no command is read from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glider_cli.domain import ChatRequest
from glider_cli.values import Frozen


class Forced(Frozen):
    """The side (and backend, model) a request must go to, and why."""

    side: str
    backend: str | None
    model: str | None
    reason: str

    def __init__(self, side: str, backend: str | None, model: str | None, reason: str) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.side = side
        s.backend = backend
        s.model = model
        s.reason = reason


class StickyView(Frozen):
    bound: bool
    turn_id: str | None
    reason: str
    follow_on: bool | None
    forced: Forced | None
    family: Mapping[str, Any] | None
    held_by: str | None
    quoted: str | None
    commands: bool

    def __init__(
        self,
        bound: bool,
        turn_id: str | None = None,
        reason: str = "",
        follow_on: bool | None = None,
        forced: Forced | None = None,
        family: Mapping[str, Any] | None = None,
        held_by: str | None = None,
        quoted: str | None = None,
        commands: bool = True,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.bound = bound
        s.turn_id = turn_id
        s.reason = reason
        s.follow_on = follow_on
        s.forced = forced
        s.family = family
        s.held_by = held_by
        s.quoted = quoted
        s.commands = commands

    def is_follow_on(self, request: ChatRequest) -> bool:
        if self.follow_on is not None:
            return self.follow_on
        return bool(request.messages) and not request.is_new_user_message

    def describe(self) -> str:
        turn = f" to turn {self.turn_id}" if self.turn_id else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"sticky: bound{turn}{why}, a follow-on stays off the local model"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "bound": self.bound,
            "turn_id": self.turn_id,
            "reason": self.reason,
            "follow_on": self.follow_on,
        }
        if self.held_by is not None:
            d["held_by"] = self.held_by
        if not self.commands:
            d["commands"] = False
        return d
