"""The turn-family index: which turn every request belongs to.

A *turn family* is one real user message (the request that opens it is logged as `TurnOpened`; the
family id is that turn id) plus every request the client sends on its behalf before the person
speaks again. `FamilyIndex.place(request, now, body=...)` puts one request in a family and returns a
`Placement`. It is pure given the request, the raw body and `now` (no clock, no I/O inside): the
caller passes the time in, and ids come from the injected `new_id`.

Linking rules, tried in this order (the `link` of a Placement names the one that applied):

1. **count_tokens** (`count_tokens=True`): joins the session's current family; never opens a turn.
   Without a known session it belongs to no family (turn id None).
2. **tool result**: the most recent message answers tool calls (Anthropic `tool_result`, Chat `tool`
   messages, Responses `function_call_output` by `call_id`). It joins the family that issued one of
   those calls (the index remembers every call id a family's replies issued); an unknown call id
   falls back to the session's current family; with neither, a family is opened without a
   `TurnOpened` (nothing is known about its parent).
3. **title**: Claude Code's session-title request (`output_config.format` is a `json_schema` with a
   `title` property, or the latest user text opens with `<session>` and the request has no tools);
   **utility**: Gemini CLI's router-classifier and other JSON-mode side requests (no tools). Both
   join the session's current family (a Gemini session: see `protocol.gemini_request`) and open none.
4. **summary**: a compaction / summary / Cursor Composer wrap-up request (its wording, or a Codex
   `x-codex-turn-metadata` whose `request_kind` is not `turn`).
   Titles, utility requests and summaries join the session's current family; a summary-worded user
   message with no live family to join is a new turn.
5. **subagent**: a request whose only user message equals, or contains, the `prompt` (or
   `description`) input of an Agent/Task tool call that a live family issued and has not had
   answered yet. It joins that family, whatever its session id says (subagents may carry another
   session id, or none).
6. **retry**: a new-looking user message that repeats the current family's opening message with
   the same number of messages (client retries after a 529 or a 400) joins that family.
7. **new turn**: any other request whose most recent message is user text with no tool results
   opens a family (`new_turn=True`, the caller emits `TurnOpened`).
8. **continuation**: anything else (an assistant prefill, a trailing system message) joins the
   session's current family.

Time windows: a family is *live* for linking while `now - last_seen <= window` (default 1800 s).
Session-based rules only join a live family; past the window the request is placed as if the
session were unknown.

Bounds: at most `max_families` families are kept, least recently seen evicted first, together with
their call ids and session pointers; an Agent/Task prompt is kept up to `PROMPT_CAP` characters.

Rebuild: `rebuild_event` folds the event log (oldest first) back in, so `glider serve` keeps its
families across restarts: `TurnOpened` (family, session, opening message), `RouteDecided` (its
`family` entry, written by `turns.sticky`: the side that decided, the calls it answered),
`ToolCallsIssued` (the side/backend/model that served a reply and each call it issued, with an
Agent/Task call's prompt: tool results still go home and subagents still link after a restart) and
`StickyBound`. The log is redacted, so a logged prompt is cut at its first `[REDACTED]`.

The request-kind tests live in `protocol.request_kinds`, the records in `turns.records`;
both are re-exported here, so `from glider_cli.turns.families import FamilyIndex, Placement, ...`
keeps working.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from glider_cli.domain import ChatRequest
from glider_cli.protocol.request_kinds import (
    AGENT_TOOLS,
    KINDS,
    PROMPT_CAP,
    Kind,
    agent_prompt,
    answered_calls,
    codex_request_kind,
    is_new_user_message,
    is_summary_request,
    is_title_request,
    is_utility_request,
    summary_worded,
)
from glider_cli.store.redact import REDACTED
from glider_cli.turns.records import Binding, Call, Family, Placement

__all__ = [
    "AGENT_TOOLS",
    "DEFAULT_WINDOW",
    "KINDS",
    "PROMPT_CAP",
    "Binding",
    "Call",
    "Family",
    "FamilyIndex",
    "Kind",
    "Placement",
    "agent_prompt",
    "answered_calls",
    "is_new_user_message",
    "is_summary_request",
    "is_title_request",
    "ts_seconds",
]

DEFAULT_WINDOW = 1800.0


def ts_seconds(ts: str) -> float | None:
    """An event's ISO `ts` (`2026-11-29T21:50:01.123Z`) as Unix seconds."""
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class FamilyIndex:
    """See the module contract. Not thread-safe: the proxy calls it from its event loop only."""

    def __init__(
        self, new_id: Callable[[], str], *, max_families: int = 4096, window: float = DEFAULT_WINDOW
    ) -> None:
        self._new_id = new_id
        self.max_families = max_families
        self.window = window
        self.families: OrderedDict[str, Family] = OrderedDict()
        self._sessions: dict[str, str] = {}
        self._calls: dict[str, str] = {}
        # Unanswered Agent/Task calls (call id -> turn id): the only candidates for a subagent link.
        self._agents: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.families)

    # ------------------------------------------------------------------------------ lookups

    def get(self, turn_id: str | None) -> Family | None:
        return self.families.get(turn_id) if turn_id else None

    def session_family(self, session_id: str | None, now: float) -> Family | None:
        if not session_id:
            return None
        fam = self.get(self._sessions.get(session_id))
        if fam is None or now - fam.last_seen > self.window:
            return None
        return fam

    def family_of_call(self, call_id: str) -> Family | None:
        return self.get(self._calls.get(call_id))

    def _subagent_parent(self, text: str, now: float) -> tuple[Family, Call] | None:
        text = text.strip()
        if not text:
            return None
        best: tuple[Family, Call] | None = None
        for cid, turn in self._agents.items():
            fam = self.families.get(turn)
            call = fam.calls.get(cid) if fam is not None else None
            if fam is None or call is None or now - fam.last_seen > self.window:
                continue
            matches = call.prompt == text or call.prompt in text
            if matches and (best is None or len(call.prompt) > len(best[1].prompt)):
                best = (fam, call)
        return best

    # ------------------------------------------------------------------------------ placing

    def place(
        self,
        request: ChatRequest,
        now: float,
        *,
        body: Mapping[str, Any] | None = None,
        count_tokens: bool = False,
    ) -> Placement:
        """Put `request` in a family (opening one when it is a new turn) and say how it was linked."""
        sid = request.session_id
        current = self.session_family(sid, now)
        if count_tokens:
            if current is None:
                return Placement("count_tokens", None, sid, "no live family for this session")
            return self._join(current, now, "count_tokens", sid, "same session id")
        answered = answered_calls(request)
        if answered:
            return self._place_result(request, now, answered, current)
        text = request.last_user_text
        if is_title_request(request, body, text):
            return self._follow(current, now, "title", sid, request)
        if is_utility_request(request, body):
            return self._follow(current, now, "utility", sid, request)
        # A summary needs a family to summarise: with none, a person's own "summarize..." opens a turn.
        new = is_new_user_message(request)
        codex_kind = (
            codex_request_kind(request.headers) if "x-codex-turn-metadata" in request.headers else None
        )
        client_says = codex_kind is not None and codex_kind != "turn"
        if client_says or ((current is not None or not new) and summary_worded(text)):
            return self._follow(current, now, "summary", sid, request)
        if new:
            users = [m for m in request.messages if m.role == "user"] if self._agents else []
            if len(users) == 1:
                found = self._subagent_parent(users[0].content, now)
                if found is not None:
                    fam, call = found
                    fam.last_seen = now
                    self.families.move_to_end(fam.turn_id)
                    why = f"first user message is the input of {call.name} call {call.id}"
                    return Placement(
                        "subagent", fam.turn_id, sid, why, tools=(call.name,), parent_call=call.id
                    )
            if current is not None and current.ask == text and current.opening_len == len(request.messages):
                return self._join(current, now, "retry", sid, "repeats the opening message of the turn")
            return self._open(request, now, sid, text)
        return self._follow(current, now, "continuation", sid, request)

    def _place_result(
        self, request: ChatRequest, now: float, answered: tuple[str, ...], current: Family | None
    ) -> Placement:
        sid = request.session_id
        fam: Family | None = None
        link = ""
        for cid in answered:
            fam = self.family_of_call(cid)
            if fam is not None:
                link = f"answers tool call {cid} issued in this family"
                break
        if fam is None and current is not None:
            fam, link = current, "same session id (the answered calls were not seen)"
        if fam is None:
            fam = self._new_family(request, now, sid)
            link = "answers calls no family issued; opened without a TurnOpened"
        names = self._record_answers(fam, request, answered)
        fam.last_seen = now
        self.families.move_to_end(fam.turn_id)
        return Placement("tool_result", fam.turn_id, sid, link, answered, names)

    def _record_answers(
        self, fam: Family, request: ChatRequest, answered: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Mark the calls answered; calls seen only now (echoed in the request) join the family."""
        echoed: dict[str, str] | None = None
        names: list[str] = []
        for cid in answered:
            call = fam.calls.get(cid)
            owner = fam
            if call is None:
                other = self.family_of_call(cid)
                call = other.calls.get(cid) if other is not None else None
                owner = other if other is not None else fam
            if call is None:
                if echoed is None:
                    echoed = {c.id: c.name for m in request.messages for c in m.tool_calls}
                call = Call(cid, echoed.get(cid, ""), fam.side, fam.backend, fam.model)
                fam.calls[cid] = call
                self._calls[cid] = fam.turn_id
            call.answered = True
            owner.open_calls.discard(cid)
            self._agents.pop(cid, None)
            if call.name and call.name not in names:
                names.append(call.name)
        return tuple(names)

    def _follow(
        self, current: Family | None, now: float, kind: Kind, sid: str | None, request: ChatRequest
    ) -> Placement:
        if current is not None:
            return self._join(current, now, kind, sid, "same session id")
        fam = self._new_family(request, now, sid)
        return Placement(kind, fam.turn_id, sid, "no live family to join; opened without a TurnOpened")

    def _join(self, fam: Family, now: float, kind: Kind, sid: str | None, link: str) -> Placement:
        fam.last_seen = now
        self.families.move_to_end(fam.turn_id)
        return Placement(kind, fam.turn_id, sid, link)

    def _open(self, request: ChatRequest, now: float, sid: str | None, text: str) -> Placement:
        fam = self._new_family(request, now, sid)
        fam.ask = text
        fam.opening_len = len(request.messages)
        return Placement("new_turn", fam.turn_id, sid, "a new user message opens a turn")

    def _new_family(self, request: ChatRequest, now: float, sid: str | None) -> Family:
        return self.add(Family(self._new_id(), sid, now, now))

    # ------------------------------------------------------------------------------ recording

    def add(self, fam: Family) -> Family:
        self.families[fam.turn_id] = fam
        self.families.move_to_end(fam.turn_id)
        if fam.session_id:
            self._sessions[fam.session_id] = fam.turn_id
        for cid in fam.calls:
            self._calls[cid] = fam.turn_id
        while len(self.families) > self.max_families:
            _, old = self.families.popitem(last=False)
            if old.session_id and self._sessions.get(old.session_id) == old.turn_id:
                del self._sessions[old.session_id]
            for cid in old.calls:
                if self._calls.get(cid) == old.turn_id:
                    del self._calls[cid]
                self._agents.pop(cid, None)
        return fam

    def served(self, turn_id: str | None, side: str, backend: str | None, model: str | None) -> None:
        """The side/backend/model that answered the family's latest request."""
        fam = self.get(turn_id)
        if fam is not None:
            fam.side, fam.backend, fam.model = side, backend, model

    def issued(self, turn_id: str | None, call_id: str, name: str, prompt: str = "") -> None:
        """A reply served in the family issued this tool call (who served it: the family's side)."""
        fam = self.get(turn_id)
        if fam is None or not call_id:
            return
        prompt = prompt[:PROMPT_CAP]
        fam.calls[call_id] = Call(call_id, name, fam.side, fam.backend, fam.model, prompt)
        fam.open_calls.add(call_id)
        self._calls[call_id] = fam.turn_id
        if prompt:
            self._agents[call_id] = fam.turn_id

    def pending(self, turn_id: str | None) -> int:
        fam = self.get(turn_id)
        return 0 if fam is None else len(fam.open_calls)

    # ------------------------------------------------------------------------------ rebuild

    def rebuild_event(self, event: Mapping[str, Any]) -> None:
        """Fold one logged event (oldest first) into the index; unknown types are ignored."""
        kind = event.get("type")
        turn = event.get("turn_id")
        data = event.get("data")
        if not isinstance(turn, str) or not isinstance(data, Mapping):
            return
        at = ts_seconds(str(event.get("ts", ""))) or 0.0
        fam = self.families.get(turn)
        if kind == "TurnOpened":
            new = Family(turn, _str(data.get("session_id")), at, at, ask=str(data.get("ask") or ""))
            if isinstance(data.get("messages"), int):
                new.opening_len = data["messages"]
            self.add(new)
        elif kind == "RouteDecided":
            self._rebuild_decided(turn, fam, data, at)
        elif kind == "ToolCallsIssued":
            self._rebuild_issued(turn, fam, data, at)
        elif kind == "StickyBound" and fam is not None:
            bound_at = data.get("bound_at")
            start = float(bound_at) if isinstance(bound_at, int | float) else at
            ttl, grace = data.get("ttl"), data.get("grace")
            ended = data.get("ended_at")
            prev = fam.binding
            fam.binding = Binding(
                str(data.get("target") or "cloud"),
                prev.bound_at if prev is not None and ended is not None else start,
                float(ttl) if isinstance(ttl, int | float) else 0.0,
                float(grace) if isinstance(grace, int | float) else 0.0,
                str(data.get("reason") or "restored from the event log"),
                float(ended) if isinstance(ended, int | float) else None,
            )
            fam.last_seen = max(fam.last_seen, at)

    def _touch(self, turn: str, fam: Family | None, session: Any, at: float) -> Family:
        """The family of a logged event (made when the log holds no TurnOpened for it), seen at `at`."""
        if fam is None:
            fam = self.add(Family(turn, _str(session), at, at))
        fam.last_seen = max(fam.last_seen, at)
        self.families.move_to_end(turn)
        return fam

    def _rebuild_decided(self, turn: str, fam: Family | None, data: Mapping[str, Any], at: float) -> None:
        info = data.get("family")
        if fam is None and not isinstance(info, Mapping):
            return
        fam = self._touch(turn, fam, info.get("session_id") if isinstance(info, Mapping) else None, at)
        target = data.get("target")
        if target in ("local", "cloud"):
            fam.side, fam.backend, fam.model = str(target), _str(data.get("backend")), _str(data.get("model"))
        if not isinstance(info, Mapping):
            return
        for cid in info.get("answered") or ():
            if not isinstance(cid, str):
                continue
            owner = self.family_of_call(cid) or fam
            call = owner.calls.get(cid)
            if call is None:
                call = owner.calls[cid] = Call(cid, "", fam.side, fam.backend, fam.model)
                self._calls[cid] = owner.turn_id
            call.answered = True
            owner.open_calls.discard(cid)
            self._agents.pop(cid, None)

    def _rebuild_issued(self, turn: str, fam: Family | None, data: Mapping[str, Any], at: float) -> None:
        """`ToolCallsIssued` (written by `turns.sticky`): the calls go back to the side that issued
        them, and an Agent/Task call's prompt links its subagent, across a restart."""
        fam = self._touch(turn, fam, data.get("session_id"), at)
        side = data.get("side")
        if side in ("local", "cloud"):
            fam.side, fam.backend, fam.model = str(side), _str(data.get("backend")), _str(data.get("model"))
        calls = data.get("calls")
        for c in calls if isinstance(calls, list) else ():
            cid = c.get("id") if isinstance(c, Mapping) else None
            if isinstance(cid, str) and cid and isinstance(c, Mapping):
                self.issued(turn, cid, str(c.get("name") or ""), _logged_prompt(c.get("prompt")))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _logged_prompt(value: Any) -> str:
    """An Agent prompt as logged: the log is redacted, so only the text before the first redaction
    can still be found in the subagent's (unredacted) first message; too short a prefix links nothing."""
    if not isinstance(value, str):
        return ""
    cut = value.find(REDACTED)
    text = value if cut < 0 else value[:cut].rstrip()
    return text if cut < 0 or len(text) >= 32 else ""
