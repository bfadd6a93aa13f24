"""What `glider lint` finds in the rule sequence itself: gaps, dead rules, adapters, script arity.

Each check takes a loaded `Config` and returns `Issue`s naming the file, the rule and the key:

- `no_catch_all` (error): the enabled rules do not cover every request — no `always` rule, and the
  `context_size` rules leave some sizes out (an empty file, `rules: []`; with `routing.local_only`,
  only the rules it does not skip count). Such a request gets no
  route (`NoRoute`, a 500 "no rule matched"), so a config without a catch-all is refused: by
  `glider lint`, by `glider serve` at start and by a reload.
- `dead_rules` (error): a rule that can never run because rules above it take every request it
  could match — a rule with the same trigger (the same commands or more, the same pattern, the
  same script with the same action), a `context_size` range inside the ranges above it, or rules
  above that cover every request (an `always` rule, complementary `context_size` pairs). A rule
  above only takes a request from one below when the router cannot skip it: a local rule above is
  skipped for a follow-on of a cloud-bound family (deny-local) and when the capability gate refuses
  its backend, so it shadows only local rules on its own backend; script rules above (whose action
  and verdict are the script's) shadow nothing. With `routing.local_only`, a cloud rule that is not
  an explicit command is skipped: it takes nothing, and lint warns that it never runs.
- `tools_shadowed` (warning): a rule of the person's own files below the task classifier's tools rule
  (85), which takes every request that carries tools — every request of Claude Code, Codex and Gemini
  CLI — to the cloud first: the rule runs for requests without tools only. Named with the rule that
  shadows it and its priority.
- `adapters` (error): an `adapter` on a rule whose backend is not a vLLM server (type `openai`
  on the local side) — the adapter would be sent to a server that does not know it.
- `script_arity` (error): a script whose `def evaluate(` does not take exactly one argument, read
  from the source (never by running it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from glider_cli.config.located import Issue
from glider_cli.config.model import Config, Rule
from glider_cli.config.sequence import Entry, sequence

Interval = tuple[float, float]  # inclusive token counts; math.inf for no upper bound
_ALL: tuple[Interval, ...] = ((0, math.inf),)
_DEF_EVALUATE = re.compile(r"^def[ \t]+evaluate[ \t]*\(", re.MULTILINE)


def _tokens(rule: Rule | None) -> tuple[Interval, ...] | None:
    """The token counts a rule matches whatever else the request holds; None: it depends on more."""
    if rule is None:
        return None
    t = rule.trigger
    if t.type == "always":
        return _ALL
    if t.type != "context_size" or t.value is None:
        return None
    v = t.value
    found: dict[str, tuple[Interval, ...]] = {
        ">": ((v + 1, math.inf),),
        ">=": ((v, math.inf),),
        "<": ((0, v - 1),) if v > 0 else (),
        "<=": ((0, v),),
        "==": ((v, v),),
        "=": ((v, v),),
    }
    return found.get(t.operator or ">")


def _covers(ranges: Iterable[Interval], want: tuple[Interval, ...]) -> bool:
    """Whether the union of `ranges` holds every integer of `want`."""
    merged: list[list[float]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return all(any(m[0] <= lo and hi <= m[1] for m in merged) for lo, hi in want)


def _describe(s: Entry) -> str:
    t = s.rule.trigger if s.rule is not None else None
    what = f"{t.operator} {t.value}" if t is not None and t.type == "context_size" else s.kind
    return f"{s.name} ({what}, priority {s.priority})"


def no_catch_all(config: Config) -> list[Issue]:
    covering = [_tokens(s.rule) for s in sequence(config) if s.enabled and not _skipped(config, s)]
    if _covers((r for rs in covering if rs for r in rs), _ALL):
        return []
    what = (
        "no rules"
        if not config.rules
        else "no enabled `always` rule, and the context_size rules leave sizes out"
    )
    if config.routing.local_only and config.rules:
        what += "; routing.local_only skips the cloud ones"
    return [
        Issue(
            f"no rule covers every request ({what}): a request no rule matches gets no route "
            "(a 500 'no rule matched')",
            file=_user_file(config),
            rule=None,
            key="routing.rules",
            hint="add `{name: default, priority: 0, trigger: {type: always}, action: {target: cloud}}`",
        )
    ]


def _backend(config: Config, s: Entry) -> str | None:
    return s.action.backend or config.default_backend(s.target)


def _skipped(config: Config, s: Entry) -> bool:
    """`routing.local_only` skips every cloud rule but an explicit command's."""
    return config.routing.local_only and s.target == "cloud" and s.kind not in ("explicit", "script")


