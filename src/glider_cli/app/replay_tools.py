"""Tool steps in `glider route replay`: the `ToolStepDecided` records of an event log (each tool step
of a Cursor turn: applied for a local turn, recorded only for a turn Cursor ran) decided again by a
config's `routing.tool_followup`, so `--against` shows what a policy would change.

`load_tool_steps(files)` reads every JSONL line of the files that is such an event (other events and
request lines are left to `app.replay_input`); `decide(steps, config)` gives each step's verdict
("allow" / "deny"); `compare(steps, a, b)` lists the steps two configs decide differently. Reading
the files is the only I/O (a file that cannot be read is `replay_input`'s error to report).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glider_cli.store.eventlog.events import TOOL_STEP_DECIDED
from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.config.model import Config

EVENT = TOOL_STEP_DECIDED


class ToolStep(Frozen):
    index: int
    where: str
    tool: str
    side: str
    recorded: str

    def __init__(self, index: int, where: str, tool: str, side: str, recorded: str) -> None:
        init_fields(self, index, where, tool, side, recorded)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "where": self.where, "tool": self.tool, "side": self.side}


def is_event_line(obj: Any) -> bool:
    """An event log line (`type` and `data`, no request `body`)."""
    return isinstance(obj, dict) and "type" in obj and "data" in obj and "body" not in obj


def load_tool_steps(files: Sequence[str]) -> list[ToolStep]:
    out: list[ToolStep] = []
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except OSError:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if EVENT not in line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            data = obj.get("data") if is_event_line(obj) and obj.get("type") == EVENT else None
            if isinstance(data, dict) and isinstance(data.get("tool"), str):
                side, recorded = str(data.get("side") or "?"), str(data.get("decision") or "?")
                out.append(ToolStep(len(out) + 1, f"{name}:{lineno}", data["tool"], side, recorded))
    return out


def decide(steps: Sequence[ToolStep], config: Config) -> list[str]:
    from glider_cli.router.tool_policy import Policy

    follow = config.settings.tool_followup
    policy = Policy(follow.allowlist, follow.denylist)
    return [policy.verdict(s.tool)[0] for s in steps]


def compare(steps: Sequence[ToolStep], a: Sequence[str], b: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"index": s.index, "where": s.where, "tool": s.tool, "side": s.side, "from": x, "to": y}
        for s, x, y in zip(steps, a, b, strict=True)
        if x != y
    ]
