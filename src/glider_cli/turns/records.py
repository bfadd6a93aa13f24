"""The records the turn-family index keeps (`turns.families`) and the `Placement` it returns.

- `Call`: one tool call a family's reply issued, who served that reply (side, backend, model; None
  until known), the prompt an Agent/Task call hands its subagent (capped, and the digest of the
  whole), its `subagent_type`, and whether it was answered.
- `Binding`: a sticky binding (`turns.sticky`) to `target` (`cloud`, or `local` with the explicit
  `rule` that opened the family); `live(now)` is true while `now <= bound_at + ttl`, or, once the
  parent run has ended, while `now <= ended_at + grace`.
- `Family`: one turn family (its turn id, session id, the credentials fingerprint of the client that
  opened it (memory only), times, opening message and what the person typed of it, the side that
  last served it, its calls and binding; `ahead` while only its title request has been seen).
- `Placement`: where one request went and why (`kind`, `turn_id`, `link`, `sent`: for a text the
  client sent on its own, `neutral` or the failure it reports (`turns.client_texts`), the calls
  it answers, the spawning call of a subagent and its `subagent_type`, the prompt a title quotes
  ahead of its turn).

Plain data: no clock, no I/O. `Call`, `Binding` and `Family` are owned by one index and change only
through their own methods (`Family.seen`, `opens`, `sent_to`, `bind`, `end_run`...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from glider_cli.store.eventlog.events import SIDE_REQUEST_KINDS
from glider_cli.turns.request_kinds import Kind
from glider_cli.values import Frozen


@dataclass(slots=True)
class Call:
    """One tool call a family's reply issued, and who served it (None until known)."""

    id: str
    name: str
    side: str | None = None
    backend: str | None = None
    model: str | None = None
    prompt: str = ""
    answered: bool = False
    digest: str = ""
    subagent_type: str | None = None

    def mark_answered(self) -> None:
        """A request answered this call."""
        self.answered = True


@dataclass(slots=True)
class Binding:
    """A sticky binding: the family stays on `target` (see `turns.sticky`)."""

    target: str
    bound_at: float
    ttl: float
    grace: float
    reason: str
    ended_at: float | None = None
    rule: str | None = None

    def live(self, now: float) -> bool:
        if now <= self.bound_at + self.ttl:
            return True
        return self.ended_at is not None and now <= self.ended_at + self.grace

    def end(self, now: float) -> None:
        """The parent run ended at `now`: the grace time starts."""
        self.ended_at = now


@dataclass(slots=True)
class Family:
    turn_id: str
    session_id: str | None
    opened_at: float
    last_seen: float
    ask: str = ""
    opening_len: int = 0
    side: str | None = None
    backend: str | None = None
    model: str | None = None
    calls: dict[str, Call] = field(default_factory=dict)
    open_calls: set[str] = field(default_factory=set)
    binding: Binding | None = None
    ended_at: float | None = None
    typed: str = ""  # what the person typed of `ask` (`families.prompt_text(ask)`), or of a title's quote
    creds: str | None = None
    ahead: bool = False
    # The rule that decided the turn's own (opening) request: the one an escalation reports.
    rule: str | None = None
    # Local replies in a row that stopped at the output-token limit (`turns.sticky`, "Off local";
    # rebuilt from the logged outcomes by `turns.rebuild`).
    local_limits: int = 0

    def seen(self, now: float) -> None:
        """A request of the family (or a logged event of it) arrived at `now`."""
        self.last_seen = now

    def opens(self, ask: str, typed: str, messages: int) -> None:
        """The new user message `ask` (`typed`: what the person typed of it; `messages`: how many the
        request carried) opens the turn; a family a title opened ahead of its turn is ahead no more."""
        self.ask, self.typed, self.opening_len, self.ahead = ask, typed, messages, False

    def sent_to(self, side: str | None, backend: str | None, model: str | None) -> None:
        """The side, backend and model the family's latest request was decided for or served by."""
        self.side, self.backend, self.model = side, backend, model

    def decided_by(self, rule: str | None) -> None:
        """The rule that decided the turn's own (opening) request."""
        self.rule = rule

    def bind(self, binding: Binding) -> None:
        """The family is bound anew (its run has not ended)."""
        self.binding, self.ended_at = binding, None

    def end_run(self, now: float) -> Binding | None:
        """The parent run ended at `now`: a live binding starts its grace time and is returned (None:
        no live binding)."""
        self.ended_at = now
        b = self.binding
        if b is None or not b.live(now):
            return None
        b.end(now)
        return b

    def replied(self, side: str, at_limit: bool, status: int) -> None:
        """One more answered reply of the turn itself: a local one at the limit extends the run, any
        other reply ends it, and an error reply (status 400 or over, passed through) leaves it: it
        answered nothing the run could go on from."""
        if 0 < status < 400:
            self.local_limits = self.local_limits + 1 if at_limit and side == "local" else 0


# The requests that ride along a turn without being one of its replies: a count, the title, a
# utility call, a summary. Their outcomes say which (`request_kind`), so that `turns.rebuild` passes
# them over as the running app does (the event log's own list: the turn views read it too).
SIDE_KINDS = SIDE_REQUEST_KINDS


class Placement(Frozen):
    """Where one request went: its family (turn id), what kind of request it is, and why."""

    kind: Kind
    turn_id: str | None
    session_id: str | None
    link: str
    answered: tuple[str, ...]
    tools: tuple[str, ...]
    parent_call: str | None
    subagent_type: str | None
    quoted: str | None
    sent: str | None

    def __init__(
        self,
        kind: Kind,
        turn_id: str | None,
        session_id: str | None,
        link: str,
        answered: tuple[str, ...] = (),
        tools: tuple[str, ...] = (),
        parent_call: str | None = None,
        subagent_type: str | None = None,
        quoted: str | None = None,
        sent: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.kind = kind
        s.turn_id = turn_id
        s.session_id = session_id
        s.link = link
        s.answered = answered
        s.tools = tools
        s.parent_call = parent_call
        s.subagent_type = subagent_type
        s.quoted = quoted
        s.sent = sent

    @property
    def new_turn(self) -> bool:
        return self.kind == "new_turn"

    @property
    def follow_on(self) -> bool:
        return self.kind != "new_turn"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind,
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "link": self.link,
            "answered": [*self.answered],  # lists, as `list()` makes them (without its call)
            "tools": [*self.tools],
            "parent_call": self.parent_call,
        }
        if self.subagent_type is not None:
            d["subagent_type"] = self.subagent_type
        if self.sent is not None:
            d["client_text"] = self.sent
        return d