def _blocks(config: Config, above: Entry, below: Entry) -> bool:
    """Whether `above` takes every request it matches away from `below` (see the module contract)."""
    if above.kind == "script" or _skipped(config, above):
        return False
    if above.target == "cloud":
        return True
    below_target = "cloud" if below.kind == "script" else below.target
    return below_target == "local" and _backend(config, above) == _backend(config, below)


def _same_trigger(above: Entry, below: Entry) -> bool:
    a, b = above.rule, below.rule
    if a is None or b is None or a.trigger.type != b.trigger.type:
        return False
    kind = a.trigger.type
    if kind == "explicit":
        return set(b.trigger.commands) <= set(a.trigger.commands)
    if kind == "regex":
        return a.trigger.pattern == b.trigger.pattern
    if kind == "script":
        return a.trigger.file == b.trigger.file and a.action == b.action
    return kind == "composer_wrapup"


def dead_rules(config: Config) -> list[Issue]:
    out: list[Issue] = []
    above: list[Entry] = []
    for s in sequence(config):
        if not s.enabled:
            continue
        if _skipped(config, s):
            out.append(
                Issue(
                    "never runs: routing.local_only sends a request to the cloud only for an explicit "
                    "command (switch the rule off, or drop local_only)",
                    file=s.rule.file if s.rule is not None else _user_file(config),
                    line=s.rule.line if s.rule is not None else None,
                    rule=s.name,
                    key="routing.local_only",
                    severity="warning",
                )
            )
            continue
        blockers = [u for u in above if _blocks(config, u, s)]
        above.append(s)
        found = _why_dead(s, blockers)
        if found is None:
            continue
        why, by = found
        # A rule the config adds (the classifier's) is reported where the rule that shadows it is.
        where = s.rule if s.rule is not None else next((u.rule for u in by if u.rule is not None), None)
        out.append(
            Issue(
                f"can never run: {why}",
                file=where.file if where is not None else _user_file(config),
                line=where.line if where is not None else None,
                rule=s.name,
                key="trigger" if len(by) == 1 and _same_trigger(by[0], s) else "priority",
            )
        )
    return out


def _why_dead(s: Entry, blockers: list[Entry]) -> tuple[str, list[Entry]] | None:
    """Why `s` can never run, and the rules that take its requests; None when it can run."""
    twin = next((u for u in blockers if _same_trigger(u, s)), None)
    if twin is not None:
        return f"the rule {twin.name!r} (priority {twin.priority}) above it has the same trigger", [twin]
    want = _tokens(s.rule) or _ALL
    used = [(u, rs) for u in blockers if (rs := _tokens(u.rule))]
    if not _covers((r for _, rs in used for r in rs), want):
        return None
    always = next((u for u, _ in used if u.kind == "always"), None)
    if always is not None:
        return f"the always rule {always.name!r} (priority {always.priority}) has control first", [always]
    names = " and ".join(_describe(u) for u, _ in used)
    whom = "every request" if want == _ALL else "every request it matches"
    return f"the rules above it take {whom}: {names}", [u for u, _ in used]


