"""What the turn-family index records once a request was served: who answered (`served`), the tool
calls a reply issued (`issued`, an Agent/Task call's prompt capped, its digest kept), the prompt that
opened a family (`asked`, for titles that quote it) and how many calls are unanswered (`pending`).
`Recording` is a base of `turns.families.FamilyIndex`, whose state (`families`, `_calls`,
`_agents`, `_asks`) it updates; kept apart so each module stays small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glider_cli.protocol.request_kinds import PROMPT_CAP, prompt_digest
from glider_cli.router.triggers import client_text
from glider_cli.turns.records import Call, Family

if TYPE_CHECKING:
    from collections import OrderedDict


def prompt_text(text: str) -> str:
    """A user message's text as the person typed it, for comparing prompts (title quotes, subagents)."""
    return client_text(text).strip()


class Recording:
    """The recording half of `FamilyIndex` (see the module contract)."""

    families: OrderedDict[str, Family]
    _calls: dict[str, str]
    _agents: dict[str, str]
    _asks: dict[tuple[str, str], str]

    def get(self, turn_id: str | None) -> Family | None:
        return self.families.get(turn_id) if turn_id else None

    def asked(self, fam: Family, key: str | None = None) -> None:
        """Remember the prompt that opened `fam`, so a title quoting it finds the family."""
        key = key if key is not None else (fam.session_id or (f"creds:{fam.creds}" if fam.creds else None))
        if not fam.typed and fam.ask:
            fam.typed = prompt_text(fam.ask)
        if key is not None and fam.typed:
            self._asks[(key, fam.typed)] = fam.turn_id

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

    def pending(self, turn_id: str | None) -> int:
        fam = self.get(turn_id)
        return 0 if fam is None else len(fam.open_calls)
