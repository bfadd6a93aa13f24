"""What answered a request, for `turns.lifecycle.Turns.close` (apart so each module stays small).

- `Served`: the backend that answered (after any fallback), its side, model and status, the usage it
  reported, what an estimate is made from when it reported none (`sent_tokens`: the request as that
  backend was sent it, bytes/4, the pack for a local one; `text_bytes`: the text, thinking and tool
  arguments of the reply, never its framing), the time, whether the reply completed, was answered at
  all or the client left, how it ended when not well (`end`), whether it stopped at the output-token
  limit (`at_limit`), the tool calls it issued, and `escalated`, the reason a local answer that could
  not be used was replaced (`proxy.escalate`); `outcome()` is the outcome event's data
  (`stopped_at_limit: true` when it did).
- `LastPlans`: the last plan recorded per turn, so a plan is logged (`TurnContext`) when it changes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from glider_cli.protocol.reply_tap import IssuedCall
from glider_cli.values import Frozen

__all__ = ["LastPlans", "Served"]


class Served(Frozen):
    """What answered a request and how it went (see the module contract)."""

    backend: str | None
    side: str
    model: str | None
    status: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    ms: float = 0.0
    complete: bool = True
    answered: bool = True
    disconnected: bool = False
    fallback_from: str | None = None
    calls: Sequence[IssuedCall] = ()
    cache: Mapping[str, Any] = MappingProxyType({})
    text_bytes: int | None = None
    sent_tokens: int | None = None
    end: str | None = None
    at_limit: bool = False
    escalated: str | None = None

    def __init__(
        self,
        backend: str | None,
        side: str,
        model: str | None,
        status: int,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        ms: float = 0.0,
        complete: bool = True,
        answered: bool = True,
        disconnected: bool = False,
        fallback_from: str | None = None,
        calls: Sequence[IssuedCall] = (),
        cache: Mapping[str, Any] | None = None,
        text_bytes: int | None = None,
        sent_tokens: int | None = None,
        end: str | None = None,
        at_limit: bool = False,
        escalated: str | None = None,
    ) -> None:
        self.__dict__.update(
            backend=backend,
            side=side,
            model=model,
            status=status,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            ms=ms,
            complete=complete,
            answered=answered,
            disconnected=disconnected,
            fallback_from=fallback_from,
            calls=calls,
            cache={} if cache is None else cache,
            text_bytes=text_bytes,
            sent_tokens=sent_tokens,
            end=end,
            at_limit=at_limit,
            escalated=escalated,
        )

    def outcome(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "backend": self.backend,
            "model": self.model,
            "status": self.status,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "ms": self.ms,
            "complete": self.complete,
        }
        data.update(self.cache)
        if self.fallback_from:
            data["fallback_from"] = self.fallback_from
        if self.disconnected:
            data["client_disconnected"] = True
        if self.end:
            data["outcome"] = self.end
        if self.at_limit:
            data["stopped_at_limit"] = True
        if self.escalated:
            data["escalated"] = self.escalated
        return data


class LastPlans:
    """The last plan recorded per turn (the newest `size` turns), so a plan is logged when it changes."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._last: OrderedDict[str, str] = OrderedDict()

    def changed(self, turn_id: str, ctx: dict[str, Any]) -> bool:
        """False when `ctx` is only a plan, and the plan this turn already has; drops an unchanged plan."""
        plan = ctx.get("plan")
        if plan is None:
            return True
        if self._last.get(turn_id) == plan:
            del ctx["plan"]
            ctx.pop("tool", None)
            return bool(ctx)
        self._last[turn_id] = plan
        self._last.move_to_end(turn_id)
        if len(self._last) > self.size:
            self._last.popitem(last=False)
        return True