def tools_shadowed(config: Config, dead: Iterable[str] = ()) -> list[Issue]:
    """Warnings for the rules of the person's own files that a request with tools never reaches: the
    task classifier's tools rule above them takes every such request (every request of Claude Code,
    Codex and Gemini CLI carries tools) to the cloud. Left out: the bundled profiles' rules (their
    design), rules already reported dead (`dead`), and a rule that would send a request where the tools
    rule sends it anyway (the default cloud backend, the same model, one call)."""
    entries = sequence(config)
    tools = next((e for e in entries if e.name == "task_classifier.tools"), None)
    if tools is None or not tools.enabled or _skipped(config, tools):
        return []
    skip = set(dead)
    cloud = config.default_backend("cloud")
    out: list[Issue] = []
    for e in entries[entries.index(tools) + 1 :]:
        rule = e.rule
        if rule is None or not e.enabled or e.name in skip or _skipped(config, e) or _bundled(rule):
            continue
        a = e.action
        same = (a.target, a.backend or cloud, a.model, a.adapter, a.strategy) == (
            "cloud",
            cloud,
            tools.action.model,
            None,
            "single",
        )
        if same and rule.fallback is None:
            continue
        out.append(
            Issue(
                f"a request with tools never reaches it (every Claude Code, Codex and Gemini CLI request "
                f"carries tools): task_classifier.tools (priority {tools.priority}) sends such a request to "
                f"the cloud first, so it runs for requests without tools only (give it a priority above "
                f"{tools.priority}, or set routing.task_classifier.tools_to_cloud: false)",
                file=rule.file,
                line=rule.line,
                rule=e.name,
                key="priority",
                severity="warning",
            )
        )
    return out


def _bundled(rule: Rule) -> bool:
    """Whether `rule` was written in a bundled profile (not in one of the person's own files)."""
    from pathlib import Path

    from glider_cli.config.profiles import profiles_dir

    return rule.file is not None and Path(rule.file).resolve().parent == profiles_dir().resolve()


def adapters(config: Config) -> list[Issue]:
    out: list[Issue] = []
    backends = config.settings.backends
    for rule in config.rules:
        adapter = rule.action.adapter
        if adapter is None:
            continue
        name = rule.action.backend or config.default_backend(rule.action.target)
        b = backends.get(name) if name is not None else None
        if b is not None and b.type == "openai" and b.side == "local" and rule.action.target == "local":
            continue
        what = "no backend" if b is None else f"backend {b.name!r} is type {b.type} on the {b.side} side"
        out.append(
            Issue(
                f"adapter {adapter!r} needs a vLLM server (a backend of type openai, side local), but "
                f"{what}: the adapter would be sent where no LoRA of that name is loaded",
                file=rule.file,
                line=rule.line,
                rule=rule.name,
                key="action.adapter",
            )
        )
    return out


def script_arity(rule: Rule) -> list[Issue]:
    """`def evaluate(request)` takes exactly one argument: checked on the source text."""
    t = rule.trigger
    if t.type != "script" or not t.source:
        return []
    m = _DEF_EVALUATE.search(t.source)
    if m is None:
        return []
    params = _params(t.source, m.end())
    if params is None:
        return []
    required = [p for p in params if "=" not in p and not p.startswith("*")]
    optional = [p for p in params if "=" in p and not p.startswith("*")]
    variadic = any(p.startswith("*") and not p.startswith("**") for p in params)
    if len(required) == 1 or (not required and (optional or variadic)):
        return []
    line = t.source.count("\n", 0, m.start()) + 1
    got = f"def evaluate({', '.join(params)})"
    return [
        Issue(
            f"script {t.file}:{line}: {got} takes {len(required)} argument{'s' * (len(required) != 1)}, "
            "but Glider calls evaluate(request) with one: every call would fail and count as no match",
            file=t.file,
            line=line,
            rule=rule.name,
            key="trigger.file",
        )
    ]


def _params(source: str, start: int) -> list[str] | None:
    """The parameters of the def whose `(` ends at `start`, split at depth 0 (None when unbalanced)."""
    depth = 0
    buf: list[str] = []
    out: list[str] = []
    for ch in source[start:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                last = "".join(buf).strip()
                if last:
                    out.append(last)
                return out
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    return None


def _user_file(config: Config) -> str:
    return config.source
