"""The turn-family index: which turn every request belongs to.

A *turn family* is one real user message (the request that opens it is logged as `TurnOpened`; the
family id is that turn id) plus every request the client sends on its behalf before the person
speaks again. `FamilyIndex.place(request, now, body=...)` puts one request in a family and returns a
`Placement`. It is pure given the request, the raw body and `now` (no clock, no I/O inside): the
caller passes the time in, and ids come from the injected `new_id`.

A request's *session key* is its session id, or, when the client sends none, the fingerprint of its
credentials (`turns.request_kinds.credentials_fingerprint`: a keyed hash of the auth header value
kept in memory only, never the key, never logged).

Linking rules, tried in this order (the `link` of a Placement names the one that applied):

1. **count_tokens** (`count_tokens=True`): joins the session's current family; never opens a turn.
   Without a known session it belongs to no family (turn id None).
2. **tool result**: the most recent message answers tool calls (Anthropic `tool_result`, Chat `tool`
   messages, Responses `function_call_output` by `call_id`). It joins the family that issued one of
   those calls (the index remembers every call id a family's replies issued); an unknown call id
   falls back to the session's current family; with neither, a family is opened without a
   `TurnOpened` (nothing is known about its parent).
0. **declared**: a request whose client says what it is by protocol field (`ChatRequest.client_kind`,
   Cursor): a `new_turn` opens a family; a `title`, `summary`, `subagent` or `continuation` joins the
   session's current family (the Cursor proxy gives a subagent its parent's conversation as session).
3. **title**: Claude Code's session-title request (`output_config.format` is a `json_schema` with a
   `title` property, or the latest user text opens with `<session>` and the request has no tools).
   It joins the live family of its session key whose opening message it quotes inside `<session>`
   tags, whatever arrived in between. Claude Code sends it *before* the turn it quotes: with no such
   family yet, the title opens one *ahead* of its turn (no `TurnOpened`; `Placement.quoted` is the
   prompt), and the new user message that types that prompt opens its turn in that same family.
   (Before placing such a title the caller may wait briefly for that prompt's request:
   `awaited_prompt` names the prompt, `prompt_key` the prompt a request types; see
   `turns.lifecycle`.) A title that quotes nothing joins the session's current family.
   **utility**: Gemini CLI's router-classifier and other JSON-mode side requests (no tools) join
   the session's current family (a Gemini session: see `protocol.gemini_request`) and open none.
4. **summary**: a compaction / summary / Cursor Composer wrap-up request (its wording, or a Codex
   `x-codex-turn-metadata` whose `request_kind` is not `turn`). Summaries join the session's
   current family; a summary-worded user message with no live family to join is a new turn.
5. **subagent**: a request whose only user message is, word for word (client-injected blocks aside),
   the whole prompt of an Agent/Task tool call that a live family of the same session id (or, with
   no session id, the same credentials fingerprint) issued and has not had answered yet. It joins
   that family (`parent_call`, `tools`, `subagent_type`).
6. **retry**: a new-looking user message that repeats the current family's opening message with
   the same number of messages (client retries after a 529 or a 400; Gemini CLI's retry may append
   a nudge, `turns.client_texts.without_nudge`) joins that family. **client continuation**: a user
   message that is, word for word, a text the client sends on its own to continue the turn
   (`turns.client_texts`: Claude Code's `Output token limit hit…`, Gemini CLI's `Please continue.`)
   joins the session's current family as a continuation.
7. **new turn**: any other request whose most recent message is user text with no tool results
   opens a family (`new_turn=True`, the caller emits `TurnOpened`).
8. **continuation**: anything else (an assistant prefill, a trailing system message) joins the
   session's current family.

A family is *live* for linking while `now - last_seen <= window` (default 1800 s); past it a
request is placed as if the session were unknown. At most `max_families` families are kept (least
recently seen evicted first, with their call ids, session pointers and prompts); an Agent/Task
prompt is kept up to `PROMPT_CAP` characters, with the digest of the whole. `rebuild_event`
(`turns.rebuild`) folds the event log back in. The request-kind tests (`turns.request_kinds`)
and the records (`turns.records`) are re-exported here.

What the index records, besides placing: the families it keeps (`add`), who answered (`served`),
the tool calls a reply issued (`issued`, an Agent/Task call's prompt capped, its digest kept) and
those a request answers (`answer`, `family_of_call`: the family that issued a call), the prompt
that opened a family (`asked`, for titles that quote it: `prompt_key` is a request's key for it)
and how many calls are unanswered (`pending`). A request's session key (`key_of`) is its session
id, or the credentials fingerprint of its auth header; the fingerprint of the request at hand is
kept (`fingerprint`): one request is hashed once, however often it is asked about; so is the
prompt key of the request that last opened a turn (`prompt_key` right after `place`).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from glider_cli.domain import ChatRequest
from glider_cli.router.triggers import client_text
from glider_cli.turns.client_texts import ClientText, client_continuation, without_nudge
from glider_cli.turns.rebuild import rebuild_event, ts_seconds
from glider_cli.turns.records import Binding, Call, Family, Placement
from glider_cli.turns.request_kinds import (
    AGENT_TOOLS,
    KINDS,
    PROMPT_CAP,
    Fingerprinter,
    Kind,
    agent_prompt,
    answered_calls,
    codex_request_kind,
    is_new_user_message,
    is_summary_request,
    is_title_request,
    is_utility_request,
    prompt_digest,
    quoted_prompt,
    summary_worded,
)

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


# A session key made from the credentials fingerprint (a request without a session id).
_CREDS = "creds:"


def prompt_text(text: str) -> str:
    """A user message's text as the person typed it, for comparing prompts (title quotes, subagents)."""
    return client_text(text).strip()


