"""What the turn-family index records: the families it keeps (`add`, least recently seen evicted
past `max_families`, with their call ids, session pointers and prompts), who answered (`served`),
the tool calls a reply issued (`issued`, an Agent/Task call's prompt capped, its digest kept) and
those a request answers (`answer`, `family_of_call`: the family that issued a call), the
prompt that opened a family (`asked`, for titles that quote it: `prompt_key` is a request's key for
it) and how many calls are unanswered (`pending`). `Recording` is a base of
`turns.families.FamilyIndex`, whose state (`families`, `_sessions`, `_calls`, `_agents`, `_asks`)
it updates; kept apart so each module stays small.

A request's session key (`key_of`) is its session id, or the credentials fingerprint
(`turns.request_kinds.credentials_fingerprint`) of its auth header; the fingerprint of the request
at hand is kept (`fingerprint`): one request is hashed once, however often it is asked about.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glider_cli.domain import ChatRequest
from glider_cli.router.triggers import client_text
from glider_cli.turns.records import Call, Family
from glider_cli.turns.request_kinds import PROMPT_CAP, credentials_fingerprint, prompt_digest

if TYPE_CHECKING:
    from collections import OrderedDict


def prompt_text(text: str) -> str:
    """A user message's text as the person typed it, for comparing prompts (title quotes, subagents)."""
    return client_text(text).strip()


class Recording:
    """The recording half of `FamilyIndex` (see the module contract)."""

    max_families: int
    families: OrderedDict[str, Family]
    _key: bytes
    _sessions: dict[str, str]
    _calls: dict[str, str]
    _agents: dict[str, str]
    _asks: dict[tuple[str, str], str]
    # The `_asks` keys written for each family (turn id), so an evicted family's go without a scan.
    _asked_by: dict[str, list[tuple[str, str]]]
    # The request last fingerprinted (the one at hand) and its fingerprint.
    _fp_request: ChatRequest | None = None
    _fp: str | None = None

    def get(self, turn_id: str | None) -> Family | None:
        return self.families.get(turn_id) if turn_id else None

    def fingerprint(self, request: ChatRequest) -> str | None:
        """The credentials fingerprint of `request` (None without an auth header)."""
        if request is not self._fp_request:
            self._fp = credentials_fingerprint(request.headers, self._key)
            self._fp_request = request
        return self._fp

    def key_of(self, request: ChatRequest) -> str | None:
        """The session key (see the module contract)."""
        if request.session_id:
            return request.session_id
        fp = self.fingerprint(request)
        return None if fp is None else "creds:" + fp

    def prompt_key(self, request: ChatRequest) -> tuple[str, str] | None:
        """(session key, typed prompt) of a request whose latest message is a new user message."""
        if not request.is_new_user_message:
            return None
        key = self.key_of(request)
        return None if key is None else (key, prompt_text(request.last_user_text))

    def _ask(self, key: tuple[str, str], turn_id: str) -> None:
        self._asks[key] = turn_id
        keys = self._asked_by.get(turn_id)
        if keys is None:
            self._asked_by[turn_id] = [key]
        elif key not in keys:
            keys.append(key)

    def asked(self, fam: Family, key: str | None = None) -> None:
        """Remember the prompt that opened `fam`, so a title quoting it finds the family."""
        key = key if key is not None else (fam.session_id or (f"creds:{fam.creds}" if fam.creds else None))
        if not fam.typed and fam.ask:
            fam.typed = prompt_text(fam.ask)
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
            fam.side, fam.backend, fam.model = side, backend, model

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
        return self.get(self._calls.get(call_id))

    def _record_answers(
        self, fam: Family, request: ChatRequest, answered: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Mark the calls answered; calls seen only now (echoed in the request) join the family."""
        unseen = any(self.family_of_call(cid) is None for cid in answered)
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
        call.answered = True
        owner.open_calls.discard(cid)
        self._agents.pop(cid, None)
        return call

    def pending(self, turn_id: str | None) -> int:
        fam = self.get(turn_id)
        return 0 if fam is None else len(fam.open_calls)
