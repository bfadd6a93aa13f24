"""Episodes: short deterministic summaries of turns, derived from events alone.

`build(events)` groups events by `turn_id` (events without one are ignored) and returns one Episode
per turn, oldest first (by the first event's id). The same events always give the same episodes,
so the CLI (reading the store index), `glider serve` (reading its ring) agree: both go through the
turn fold (`store.index.turnfold`), and `from_folds` makes episodes from folds the index kept. An episode
holds:
- asked: the user's words from the first TurnOpened that has any (`goal`, the cleaned form, else
  `ask`), whitespace folded, cut to 200 characters;
- routed: from the first RouteDecided of the turn's main requests, the decision that opened it
  (target, backend, model, rule, delegate; its continuations follow it: `sticky`, tool results);
- outcome: from the last FulfilledLocal / OriginPassthrough / DelegateRun of its main requests, with
  any FallbackUsed noted (answered, refused, failed, cut, or left by the client); "open" while none
  has arrived;
- side_requests: its title, utility calls and summaries, each {kind, routed, outcome} (`title`,
  `local via ...`, `the client left before ... answered`), listed under the turn, never standing for
  it;
- files: every path named in a `files` list, first mention order;
- strategy: the last decision's strategy when it is not `single` (None for a single call), and the
  member calls of its plans: `members` (every StrategyMember but a model judge's), `cloud_members`
  (those on the cloud side) and `judge_calls` (a model judge's calls, counted apart). A strategy
  named by a rule but not enabled has no member calls (`members` 0: one ordinary call served it).
`summary` is the one line a local model is given: `asked …; routed …; outcome …; files …`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from glider_cli.store.index.turnfold import TurnFold, fold_events
from glider_cli.values import Frozen

MAX_FILES = 20


class Episode(Frozen):
    turn_id: str
    first_ts: str
    last_ts: str
    events: int
    asked: str
    routed: str
    outcome: str
    files: tuple[str, ...]
    strategy: str | None
    members: int
    cloud_members: int
    judge_calls: int
    side_requests: tuple[Mapping[str, str], ...]

    def __init__(
        self,
        turn_id: str,
        first_ts: str,
        last_ts: str,
        events: int,
        asked: str,
        routed: str,
        outcome: str,
        files: tuple[str, ...],
        strategy: str | None = None,
        members: int = 0,
        cloud_members: int = 0,
        judge_calls: int = 0,
        side_requests: tuple[Mapping[str, str], ...] = (),
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.turn_id = turn_id
        s.first_ts = first_ts
        s.last_ts = last_ts
        s.events = events
        s.asked = asked
        s.routed = routed
        s.outcome = outcome
        s.files = files
        s.strategy = strategy
        s.members = members
        s.cloud_members = cloud_members
        s.judge_calls = judge_calls
        s.side_requests = side_requests

    @property
    def summary(self) -> str:
        parts = [f"asked: {self.asked or '(unknown)'}", f"routed: {self.routed}", f"outcome: {self.outcome}"]
        if self.files:
            parts.append("files: " + ", ".join(self.files))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "events": self.events,
            "asked": self.asked,
            "routed": self.routed,
            "outcome": self.outcome,
            "files": list(self.files),
            "summary": self.summary,
            "strategy": self.strategy,
            "members": self.members,
            "cloud_members": self.cloud_members,
            "judge_calls": self.judge_calls,
            "side_requests": [dict(s) for s in self.side_requests],
        }


def from_fold(f: TurnFold) -> Episode:
    """The episode of one turn's fold (see `store.index.turnfold`)."""
    first = f.first[1] if f.first else ""
    last = f.last[1] if f.last else first
    routed = f.routed[1][0] if f.routed else "not routed"
    outcome = (f.outcome[1] if f.outcome else "open") + (f.fallback[1] if f.fallback else "")
    asked = f.asked[1] if f.asked else ""
    files = tuple(f.file_list(MAX_FILES))
    strategy = str(f.strategy[1]) if f.strategy else None
    counts = (f.members, f.cloud_members, f.judge_calls)
    sides = tuple(f.side_requests())
    return Episode(
        f.turn, str(first), str(last), f.n, asked, routed, outcome, files, strategy, *counts, sides
    )


def from_folds(folds: Iterable[TurnFold]) -> list[Episode]:
    """Episodes of these folds, oldest first (by each turn's first event id)."""
    return [from_fold(f) for f in sorted(folds, key=lambda f: f.first_id)]


def build(events: Iterable[Mapping[str, Any]]) -> list[Episode]:
    """See the module contract."""
    return from_folds(fold_events(events).values())