class FamilyIndex:
    """See the module contract. Not thread-safe: the proxy calls it from its event loop only."""

    def __init__(
        self,
        new_id: Callable[[], str],
        *,
        max_families: int = 4096,
        window: float = DEFAULT_WINDOW,
        fingerprint_key: bytes | None = None,
    ) -> None:
        self._new_id = new_id
        self.max_families = max_families
        self.window = window
        # The key of the credentials fingerprint: per index, so a fingerprint means nothing elsewhere.
        self._key = fingerprint_key if fingerprint_key is not None else secrets.token_bytes(32)
        self._fingerprint = Fingerprinter(self._key)
        self.families: OrderedDict[str, Family] = OrderedDict()
        self._sessions: dict[str, str] = {}
        self._calls: dict[str, str] = {}
        # Unanswered Agent/Task calls (call id -> turn id): the only candidates for a subagent link.
        self._agents: dict[str, str] = {}
        # (session key, typed prompt) -> the family it opened, or the family a title opened ahead of it.
        self._asks: dict[tuple[str, str], str] = {}
        # The `_asks` keys written for each family (turn id), so an evicted family's go without a scan.
        self._asked_by: dict[str, list[tuple[str, str]]] = {}
        # The request last fingerprinted (the one at hand) and its fingerprint.
        self._fp_request: ChatRequest | None = None
        self._fp: str | None = None
        self._looked: tuple[ChatRequest, Mapping[str, Any] | None, tuple[tuple[str, ...], str, bool]] | None
        self._looked = None
        # The request that last opened a turn, with its session key and typed prompt (`prompt_key`).
        self._opened: tuple[ChatRequest, str | None, str] | None = None

    def __len__(self) -> int:
        return len(self.families)

    # ------------------------------------------------------------------------------ lookups

    def get(self, turn_id: str | None) -> Family | None:
        return self.families.get(turn_id) if turn_id else None

    def fingerprint(self, request: ChatRequest) -> str | None:
        """The credentials fingerprint of `request` (None without an auth header)."""
        if request is not self._fp_request:
            self._fp = self._fingerprint(request.headers)
            self._fp_request = request
        return self._fp

    def key_of(self, request: ChatRequest) -> str | None:
        """The session key (see the module contract)."""
        if request.session_id:
            return request.session_id
        fp = self.fingerprint(request)
        return None if fp is None else _CREDS + fp  # as `_open` makes it too, from the same fingerprint

    def prompt_key(self, request: ChatRequest) -> tuple[str, str] | None:
        """(session key, typed prompt) of a request whose latest message is a new user message."""
        if not request.is_new_user_message:
            return None
        opened = self._opened
        if opened is not None and opened[0] is request:  # the turn `place` just opened: known
            key, typed = opened[1], opened[2]
        else:
            key = self.key_of(request)
            typed = prompt_text(request.last_user_text) if key is not None else ""
        return None if key is None else (key, typed)

    def session_family(self, session_id: str | None, now: float) -> Family | None:
        if not session_id:
            return None
        turn_id = self._sessions.get(session_id)
        fam = self.families.get(turn_id) if turn_id else None  # `get`
        if fam is None or now - fam.last_seen > self.window:
            return None
        return fam

    def _live(self, fam: Family | None, now: float) -> bool:
        return fam is not None and now - fam.last_seen <= self.window

    def _subagent_parent(self, request: ChatRequest, text: str, now: float) -> tuple[Family, Call] | None:
        typed = prompt_text(text)
        if not typed:
            return None
        sid = request.session_id
        creds = None if sid else self.fingerprint(request)
        if not sid and creds is None:
            return None
        digest = prompt_digest(typed)
        best: tuple[Family, Call] | None = None
        for cid, turn in self._agents.items():
            fam = self.families.get(turn)
            call = fam.calls.get(cid) if fam is not None else None
            if fam is None or call is None or not self._live(fam, now):
                continue
            if (fam.session_id != sid) if sid else (fam.creds != creds):
                continue
            # The whole prompt, by digest; a call known only by the start of its prompt (rebuilt from a
            # log without a digest: the text before a redaction, see `turns.rebuild`) by that start.
            if call.digest:
                matches = call.digest == digest
            else:
                matches = bool(call.prompt) and typed.startswith(call.prompt)
            if matches and (best is None or fam.last_seen >= best[0].last_seen):
                best = (fam, call)
        return best

    def _look(
        self, request: ChatRequest, body: Mapping[str, Any] | None
    ) -> tuple[tuple[str, ...], str, bool]:
        """What placing reads first: the calls `request` answers, its latest user text, and (when it
        answers none) whether it is a title request. Kept for the request at hand: `awaited_prompt`
        and `place` ask about the same request one after the other (`place` reads it back itself)."""
        answered = answered_calls(request)
        text = request.last_user_text
        seen = answered, text, not answered and is_title_request(request, body, text)
        self._looked = (request, body, seen)
        return seen

    # ------------------------------------------------------------------------------ titles ahead

    def awaited_prompt(
        self, request: ChatRequest, now: float, body: Mapping[str, Any] | None = None
    ) -> tuple[str, str] | None:
        """For a title request that quotes a prompt no live family has opened with yet (`place` would
        open a family ahead of its turn): the (session key, typed prompt) that `prompt_key` gives the
        request typing that prompt. None for any other request."""
        answered, text, title = self._look(request, body)
        if answered or not title:
            return None
        quoted = quoted_prompt(text)
        key = self.key_of(request) if quoted else None
        if quoted is None or key is None:
            return None
        typed = prompt_text(quoted)
        fam = self.get(self._asks.get((key, typed)))
        if fam is not None and self._live(fam, now) and not fam.ahead:
            return None
        return key, typed

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
        current = self.session_family(sid, now) if sid else None
        if count_tokens:
            if current is None:
                return Placement("count_tokens", None, sid, "no live family for this session")
            return self._join(current, now, "count_tokens", sid, "same session id")
        if request.client_kind is not None:
            return self._place_declared(request, now, request.client_kind, current)
        looked = self._looked  # `_look`, kept from `awaited_prompt` when it asked about this request
        if looked is not None and looked[0] is request and looked[1] is body:
            answered, text, title = looked[2]
        else:
            answered, text, title = self._look(request, body)
        if answered:
            return self._place_result(request, now, answered, current)
        if title:
            return self._place_title(request, now, text, current)
        if request.protocol == "gemini" and is_utility_request(request, body):  # Gemini's alone
            return self._follow(current, now, "utility", sid, request)
        # A summary needs a family to summarise: with none, a person's own "summarize..." opens a turn.
        new = request.is_new_user_message
        codex_kind = (
            codex_request_kind(request.headers) if "x-codex-turn-metadata" in request.headers else None
        )
        client_says = codex_kind is not None and codex_kind != "turn"
        if client_says or ((current is not None or not new) and summary_worded(text)):
            return self._follow(current, now, "summary", sid, request)
        if new:
            users = [m for m in request.messages if m.role == "user"] if self._agents else []
            if len(users) == 1:
                found = self._subagent_parent(request, users[0].content, now)
                if found is not None:
                    fam, call = found
                    fam.seen(now)
                    self.families.move_to_end(fam.turn_id)
                    why = f"first user message is the input of {call.name} call {call.id}"
                    return Placement(
                        "subagent",
                        fam.turn_id,
                        sid,
                        why,
                        tools=(call.name,),
                        parent_call=call.id,
                        subagent_type=call.subagent_type,
                    )
            same_len = current is not None and current.opening_len == len(request.messages)
            if same_len and current is not None and current.ask in (text, without_nudge(text)):
                return self._join(current, now, "retry", sid, "repeats the opening message of the turn")
            sent = client_continuation(text, clean=client_text)
            if sent is not None:
                return self._continue(current, now, sid, request, sent)
            return self._open(request, now, sid, text)
        return self._follow(current, now, "continuation", sid, request)

    def _place_declared(
        self, request: ChatRequest, now: float, kind: str, current: Family | None
    ) -> Placement:
        """A request whose kind its client's protocol fields declare (Cursor): no reading of wording."""
        sid = request.session_id
        if kind == "new_turn":
            return self._open(request, now, sid, request.last_user_text)
        if kind in ("title", "summary", "subagent"):
            return self._follow(current, now, kind, sid, request)  # type: ignore[arg-type]
        return self._follow(current, now, "continuation", sid, request)

    def _continue(
        self, current: Family | None, now: float, sid: str | None, request: ChatRequest, sent: ClientText
    ) -> Placement:
        """A continuation the client sent on its own (`turns.client_texts`) joins the turn it continues."""
        placed = self._follow(current, now, "continuation", sid, request)
        link = f"{sent.client}'s own continuation ({sent.when}); {placed.link}"
        said = sent.failure or "neutral"
        return Placement("continuation", placed.turn_id, sid, link, sent=said)

    def _place_title(self, request: ChatRequest, now: float, text: str, current: Family | None) -> Placement:
        sid = request.session_id
        quoted = quoted_prompt(text)
        key = self.key_of(request) if quoted else None
        if quoted is None or key is None:
            return self._follow(current, now, "title", sid, request)
        typed = prompt_text(quoted)
        fam = self.get(self._asks.get((key, typed)))
        if fam is not None and self._live(fam, now):
            if fam.ahead:
                return self._join(fam, now, "title", sid, "quotes the prompt an earlier title quoted")
            return self._join(fam, now, "title", sid, f"quotes the opening message of turn {fam.turn_id}")
        fam = self._new_family(request, now, sid, session_pointer=False, ahead_of=typed)
        self._ask((key, typed), fam.turn_id)
        why = "no live family opened with the prompt it quotes: opened ahead of its turn"
        return Placement("title", fam.turn_id, sid, why, quoted=quoted)

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
        fam.seen(now)
        self.families.move_to_end(fam.turn_id)
        return Placement("tool_result", fam.turn_id, sid, link, answered, names)

    def _follow(
        self, current: Family | None, now: float, kind: Kind, sid: str | None, request: ChatRequest
    ) -> Placement:
        if current is not None:
            return self._join(current, now, kind, sid, "same session id")
        fam = self._new_family(request, now, sid)
        return Placement(kind, fam.turn_id, sid, "no live family to join; opened without a TurnOpened")

    def _join(self, fam: Family, now: float, kind: Kind, sid: str | None, link: str) -> Placement:
        fam.seen(now)
        self.families.move_to_end(fam.turn_id)
        return Placement(kind, fam.turn_id, sid, link)

    def _open(self, request: ChatRequest, now: float, sid: str | None, text: str) -> Placement:
        typed = client_text(text).strip()  # `prompt_text`
        # `key_of`, written out: the new family keeps the same fingerprint as its credentials.
        creds = self.fingerprint(request)
        key = sid or (None if creds is None else _CREDS + creds)
        asked = self._asks.get((key, typed)) if key is not None else None
        ahead = self.families.get(asked) if asked is not None else None
        messages = len(request.messages)
        if ahead is not None and ahead.ahead and self._live(ahead, now):
            # Its title request came first and opened the family: the turn opens in it.
            fam, link = ahead, "a new user message opens a turn (its title request came first)"
            fam.seen(now)
            if sid:
                self._sessions[sid] = fam.turn_id
            self.families.move_to_end(fam.turn_id)
            fam.opens(text, typed, messages)
        else:  # `_new_family`, opened by `text` (`Family.opens`)
            fam = self.add(Family(self._new_id(), sid, now, now, text, messages, typed=typed, creds=creds))
            link = "a new user message opens a turn"
        if key is not None and typed:  # `asked(fam, key)`: the prompt a title may quote
            self._ask((key, typed), fam.turn_id)
        self._opened = (request, key, typed)
        return Placement("new_turn", fam.turn_id, sid, link)

    def _new_family(
        self,
        request: ChatRequest,
        now: float,
        sid: str | None,
        *,
        session_pointer: bool = True,
        ahead_of: str | None = None,
    ) -> Family:
        """A new family for `request` (`ahead_of`: the typed prompt a title opens it ahead of)."""
        ahead = ahead_of is not None
        fam = Family(
            self._new_id(), sid, now, now, typed=ahead_of or "", creds=self.fingerprint(request), ahead=ahead
        )
        return self.add(fam, session_pointer=session_pointer)

    # ------------------------------------------------------------------------------ recording

    def _ask(self, key: tuple[str, str], turn_id: str) -> None:
        self._asks[key] = turn_id
        keys = self._asked_by.get(turn_id)
        if keys is None:
            self._asked_by[turn_id] = [key]
        elif key not in keys:
            keys.append(key)

    def restore(self, turn_id: str, session_id: str | None, at: float, ask: str, messages: int = 0) -> Family:
        """Keep the family a logged `TurnOpened` opened (`turns.rebuild`) and remember its prompt."""
        typed = prompt_text(ask) if ask else ""
        fam = self.add(Family(turn_id, session_id, at, at, ask=ask, opening_len=messages, typed=typed))
        self.asked(fam)
        return fam

    def asked(self, fam: Family, key: str | None = None) -> None:
        """Remember the prompt that opened `fam`, so a title quoting it finds the family."""
        key = key if key is not None else (fam.session_id or (f"creds:{fam.creds}" if fam.creds else None))
        if key is not None and fam.typed:
            self._ask((key, fam.typed), fam.turn_id)

    def add(self, fam: Family, *, session_pointer: bool = True) -> Family:
        """Keep `fam` (the most recently seen); the least recently seen go past `max_families`."""
        families = self.families
        families[fam.turn_id] = fam
        families.move_to_end(fam.turn_id)
        if fam.session_id and session_pointer:
            self._sessions[fam.session_id] = fam.turn_id
        for cid in fam.calls:
            self._calls[cid] = fam.turn_id
        while len(families) > self.max_families:
            _, old = families.popitem(last=False)
            if old.session_id and self._sessions.get(old.session_id) == old.turn_id:
                del self._sessions[old.session_id]
            for cid in old.calls:
                if self._calls.get(cid) == old.turn_id:
                    del self._calls[cid]
                self._agents.pop(cid, None)
            for k in self._asked_by.pop(old.turn_id, ()):
                if self._asks.get(k) == old.turn_id:
                    del self._asks[k]
        return fam

    def served(self, turn_id: str | None, side: str, backend: str | None, model: str | None) -> None:
        """The side/backend/model that answered the family's latest request."""
        fam = self.get(turn_id)
        if fam is not None:
            fam.sent_to(side, backend, model)

    def issued(
        self,
        turn_id: str | None,
        call_id: str,
        name: str,
        prompt: str = "",
        *,
        digest: str = "",
        subagent_type: str | None = None,
        prefix: bool = False,
    ) -> None:
        """A reply served in the family issued this tool call (who served it: the family's side).
        An Agent/Task call's `prompt` is kept capped; `digest` is that of the whole prompt (made from
        `prompt` when not given, unless `prompt` is only the start of it: `prefix`, or capped)."""
        fam = self.get(turn_id)
        if fam is None or not call_id:
            return
        if prompt and not digest and not prefix and len(prompt) < PROMPT_CAP:
            digest = prompt_digest(prompt)
        prompt = prompt[:PROMPT_CAP]
        fam.calls[call_id] = Call(
            call_id, name, fam.side, fam.backend, fam.model, prompt, False, digest, subagent_type
        )
        fam.open_calls.add(call_id)
        self._calls[call_id] = fam.turn_id
        if prompt:
            self._agents[call_id] = fam.turn_id

    def family_of_call(self, call_id: str) -> Family | None:
        turn_id = self._calls.get(call_id)
        return self.families.get(turn_id) if turn_id else None  # `get`

    def _record_answers(
        self, fam: Family, request: ChatRequest, answered: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Mark the calls answered; calls seen only now (echoed in the request) join the family."""
        unseen = False  # a loop: no generator frame for the usual one or two answered calls
        for cid in answered:
            if self.family_of_call(cid) is None:
                unseen = True
                break
        echoed = {c.id: c.name for m in request.messages for c in m.tool_calls} if unseen else {}
        names: list[str] = []
        for cid in answered:
            call = self.answer(fam, cid, echoed.get(cid, ""))
            if call.name and call.name not in names:
                names.append(call.name)
        return tuple(names)

    def answer(self, fam: Family, cid: str, name: str = "") -> Call:
        """Mark call `cid` answered, in the family that issued it (`fam`, named `name`, when none did)."""
        owner = self.family_of_call(cid) or fam
        call = owner.calls.get(cid)
        if call is None:
            call = owner.calls[cid] = Call(cid, name, fam.side, fam.backend, fam.model)
            self._calls[cid] = owner.turn_id
        call.mark_answered()
        owner.open_calls.discard(cid)
        self._agents.pop(cid, None)
        return call

    def pending(self, turn_id: str | None) -> int:
        fam = self.get(turn_id)
        return 0 if fam is None else len(fam.open_calls)

    def rebuild_event(self, event: Mapping[str, Any]) -> None:
        """Fold one logged event (oldest first) into the index (see `turns.rebuild`)."""
        rebuild_event(self, event)
