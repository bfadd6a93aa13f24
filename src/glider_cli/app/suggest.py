"""`glider route suggest` as a core function: config edits the recorded traffic argues for, each checked
by replaying that traffic against the changed config. It never writes a file.

    suggest(config, turns, days) -> Suggestions       # turns: app.suggest_input.recorded_turns(...)

From the recorded turns of the last `days` days (`app.suggest_input`: each turn's rebuilt request, its
rule, side, cost, savings and regret), per rule of the config the user wrote (a rule with a file and
line; built-in rules get a note instead):
- `tighten_context`: a local `context_size` rule (`<` / `<=`) with at least `MIN_TURNS` local turns and a
  regret rate of at least `REGRET_RATE`: its value lowered to just below the smallest regretted turn's
  size (rounded down to 100 tokens), so the requests like the regretted ones go on to the rules below;
- `to_cloud`: any other local rule (regex, script, always) past the same thresholds: its action sent
  to the cloud;
- `widen_context`: a local `context_size` rule with at least `WIDEN_TURNS` local turns and no regret: its
  value raised by half (and a cloud `context_size` rule of higher priority that would take those
  requests first raised with it), so more of the requests just above it are answered locally.
Each candidate is checked by replaying every recorded request (`app.replay.replay`) against the
config and against the changed one (the rule replaced in memory, as the snippet would change it) and
comparing them (`app.replay.compare`): the effect is the turns that change side (to the cloud, to
local), the regretted turns among those leaving local, and the change in estimated savings (minus the
savings of the turns moved to the cloud; plus, for the turns moved local, what they cost in the cloud —
both estimates). A candidate whose replay moves no turn is dropped. The rebuilt requests are checked
too: `reproduced` counts the recorded turns whose replay against the unchanged config decides the
recorded rule.

A suggestion (`to_dict()`): rule, kind, where (the rule's file:line), evidence (local_turns, regrets,
regret_rate, savings), change (a sentence), snippet (YAML to paste under the config: an entry of
`routing.rules` with the rule's name overrides that rule's keys in a config that extends a profile),
effect (moved_to_cloud, moved_to_local, regrets_moved, savings_change) and summary (one line).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from glider_cli.values import Frozen, init_fields, replace

if TYPE_CHECKING:
    from glider_cli.app.suggest_input import RecordedTurn
    from glider_cli.config.model import Config, Rule

MIN_TURNS = 5
REGRET_RATE = 0.2
WIDEN_TURNS = 20
WIDEN_BY = 1.5


class Suggestion(Frozen):
    rule: str
    kind: str
    where: str | None
    evidence: dict[str, Any]
    change: str
    snippet: str
    effect: dict[str, Any]
    summary: str

    def __init__(
        self,
        rule: str,
        kind: str,
        where: str | None,
        evidence: dict[str, Any],
        change: str,
        snippet: str,
        effect: dict[str, Any],
        summary: str,
    ) -> None:
        init_fields(self, rule, kind, where, evidence, change, snippet, effect, summary)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "kind": self.kind,
            "where": self.where,
            "evidence": self.evidence,
            "change": self.change,
            "snippet": self.snippet,
            "effect": self.effect,
            "summary": self.summary,
        }


class Suggestions(Frozen):
    days: int
    config: str
    turns: int
    reproduced: int
    suggestions: tuple[Suggestion, ...]
    notes: tuple[str, ...]

    def __init__(
        self,
        days: int,
        config: str,
        turns: int,
        reproduced: int,
        suggestions: tuple[Suggestion, ...],
        notes: tuple[str, ...],
    ) -> None:
        init_fields(self, days, config, turns, reproduced, suggestions, notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "config": self.config,
            "turns": self.turns,
            "reproduced": self.reproduced,
            "suggestions": [s.to_dict() for s in self.suggestions],
            "notes": list(self.notes),
        }


def _money(v: float) -> str:
    sign = "−" if v < 0 else "+"
    return f"{sign}${abs(v):,.2f}"


def _snippet(entries: list[dict[str, Any]]) -> str:
    import yaml

    text: str = yaml.safe_dump({"routing": {"rules": entries}}, sort_keys=False, default_flow_style=None)
    return text


def _sized(rule: Rule, value: int) -> tuple[Rule, dict[str, Any]]:
    """The rule with its context_size value changed, and its snippet entry."""
    trig = rule.trigger
    entry = {
        "name": rule.name,
        "trigger": {"type": "context_size", "operator": trig.operator, "value": value},
    }
    return replace(rule, trigger=replace(trig, value=value)), entry


Candidate = tuple[str, list["Rule"], str, str]


def _candidates(config: Config, rule: Rule, mine: Sequence[RecordedTurn]) -> list[Candidate]:
    """(kind, changed rules, change sentence, snippet) for one local rule and its recorded turns."""
    local = [t for t in mine if t.local]
    regretted = [t for t in local if t.regretted]
    rate = len(regretted) / len(local) if local else 0.0
    trig = rule.trigger
    out: list[Candidate] = []
    sized = trig.type == "context_size" and trig.operator in ("<", "<=") and trig.value is not None
    if len(local) >= MIN_TURNS and rate >= REGRET_RATE:
        if sized:
            assert trig.value is not None
            smallest = min(t.tokens for t in regretted)
            value = max(0, (smallest - 1) // 100 * 100)
            if value < trig.value:
                changed, entry = _sized(rule, value)
                change = f"lower its `{trig.operator} {trig.value}` to `{trig.operator} {value}` tokens"
                out.append(("tighten_context", [changed], change, _snippet([entry])))
        else:
            changed = replace(rule, action=replace(rule.action, target="cloud", backend=None, model=None))
            entry = {"name": rule.name, "action": {"target": "cloud"}}
            out.append(("to_cloud", [changed], "send what it matches to the cloud", _snippet([entry])))
    elif sized and len(local) >= WIDEN_TURNS and not regretted:
        assert trig.value is not None
        value = int(trig.value * WIDEN_BY) // 100 * 100
        changed, entry = _sized(rule, value)
        rules, entries = [changed], [entry]
        change = f"raise its `{trig.operator} {trig.value}` to `{trig.operator} {value}` tokens"
        # A cloud size rule above it that takes the same requests first moves up with it.
        for r in config.rules:
            t = r.trigger
            if (
                r.enabled
                and r.priority > rule.priority
                and r.action.target == "cloud"
                and t.type == "context_size"
                and t.operator in (">", ">=")
                and t.value is not None
                and t.value < value
            ):
                moved, e = _sized(r, value)
                rules.append(moved)
                entries.append(e)
                change += f", and `{r.name}`'s `{t.operator} {t.value}` to `{t.operator} {value}`"
        out.append(("widen_context", rules, change, _snippet(entries)))
    return out


def suggest(config: Config, turns: Sequence[RecordedTurn], days: int) -> Suggestions:
    """See the module contract."""
    from glider_cli.app.replay import compare, replay

    requests = [t.request for t in turns]
    base = replay(requests, config) if requests else []
    reproduced = sum(1 for t, s in zip(turns, base, strict=True) if s.rule == t.rule)
    by_rule: dict[str, list[RecordedTurn]] = {}
    for t in turns:
        by_rule.setdefault(t.rule, []).append(t)
    notes: list[str] = []
    found: list[Suggestion] = []
    names = {r.name for r in config.rules}
    for rule_name, mine in sorted(by_rule.items()):
        local = [t for t in mine if t.local]
        regrets = sum(t.regretted for t in local)
        if rule_name not in names:
            if local and regrets / len(local) >= REGRET_RATE and len(local) >= MIN_TURNS:
                notes.append(
                    f"rule `{rule_name}` (built in, or no longer in the config) sent {len(local)} turns "
                    f"local with {regrets / len(local):.0%} regret; no edit is proposed for it"
                )
            continue
        rule = next(r for r in config.rules if r.name == rule_name)
        if rule.action.target != "local":
            continue
        evidence = {
            "local_turns": len(local),
            "regrets": regrets,
            "regret_rate": round(regrets / len(local), 4) if local else None,
            "savings": round(sum(t.savings for t in local), 6),
        }
        for kind, changed, change, snippet in _candidates(config, rule, mine):
            by_name = {r.name: r for r in changed}
            rules = tuple(by_name.get(r.name, r) for r in config.rules)
            after = replay(requests, replace(config, rules=rules))
            moved_cloud = moved_local = regrets_moved = 0
            delta = 0.0
            for c in compare(base, after):
                side = c.changed.get("side")
                if side is None:
                    continue
                t = turns[c.index - 1]
                if side == ("local", "cloud"):
                    moved_cloud += 1
                    regrets_moved += t.regretted
                    delta -= t.savings
                elif side == ("cloud", "local"):
                    moved_local += 1
                    delta += t.cloud_cost
            if not (moved_cloud or moved_local):
                continue
            effect = {
                "moved_to_cloud": moved_cloud,
                "moved_to_local": moved_local,
                "regrets_moved": regrets_moved,
                "savings_change": round(delta, 6),
            }
            rate = f"{evidence['regret_rate']:.0%}" if evidence["regret_rate"] is not None else "no"
            summary = (
                f"rule `{rule.name}` sent {len(local)} turns local with {rate} regret: {change}; replaying "
                f"the last {days} days with the change moves {moved_cloud + moved_local} turns"
                + (f" ({regrets_moved} of them regretted)" if regrets_moved else "")
                + f", savings {_money(delta)} (estimate)"
            )
            found.append(Suggestion(rule.name, kind, rule.where, evidence, change, snippet, effect, summary))
    return Suggestions(days, config.source, len(turns), reproduced, tuple(found), tuple(notes))
