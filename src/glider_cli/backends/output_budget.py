"""The output a local request gets: what its backend's window leaves after the pack.

A client's `max_tokens` is a ceiling, not a need: Claude Code asks for 32,000-128,000 output tokens
on every request, which no small local window holds. `output_budget(window, tokens, asked, cap)`:

- `ceiling`: the least of the client's `max_tokens` (`asked`) and the backend's own (`cap`), of
  those given; None when neither is.
- A ceiling that fits beside the pack (`tokens + ceiling <= window`) is given as it is.
- Otherwise the request gets `room`: the window less the pack and a tenth of the pack (the pack's
  size is an estimate, and a server such as vLLM refuses a prompt plus `max_tokens` over its window),
  as long as that is at least `need` — `FLOOR` (1,024 tokens), or the ceiling when that is smaller.
  Below it the backend cannot take the request (`refused`, in the gate's words).
- `given` is the `max_tokens` the request is sent with (`proxy.outgoing`); None leaves the
  request's own (no ceiling: the server's default, the rest of its window). `note` says what was
  cut, for the decision's trace and `glider route explain`.
Pure: no I/O.
"""

from __future__ import annotations

from glider_cli.values import Frozen, init_fields

__all__ = ["FLOOR", "OutputBudget", "output_budget"]

# The least output a local reply is given when its window is what limits it: below this the gate
# refuses the backend rather than send a request whose answer would be cut off at once.
FLOOR = 1024


class OutputBudget(Frozen):
    """See the module contract. `what` names the size: "pack 616 tokens" or "request 616 tokens"."""

    window: int
    tokens: int
    ceiling: int | None
    room: int
    given: int | None
    refused: str | None
    what: str

    def __init__(
        self,
        window: int,
        tokens: int,
        ceiling: int | None,
        room: int,
        given: int | None,
        refused: str | None,
        what: str,
    ) -> None:
        init_fields(self, window, tokens, ceiling, room, given, refused, what)

    @property
    def trimmed(self) -> bool:
        """The request's `max_tokens` is cut below its ceiling to fit the window."""
        return self.given is not None and self.ceiling is not None and self.given < self.ceiling

    @property
    def note(self) -> str | None:
        """What the trace says of a cut `max_tokens`; None when nothing was cut."""
        if not self.trimmed or self.ceiling is None or self.given is None:
            return None
        return (
            f"max_tokens {self.ceiling:,} cut to {self.given:,}: what window {self.window:,} leaves "
            f"after the {self.what} (+10% margin)"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "window": self.window,
            "input_tokens": self.tokens,
            "ceiling": self.ceiling,
            "room": self.room,
            "given": self.given,
            "floor": FLOOR,
            "refused": self.refused,
            "note": self.note,
        }


def output_budget(
    window: int, tokens: int, asked: int | None, cap: int | None, *, what: str | None = None
) -> OutputBudget:
    """See the module contract."""
    limits = [x for x in (asked, cap) if x]
    ceiling = min(limits) if limits else None
    what = what or f"pack {tokens:,} tokens"
    room = window - tokens - tokens // 10
    if ceiling is not None and tokens + ceiling <= window:
        return OutputBudget(window, tokens, ceiling, room, ceiling, None, what)
    need = FLOOR if ceiling is None else min(ceiling, FLOOR)
    if room < need:
        if need < FLOOR:  # a small ceiling that does not fit beside the pack: no margin was asked for
            refused = f"{what} + {need:,} output > window {window:,}"
        else:
            refused = f"{what} (+10%) + {need:,} output (the least a local reply gets) > window {window:,}"
        return OutputBudget(window, tokens, ceiling, room, None, refused, what)
    return OutputBudget(window, tokens, ceiling, room, room if ceiling is not None else None, None, what)
