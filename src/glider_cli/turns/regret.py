"""The local "regret" signal: traces a locally served turn leaves when its answer was not good enough.

`RegretWatch` is kept by `turns.lifecycle.Turns` (one per app or replay; not thread-safe, no I/O, the
clock injected). It follows the turns that were served locally (at least one `FulfilledLocal`) and
returns `LocalRegret` events: (type, data, turn_id) with the regretted turn's id and

    data = {"kind": K, "later_turn": <turn id or None>, "evidence": <what was seen>,
            "rule", "backend", "model"}        # the local answer's rule, backend and model

The kinds, each conservative (a false regret is worse than a missed one: every threshold errs
towards saying nothing):
- `repeat_cloud`: the next real user message of the same session (a new turn) repeats the local
  turn's request — the person's words (`store.turn_keys.user_words`, commands and case set aside)
  are at least `SIMILAR` (rapidfuzz ratio, 0-100) alike and at least `MIN_CHARS` long — with `/cloud`
  or `/heavy`, within `CLOUD_WINDOW` seconds of the local answer. The person asked again elsewhere.
- `repeat_soon`: the same repeat without a command, at least `SIMILAR_SOON` alike, within
  `SOON_WINDOW` seconds of the local answer (asked again at once: the answer did not do).
- `interrupted`: the client left a local stream before its end (a disconnect: Esc in Claude Code)
  and the next real user message of the session repeats the request (at least `SIMILAR` alike,
  within `CLOUD_WINDOW` seconds), with or without a command.
- `local_error`: a local tool loop ended in an error the model could not recover from: the local
  stream failed mid-way (`evidence` "mid_stream"), a tool call it issued had arguments that are not
  a JSON object ("tool_call_parse"), or a later request of the same family was refused by the
  capability gate ("capability_gate": the local backend could not take the loop on). `later_turn`
  is None: the evidence is in the turn itself.
- `escalated`: the turn's local answer could not be used and another backend answered it (`evidence`
  the reason: `bad_tool_name`, `bad_tool_args`, `empty_reply`, or `client_failure:<which>` when the
  client said so; `proxy.escalate`, `turns.sticky`). The rule that sent it local is the one regretted.
Only the next real user message of a session is compared with the session's last turn (a message
after another turn is not a repeat of the one before it); a turn gets at most one event per kind.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from glider_cli.store.eventlog.events import LOCAL_REGRET as LOCAL_REGRET_EVENT
from glider_cli.turns.turn_keys import user_words
from glider_cli.values import lazy_pattern

__all__ = ["LOCAL_REGRET", "RegretWatch", "similarity"]

LOCAL_REGRET = LOCAL_REGRET_EVENT
SIMILAR = 85.0
SIMILAR_SOON = 90.0
MIN_CHARS = 12
CLOUD_WINDOW = 1800.0
SOON_WINDOW = 120.0
CLOUD_COMMANDS = ("/cloud", "/heavy")
_COMMAND = lazy_pattern(r"(?<!\S)/(cloud|heavy|local|fast)\b", re.IGNORECASE)
_SPACE = lazy_pattern(r"\s+")

Event = tuple[str, dict[str, Any], str | None]


def _norm(text: str) -> tuple[str, bool]:
    """The person's words (lower case, commands out, spaces collapsed); whether /cloud or /heavy was there."""
    words = user_words(text)
    cloud = any(m.group(1).lower() in ("cloud", "heavy") for m in _COMMAND.finditer(words))
    return _SPACE.sub(" ", _COMMAND.sub(" ", words)).strip().lower(), cloud


