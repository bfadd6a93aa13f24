"""`glider lint`'s window check: a local backend whose configured window the capability gate can never
let a request through.

    small_windows(config) -> [Issue]      # warnings

`glider serve`'s gate gives a local request the output its backend's window leaves after the pack, but
never less than `backends.output_budget.FLOOR` (1,024 tokens) unless the client asks for less: a
`context_window` of 1,024 or under leaves nothing for the pack, so every request an agent sends is
refused that backend (an explicit `/local` gets the gate's error, any other local rule passes it on to
the next rule). `glider doctor` says the same of the window the server reports.
"""

from __future__ import annotations

from glider_cli.backends.output_budget import FLOOR
from glider_cli.config.located import Issue
from glider_cli.config.model import Config

__all__ = ["small_windows"]


def small_windows(config: Config) -> list[Issue]:
    out: list[Issue] = []
    for name, b in config.settings.backends.items():
        if b.side != "local" or b.context_window is None or b.context_window > FLOOR:
            continue
        out.append(
            Issue(
                f"backend {name!r}: context_window {b.context_window:,} leaves no room for a request beside "
                f"the {FLOOR:,} output tokens the gate gives a local reply at least: every request that "
                "asks for more output (every agent's) is refused it",
                file=config.source,
                rule=None,
                key=f"backends.{name}.context_window",
                severity="warning",
            )
        )
    return out
