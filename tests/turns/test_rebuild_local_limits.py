"""The count of a family's local replies in a row that stopped at the output-token limit, rebuilt from
the logged outcomes (`turns.rebuild`): after every reply the rebuilt count is the one the running
app holds, resets and replies that answered nothing included, and a rebuilt family past
`LOCAL_LIMIT_RUNS` sends its continuation off local."""

from __future__ import annotations

from typing import Any

from family_helpers import Ids, cc, title_request, user
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest, Reason, RequestSummary, RouteDecision
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.turns.families import FamilyIndex
from glider_cli.turns.lifecycle import Served, Turns
from glider_cli.turns.sticky import LOCAL_LIMIT_RUNS, Events

S1 = "11111111-1111-4111-8111-111111111111"
PROMPT = "tell me a long story about a parser"
RESUME = (
    "Output token limit hit. Resume directly \u2014 no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)


class _Local:
    """A router that sends everything local (the continuation's way off local is the plan's)."""

    def decide(self, request: Any, *, sticky: Any = None, gate: Any = None, every: bool = False) -> Any:
        return RouteDecision(
            target="local",
            rule="local_default",
            priority=1,
            backend="ollama",
            model="qwen-local",
            adapter=None,
            strategy="single",
            delegate=None,
            request=RequestSummary(10, False, 0, "keywords"),
            trace=(Reason("local_default", 1, True, "matched"),),
        )


class _App:
    """One running app: its Turns, and the log its events went to."""

    def __init__(self, log: list[dict[str, Any]] | None = None) -> None:
        self.now = 1000.0
        self.turns = Turns(
            _Local(), StickySettings(), ToolFollowupSettings(), clock=lambda: self.now, new_id=Ids()
        )
        self.log: list[dict[str, Any]] = []
        if log is not None:
            self.turns.rebuild(log)

    def write(self, events: Events) -> None:
        for kind, data, turn in events:
            n = len(self.log)
            self.log.append(make_event(f"{n:032x}", kind, format_ts(self.now), turn, data))

    def family(self, turn: str | None) -> Any:
        fam = self.turns.sticky.index.get(turn)
        assert fam is not None
        return fam


def _request(replies: int) -> tuple[ChatRequest, dict[str, Any]]:
    """The prompt, then `replies` replies each followed by Claude Code's continuation."""
    messages = [user(PROMPT)]
    for _ in range(replies):
        messages += [{"role": "assistant", "content": "once upon a time"}, user(RESUME)]
    return cc(S1, messages)


def _local(at_limit: bool) -> Served:
    return Served("ollama", "local", "qwen-local", 200, 10, 64, at_limit=at_limit)


# What answers each request of the turn, and the count the running app then holds.
REPLIES: list[tuple[str, Served, int]] = [
    ("at the limit", _local(True), 1),
    ("at the limit again", _local(True), 2),
    ("answered in the cloud", Served("origin", "cloud", "claude-x", 200, 10, 64), 0),
    ("at the limit", _local(True), 1),
    ("finished", _local(False), 0),
    ("at the limit", _local(True), 1),
    ("at the limit again", _local(True), 2),
    (
        "the client left before any reply",
        Served("ollama", "local", "qwen-local", 0, complete=False, answered=False, disconnected=True),
        2,
    ),
    (
        "every attempt failed",
        Served("ollama", "local", "qwen-local", 502, complete=False, answered=False, end="failed"),
        2,
    ),
    (
        "the cloud's error reply, passed through",
        Served("origin", "cloud", "claude-x", 429, complete=False),
        2,
    ),
    ("at the limit a third time", _local(True), 3),
    (
        "a stream the server cut",
        Served("ollama", "local", "qwen-local", 200, 10, 3, complete=False, end="cut"),
        0,
    ),
]


def test_after_every_reply_the_rebuilt_count_is_the_running_apps() -> None:
    app = _App()
    turn = None
    for n, (what, served, count) in enumerate(REPLIES):
        app.now += 5
        chat, body = _request(n)
        opened = app.turns.open(chat, body)
        assert opened.plan.placement.kind == ("new_turn" if n == 0 else "continuation"), what
        turn = turn or opened.turn_id
        assert opened.turn_id == turn, what
        app.write(opened.events)
        app.write(app.turns.close(opened, served))
        assert app.family(turn).local_limits == count, what  # the running app's count
        rebuilt = _App(app.log)
        assert rebuilt.family(turn).local_limits == count, what
        # The next continuation leaves local in the rebuilt app exactly when it does in the running one.
        nxt, nxt_body = _request(n + 1)
        off = rebuilt.turns.open(nxt, nxt_body).plan.off_local
        assert (off is not None) == (count >= LOCAL_LIMIT_RUNS), what
        if off is not None:
            assert f"the last {count} local replies of turn {turn}" in off


def test_a_title_or_an_error_reply_between_the_replies_leaves_the_count_and_so_does_the_rebuild() -> None:
    app = _App()
    turn = None
    answers = [
        ("at the limit", _local(True), 1),
        ("the title, answered in the cloud", Served("origin", "cloud", "claude-x", 200, 10, 5), 1),
        ("at the limit again", _local(True), 2),
        ("the cloud's 529, passed through", Served("origin", "cloud", "claude-x", 529, complete=False), 2),
        ("the title again, answered locally at the limit", _local(True), 2),
        ("at the limit a third time", _local(True), 3),
    ]
    replies = 0
    for what, served, count in answers:
        app.now += 5
        if "title" in what:
            chat, body = title_request(S1, PROMPT)
        else:
            chat, body = _request(replies)
            replies += 1
        opened = app.turns.open(chat, body)
        assert opened.plan.placement.kind in ("title" if "title" in what else ("new_turn", "continuation"))
        turn = turn or opened.turn_id
        assert opened.turn_id == turn, what
        app.write(opened.events)
        closing = app.turns.close(opened, served)
        app.write(closing)
        outcome = closing[0][1]
        assert outcome.get("request_kind") == ("title" if "title" in what else None), what
        assert app.family(turn).local_limits == count, what
        assert _App(app.log).family(turn).local_limits == count, what
    nxt, nxt_body = _request(replies)
    off = _App(app.log).turns.open(nxt, nxt_body).plan.off_local
    assert off is not None and f"the last 3 local replies of turn {turn}" in off


def _outcome(n: int, kind: str, turn: str, data: dict[str, Any]) -> dict[str, Any]:
    return make_event(f"{n:04d}", kind, format_ts(100.0 + n), turn, data)


def test_an_outcome_folds_into_a_known_family_only_and_an_odd_one_changes_nothing() -> None:
    ix = FamilyIndex(Ids())
    limit = {"backend": "ollama", "status": 200, "stopped_at_limit": True}
    ix.rebuild_event(_outcome(1, "FulfilledLocal", "tX", limit))
    assert ix.get("tX") is None  # no family is made for an outcome alone
    opened = {"ask": PROMPT, "session_id": S1, "messages": 1}
    ix.rebuild_event(make_event("0002", "TurnOpened", format_ts(102.0), "tA", opened))
    fam = ix.get("tA")
    assert fam is not None and fam.local_limits == 0
    for n, (kind, data) in enumerate(
        [
            ("FulfilledLocal", limit),
            ("FulfilledLocal", {**limit, "status": "200"}),  # not a status: passed over
            ("FulfilledLocal", {"stopped_at_limit": True}),  # no status: passed over
            ("FulfilledLocal", {**limit, "stopped_at_limit": "yes"}),  # not at the limit: ends the run
        ],
        start=3,
    ):
        ix.rebuild_event(_outcome(n, kind, "tA", data))
        if n == 3:
            assert fam.local_limits == 1
    assert fam.local_limits == 0
    ix.rebuild_event(_outcome(7, "FulfilledLocal", "tA", limit))
    ix.rebuild_event({**_outcome(8, "FulfilledLocal", "tA", limit), "data": "not a mapping"})
    ix.rebuild_event({**_outcome(9, "FulfilledLocal", "tA", limit), "turn_id": None})
    assert fam.local_limits == 1
    # A cloud reply at the limit is no local reply at it (only local replies are read for it).
    ix.rebuild_event(_outcome(10, "OriginPassthrough", "tA", limit))
    assert fam.local_limits == 0
    assert fam.last_seen == 102.0  # an outcome moves no family's time