def similarity(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    return float(fuzz.ratio(a, b))


_NO_KINDS: frozenset[str] = frozenset()


class _Turn:
    __slots__ = ("backend", "cut", "ended", "kinds", "local", "model", "rule", "text", "turn", "words")

    def __init__(self, turn: str, text: str, words: str | None = None) -> None:
        self.turn = turn
        self.text = text  # the request's text; its words (`ask`) are made when a later turn compares
        self.words = words
        self.local = False  # a local answer served it
        self.ended: float | None = None  # when its last local answer ended
        self.cut = False  # the client left a local stream before its end
        self.rule: str | None = None
        self.backend: str | None = None
        self.model: str | None = None
        self.kinds: frozenset[str] = _NO_KINDS  # the regret kinds emitted for it (most turns: none)

    def answered_locally(
        self, now: float, rule: str | None, backend: str | None, model: str | None, disconnected: bool
    ) -> None:
        """A local answer of the turn ended at `now` (the client left it before its end: `disconnected`)."""
        self.local = True
        self.ended = now
        self.rule, self.backend, self.model = rule, backend, model
        self.cut = self.cut or disconnected

    def first_of(self, kind: str) -> bool:
        """Whether a regret of `kind` is new for this turn (each kind is emitted once); notes it."""
        if kind in self.kinds:
            return False
        self.kinds = self.kinds | {kind}
        return True

    def charge(self, rule: str | None, backend: str | None, model: str | None) -> None:
        """The rule (and backend, model) a regret is charged to, unless a local answer named one."""
        if self.rule is None:
            self.rule, self.backend, self.model = rule, backend, model

    @property
    def ask(self) -> str:
        """The person's words of the request (`_norm`), made on first use."""
        if self.words is None:
            self.words = _norm(self.text)[0]
        return self.words


class RegretWatch:
    """See the module contract."""

    def __init__(self, max_turns: int = 4096) -> None:
        self.max_turns = max_turns
        self._turns: OrderedDict[str, _Turn] = OrderedDict()
        self._last: OrderedDict[str, str] = OrderedDict()  # session -> its newest turn
        self.pending: list[Event] = []  # events found outside open/close (a gate refusal)

    def _event(self, t: _Turn, kind: str, later: str | None, evidence: str) -> list[Event]:
        if not t.first_of(kind):
            return []
        data = {
            "kind": kind,
            "later_turn": later,
            "evidence": evidence,
            "rule": t.rule,
            "backend": t.backend,
            "model": t.model,
        }
        return [(LOCAL_REGRET, data, t.turn)]

    def _keep(self, od: OrderedDict[str, Any], key: str, value: Any) -> None:
        od[key] = value
        od.move_to_end(key)
        if len(od) > self.max_turns:
            od.popitem(last=False)

    def opened(self, turn: str | None, session: str | None, text: str, now: float) -> list[Event]:
        """A new real user message opened `turn`: is it a repeat of the session's last, local, turn?"""
        if turn is None:
            return []
        out: list[Event] = []
        prev_id = self._last.get(session) if session else None
        prev = self._turns.get(prev_id) if prev_id else None
        words = None
        # Only a repeat of a locally answered turn can be a verdict: the words are read for that alone.
        if prev is not None and prev.local and prev.ended is not None:
            words = self._compare(prev, prev.ended, turn, text, now, out)
        t = _Turn(turn, text, words)
        self._keep(self._turns, turn, t)
        if session:
            self._keep(self._last, session, turn)
        return out

    def _compare(self, prev: _Turn, ended: float, turn: str, text: str, now: float, out: list[Event]) -> str:
        """Add to `out` the verdicts on `prev` (local, its answer ended at `ended`) that `text`, opening
        `turn`, makes; returns the words of `text`."""
        ask, cloud = _norm(text)
        if len(ask) < MIN_CHARS:
            return ask
        since = now - ended
        score = similarity(ask, prev.ask) if len(prev.ask) >= MIN_CHARS else 0.0
        evidence = f"similarity {score:.0f} after {since:.0f} s"
        if prev.cut and score >= SIMILAR and since <= CLOUD_WINDOW:
            out += self._event(prev, "interrupted", turn, evidence)
        if cloud and score >= SIMILAR and since <= CLOUD_WINDOW:
            out += self._event(prev, "repeat_cloud", turn, evidence)
        elif not cloud and score >= SIMILAR_SOON and since <= SOON_WINDOW and not prev.cut:
            out += self._event(prev, "repeat_soon", turn, evidence)
        return ask

    def served(
        self,
        turn: str | None,
        *,
        side: str,
        rule: str | None,
        backend: str | None,
        model: str | None,
        status: int,
        complete: bool,
        disconnected: bool,
        malformed_calls: Sequence[str],
        now: float,
    ) -> list[Event]:
        """A reply of `turn` is out: note a local answer, and the errors it ended in."""
        t = self._turns.get(turn) if turn else None
        if t is None or side != "local":
            return []
        t.answered_locally(now, rule, backend, model, disconnected)
        out: list[Event] = []
        if 0 < status < 400 and not complete and not disconnected:
            out += self._event(t, "local_error", None, "mid_stream")
        if malformed_calls:
            out += self._event(t, "local_error", None, "tool_call_parse: " + ", ".join(malformed_calls))
        return out

    def escalated(
        self, turn: str | None, *, rule: str | None, backend: str | None, model: str | None, reason: str
    ) -> list[Event]:
        """`turn`'s local answer could not be used (see the module contract, `escalated`)."""
        t = self._turns.get(turn) if turn else None
        if t is None:
            return []
        t.charge(rule, backend, model)
        return self._event(t, "escalated", None, reason)

    def refused(self, turn: str | None, reason: str) -> None:
        """The capability gate refused a later request of `turn`'s family (kept in `pending`)."""
        t = self._turns.get(turn) if turn else None
        if t is not None and t.local:
            self.pending += self._event(t, "local_error", None, "capability_gate: " + reason)

    def take(self) -> list[Event]:
        out, self.pending = self.pending, []
        return out
