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
   `title` property, or the latest user text opens with `<session>` and the request has no tools).
4. **summary**: a compaction / summary / Cursor Composer wrap-up request (its wording, or a Codex
   `x-codex-turn-metadata` whose `request_kind` is not `turn`).
   Titles and summaries join the session's current family; a summary-worded user message with no
   live family to join is a new turn.
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
their call ids and session pointers. The index is rebuilt from the event log's `TurnOpened`,
`RouteDecided` (its `family` entry, written by `router.sticky`) and `StickyBound` events with
`rebuild_event`, so `glider serve` keeps its families across restarts.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from glider_cli.domain import ChatRequest

Kind = Literal[
    "new_turn", "tool_result", "count_tokens", "title", "summary", "subagent", "retry", "continuation"
]
KINDS: tuple[str, ...] = (
    "new_turn",
    "tool_result",
    "count_tokens",
    "title",
    "summary",
    "subagent",
    "retry",
    "continuation",
)
AGENT_TOOLS = frozenset({"Agent", "Task", "spawn_agent"})
DEFAULT_WINDOW = 1800.0

_SUMMARY = re.compile(
    r"(?:^\s*(?:please\s+)?(?:now\s+)?(?:summari[sz]e|write (?:a |an )?(?:brief |short |concise |detailed )?"
    r"summary of|give (?:me )?(?:a |an )?(?:brief |short )?(?:summary|recap) of|recap)\b[^\n]{0,80}?"
    r"\b(?:conversation|chat|session|changes|work|what (?:you|we|was) (?:did|done|changed|have done))"
    r"|create a detailed summary of the conversation"
    r"|summari[sz]e (?:this|the) conversation (?:so far|above)"
    r"|<compaction_request>)",
    re.IGNORECASE,
)


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


@dataclass(slots=True)
class Binding:
    """A sticky binding: the family stays off the local model (see `router.sticky`)."""

    target: str
    bound_at: float
    ttl: float
    grace: float
    reason: str
    ended_at: float | None = None

    def live(self, now: float) -> bool:
        if now <= self.bound_at + self.ttl:
            return True
        return self.ended_at is not None and now <= self.ended_at + self.grace


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


@dataclass(frozen=True)
class Placement:
    """Where one request went: its family (turn id), what kind of request it is, and why."""

    kind: Kind
    turn_id: str | None
    session_id: str | None
    link: str
    answered: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    parent_call: str | None = None

    @property
    def new_turn(self) -> bool:
        return self.kind == "new_turn"

    @property
    def follow_on(self) -> bool:
        return self.kind != "new_turn"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "link": self.link,
            "answered": list(self.answered),
            "tools": list(self.tools),
            "parent_call": self.parent_call,
        }


def is_new_user_message(request: ChatRequest) -> bool:
    """The most recent message is user text that answers no tool call."""
    if not request.messages:
        return False
    last = request.messages[-1]
    return last.role == "user" and bool(last.content.strip()) and not last.tool_results


def answered_calls(request: ChatRequest) -> tuple[str, ...]:
    """The call ids the trailing tool-result messages answer (Responses sends one item per result)."""
    out: list[str] = []
    for m in reversed(request.messages):
        if not m.tool_results:
            break
        out.extend(m.tool_results)
        if m.role == "user" and m.content.strip():
            break
    return tuple(reversed(out))


def _codex_request_kind(headers: Mapping[str, str]) -> str | None:
    raw = headers.get("x-codex-turn-metadata")
    if not raw or not raw.startswith("{"):
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return None
    kind = meta.get("request_kind") if isinstance(meta, dict) else None
    return kind if isinstance(kind, str) else None


def is_title_request(request: ChatRequest, body: Mapping[str, Any] | None, text: str | None = None) -> bool:
    """Claude Code's session-title request (CLIENTS.md): a `title` json_schema, or `<session>` text."""
    if request.has_tools:
        return False
    if body is not None:
        oc = body.get("output_config")
        fmt = oc.get("format") if isinstance(oc, Mapping) else None
        schema = fmt.get("schema") if isinstance(fmt, Mapping) else None
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(props, Mapping) and "title" in props:
            return True
    text = request.last_user_text if text is None else text
    return text.lstrip().startswith("<session>")


def is_summary_request(request: ChatRequest, text: str | None = None) -> bool:
    """Compaction / summary / Composer wrap-up wording, or a Codex request that is not a turn."""
    kind = _codex_request_kind(request.headers)
    if kind is not None and kind != "turn":
        return True
    text = request.last_user_text if text is None else text
    return bool(_SUMMARY.search(text[:4000]))


def agent_prompt(name: str, arguments: Mapping[str, Any]) -> str:
    """The text a subagent spawned by this tool call starts with ('' when it is no Agent/Task call)."""
    if name not in AGENT_TOOLS:
        return ""
    for key in ("prompt", "message", "task", "description"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


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
        # A summary needs a family to summarise: with none, a person's own "summarize..." opens a turn.
        new = is_new_user_message(request)
        codex_kind = (
            _codex_request_kind(request.headers) if "x-codex-turn-metadata" in request.headers else None
        )
        client_says = codex_kind is not None and codex_kind != "turn"
        if client_says or ((current is not None or not new) and _SUMMARY.search(text[:4000])):
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
            sid = data.get("session_id") if isinstance(data.get("session_id"), str) else None
            ask = str(data.get("ask") or "")
            new = Family(turn, sid, at, at, ask=ask)
            if isinstance(data.get("messages"), int):
                new.opening_len = data["messages"]
            self.add(new)
        elif kind == "RouteDecided":
            info = data.get("family")
            if fam is None and isinstance(info, Mapping):
                sid = info.get("session_id") if isinstance(info.get("session_id"), str) else None
                fam = self.add(Family(turn, sid, at, at))
            if fam is None:
                return
            fam.last_seen = max(fam.last_seen, at)
            self.families.move_to_end(turn)
            target = data.get("target")
            if target in ("local", "cloud"):
                backend = data.get("backend") if isinstance(data.get("backend"), str) else None
                model = data.get("model") if isinstance(data.get("model"), str) else None
                fam.side, fam.backend, fam.model = str(target), backend, model
            if isinstance(info, Mapping):
                for cid in info.get("answered") or ():
                    if isinstance(cid, str):
                        call = fam.calls.setdefault(cid, Call(cid, "", fam.side, fam.backend, fam.model))
                        call.answered = True
                        self._calls[cid] = turn
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
