"""The Router: a config compiled once, then `decide(request, sticky=...)` per request.

Contract:
- `Router(config)` compiles every rule (RE2 patterns, Starlark scripts, the classifier and complexity
  rules the config adds) and sorts them by priority, largest first; equal priorities keep file order.
  A script that cannot load raises RuleError naming the file, line and column.
- `decide` is pure apart from script rules, which run in the sandbox worker (router.scripts): one
  pipe round trip per run of adjacent script rules, bounded by their deadlines plus the sandbox's
  grace. No other I/O, no randomness. Steps, each appending to the trace as it happens:
  1. delegate flags (`/claude`, `/cursor-agent`, `/agy`) in what the person typed in a new user
     message -> `delegate` (never in a title, a summary, count_tokens, a subagent's prompt, a tool
     result or a quoted or back-ticked mention: `router.triggers.typed_text`);
  2. a family held local (`sticky.held_by`: a `/local` or `/fast` turn's follow-on, or a request
     about a prompt that has not arrived yet, `sticky.quoted`: a title ahead of its turn, a Gemini
     utility request) goes where that explicit rule sends it; only a capability gate moves it: to
     the rule's `fallback`, else GateRefused, as for the command itself. No other rule is asked;
     a quoted cloud command refuses local to the request;
  3. the rules in priority order: a disabled rule is skipped, the first match has control, a script
     that fails is "no match", the rules after the winner are listed as not reached (the decision's
     `tail` says where those lines are, so the logged record can count them instead); a rule
     whose "no" a cheaper test proves is not called (router.quick: same verdict, same line);
  4. a bound StickyView refuses a local match for a follow-on (a request whose most recent message
     is not new user text): the rule is recorded as refused and the next rule is tried. When only
     local rules matched, the request stays on the cloud (rule `sticky`).
  No rule matching at all raises NoRoute.
- The decision's `backend` is the action's backend or the side's default backend (config);
  `model` is the action's model, or None (keep the client's model). When an explicit rule has
  control, `command` is the command it found (the turn index binds the family by it). When an
  explicit rule sends the request local, itself or by holding its family (step 2), `held_local`
  names it: the person said "not the cloud", and the proxy falls back to no cloud backend but that
  rule's own `fallback`.
- A gate's GateNote (the backend takes the request with its output trimmed to what its window
  leaves) is added to the trace line of the rule that wins with that backend.
- `decide(..., every=True)` (`glider route explain --all`) also runs the rules below the winner and
  says for each whether it would have matched too; their verdicts do not change the decision.
- The record the Router writes its decision down in: the trace lines of the rules after the winner
  (`_tails`: the prebuilt "not reached" lines, or with `every` each later rule's own verdict,
  `_rest`) and the one RouteDecision (`_decision`): the action's backend or the side's default
  backend; a bound StickyView's `forced` side (and backend, model) wins over the rules' verdict,
  which stays in the trace; the view and the family join `extra`; `held_local` only while the
  decision stays local.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from glider_cli.config.model import Action, Config
from glider_cli.domain import DELEGATE_FLAGS, ChatRequest, Reason, RequestSummary, RouteDecision
from glider_cli.errors import GateRefused, NoRoute
from glider_cli.router.compiled import CompiledRule, Ctx, compile_rules, merge_action
from glider_cli.router.complexity import ComplexityScorer, LazyComplexity
from glider_cli.router.quick import DISABLED, EXPLICIT, PATTERNS, TOOLS, quick_table
from glider_cli.router.sticky_view import StickyView
from glider_cli.router.triggers import (
    Match,
    command_pattern,
    find_command,
    may_ask_wrapup,
    typed_text,
)


class GateNote(str):
    """A gate's answer that is no refusal: the backend takes the request as it will be sent, and this
    says how (its output trimmed to what the window leaves after the pack). It joins the trace line
    of the rule that wins with that backend."""

    __slots__ = ()


# A capability gate: given the local backend a rule would use, why it cannot take this request
# (the pack does not fit its window, the turn needs tools it cannot call), a GateNote, or None. Built
# by the turn lifecycle from the probed capabilities and the pack's size; the router only asks it.
Gate = Callable[[str | None], str | None]


class Router:
    """Compiled routing for one Config. Thread-safe: decide()'s only shared mutable state is small
    caches of immutable trace lines and verdicts (and each line's record, made once)."""

    def __init__(self, config: Config, *, scorer: ComplexityScorer | None = None) -> None:
        self.config = config
        self.rules: tuple[CompiledRule, ...] = tuple(compile_rules(config))
        self._by_name = {r.name: r for r in self.rules}
        cx = config.routing.complexity
        self._scorer = scorer or ComplexityScorer(cx.keywords, cx.weights)
        self._delegate = command_pattern(DELEGATE_FLAGS)
        # The complexity score is worked out for scripts only when one of them may read it.
        self._script_complexity = any(
            r.trigger.type == "script" and "complexity" in (r.trigger.source or "") for r in config.rules
        )
        self._default_backend = {side: config.default_backend(side) for side in ("local", "cloud")}
        self._local_only = config.routing.local_only
        self._explicit = tuple(
            (r, command_pattern(r.commands)) for r in self.rules if r.kind == "explicit" and r.enabled
        )
        # Trace lines that do not depend on the request are built once.
        self._disabled = tuple(Reason(r.name, r.priority, False, r.disabled_reason) for r in self.rules)
        # Trace lines for the verdicts a rule gives again and again ("no tools", "no pattern matches"):
        # built once, looked up by reason text. Bounded, so per-request texts cannot grow it.
        self._seen: tuple[dict[str, Reason], ...] = tuple({} for _ in self.rules)
        self._won: tuple[dict[str, Reason], ...] = tuple({} for _ in self.rules)  # and winning ones
        self._tails = tuple(
            tuple(
                Reason(later.name, later.priority, False, f"not reached: {rule.name} has control")
                for later in self.rules[i + 1 :]
            )
            for i, rule in enumerate(self.rules)
        )
        self._held_tail = tuple(
            Reason(r.name, r.priority, False, "not reached: the turn is held local") for r in self.rules
        )
        # Per rule, how to skip its matcher when a cheaper check proves its "no" (router.quick).
        self._quick = quick_table(self.rules, self._disabled)
        # Every command a request's user text is tested for, with the bit of what looks for it: an
        # explicit rule (its index) or the delegate flags (`_delegate_bit`). One pass of substring
        # tests per request says which of them may find a command; the others say "no" unasked.
        self._delegate_bit = 1 << len(self.rules)
        self._command_bits = tuple(
            [(flag, self._delegate_bit) for flag in DELEGATE_FLAGS]
            + [
                (c, 1 << i)
                for i, (kind, _, m) in enumerate(self._quick)
                if kind == EXPLICIT
                for c in m.commands
            ]
        )

    def decide(
        self,
        request: ChatRequest,
        sticky: StickyView | None = None,
        *,
        gate: Gate | None = None,
        every: bool = False,
    ) -> RouteDecision:
        user_text = request.last_user_text
        complexity = LazyComplexity(
            self._scorer, user_text, len(request.messages), request.has_tools, request.client_hint
        )
        commands = sticky is None or sticky.commands
        # What the matchers share, built when the first of them is asked (an explicit rule's verdict
        # is given without it): `_context`.
        ctx: Ctx | None = None
        trace: list[Reason] = []
        delegate = None
        # Every command starts with "/" (`config.rules`): without one in the text no command test can
        # find any. Else the bits of the explicit rules (and the delegate flags) with a command in the
        # user text: only they look for it in the person's own text (`own_text`, as `Ctx.command_text`);
        # every other explicit rule gives its one "no" line without the call.
        typed = 0
        if commands and "/" in user_text:
            for word, bit in self._command_bits:
                if word in user_text:
                    typed |= bit
        own_text = typed_text(user_text) if typed else ""
        if typed & self._delegate_bit and request.is_new_user_message:
            delegate = find_command(self._delegate, DELEGATE_FLAGS, own_text)
        if delegate:
            trace.append(Reason("delegate", None, True, f"delegate flag {delegate} found before any rule"))
        held = (
            self._holder(sticky)
            if sticky is not None and (sticky.held_by is not None or sticky.quoted)
            else None
        )
        if held is not None and held[2] == "local":
            return self._held(held[:2], request, complexity, trace, sticky, gate)
        refuse_local = (
            sticky is not None and (held is not None or sticky.bound) and sticky.is_follow_on(request)
        )
        refused = False
        local_only = self._local_only
        gated: str | None = None
        winner: CompiledRule | None = None
        action: Action | None = None
        command: str | None = None
        keeper: str | None = None  # the explicit rule keeping the request on the machine
        tail = (0, 0)
        quick = self._quick
        quiet: Any = None  # (index, whether none of its patterns can match the text)
        for i, rule in enumerate(self.rules):
            kind, no, data = quick[i]
            m: Match | None = None
            if kind:
                if kind == DISABLED:
                    trace.append(no)
                    continue
                if kind == EXPLICIT:  # its matcher's verdict is its own quick test: asked once
                    if typed >> i & 1:
                        m = data.typed(own_text)
                        skip = not m.matched
                    else:
                        skip = True
                elif kind == PATTERNS:
                    if quiet is None or quiet[0] is not data.index:
                        quiet = (data.index, not data.index.may_match(user_text))
                    skip = quiet[1] and data.quick_miss(user_text)
                elif kind == TOOLS:
                    skip = not request.tool_names
                else:  # WRAPUP
                    skip = request.protocol != "cursor" and not may_ask_wrapup(user_text)
                if skip:
                    trace.append(no)
                    continue
            if m is None:
                if ctx is None:
                    ctx = self._context(request, user_text, complexity, commands, sticky)
                m = rule.matcher(ctx)
            if not m.matched:
                seen = self._seen[i]
                line = seen.get(m.reason)
                if line is None:
                    line = Reason(rule.name, rule.priority, False, m.reason)
                    if len(seen) < 8:
                        seen[m.reason] = line
                trace.append(line)
                continue
            if m.action:
                merged, note = merge_action(rule.action, m.action, self.config)
            else:  # merge_action's answer without an override
                merged, note = rule.action, ""
            if merged is None:
                trace.append(
                    Reason(rule.name, rule.priority, False, f"{m.reason} but {note}; counted as no match")
                )
                continue
            fits: str | None = None
            if gate is not None and merged.target == "local":
                local = merged.backend or self._default_backend["local"]
                why = gate(local)
                if isinstance(why, GateNote):
                    fits, why = why, None
                if why is not None:
                    said = f"{m.reason}, but local backend {local} cannot take it: {why}"
                    if rule.kind != "explicit":
                        trace.append(Reason(rule.name, rule.priority, False, said))
                        gated = gated or why
                        continue
                    merged = self._fallback(
                        rule, local, why, f"{rule.name}: local backend {local}", name=rule.name
                    )
                    trace.append(
                        Reason(
                            rule.name, rule.priority, True, f"{said}; its fallback {merged.backend} answers"
                        )
                    )
                    winner, action, command = rule, merged, m.command
                    rest = self._tails[i] if not every else self._rest(i, ctx, request, complexity, sticky)
                    tail = (len(trace), len(rest))
                    trace.extend(rest)
                    break
            if local_only and merged.target == "cloud" and rule.kind != "explicit":
                why = "routing.local_only: only an explicit command sends a request to the cloud"
                trace.append(Reason(rule.name, rule.priority, False, f"{m.reason}, but {why}"))
                continue
            if refuse_local and merged.target == "local":
                assert sticky is not None
                refused = True
                trace.append(
                    Reason(
                        rule.name,
                        rule.priority,
                        False,
                        f"{m.reason}, but local is refused: {sticky.describe()}",
                    )
                )
                continue
            said = m.reason + note if note else m.reason
            if fits:
                said = f"{said}; {fits}"
            won = self._won[i]
            line = won.get(said)
            if line is None:
                line = Reason(rule.name, rule.priority, True, said)
                if len(won) < 8:
                    won[said] = line
            trace.append(line)
            winner, action, command = rule, merged, m.command
            if rule.kind == "explicit" and merged.target == "local":
                keeper = rule.name
            rest = self._tails[i] if not every else self._rest(i, ctx, request, complexity, sticky)
            tail = (len(trace), len(rest))
            trace.extend(rest)
            break
        if winner is None or action is None:
            if not refused and gated is not None:
                raise GateRefused(
                    f"no local backend can take this request: {gated}",
                    hint="send it with /cloud" if local_only else "send it with /cloud, or add a cloud rule",
                )
            if not refused:
                raise NoRoute(
                    "no rule matched this request and the config has no `always` rule",
                    hint="add a rule with `trigger: {type: always}` at priority 0",
                )
            assert sticky is not None
            trace.append(Reason("sticky", None, True, f"only local rules matched; {sticky.describe()}"))
            return self._decision(
                "cloud",
                "sticky",
                None,
                Action("cloud"),
                None,
                None,
                delegate,
                request,
                complexity,
                trace,
                sticky,
            )
        decision = self._decision(
            action.target,
            winner.name,
            winner.priority,
            action,
            winner.fallback,
            winner.where,
            delegate,
            request,
            complexity,
            trace,
            sticky,
            command if winner.kind == "explicit" else None,
            tail=tail,
            held_local=keeper,
        )
        return decision

    # ------------------------------------------------------------------------------ held local

    def explicit_rule(self, text: str) -> tuple[CompiledRule, str] | None:
        """The enabled explicit rule (highest priority first) whose command the person typed in
        `text`, and the command; None when there is none."""
        if "/" not in text:
            return None
        typed = typed_text(text)
        for rule, pattern in self._explicit:
            found = find_command(pattern, rule.commands, typed)
            if found:
                return rule, found
        return None

    def _holder(self, sticky: StickyView | None) -> tuple[CompiledRule | None, str, str] | None:
        """The explicit rule holding this request on a side, why, and the side (`local`: step 2 of
        the contract; `cloud`: a title quoting a `/cloud` prompt, refused local); None otherwise."""
        if sticky is None:
            return None
        if sticky.held_by is not None:
            return self._by_name.get(sticky.held_by), sticky.reason, "local"
        if sticky.quoted:
            found = self.explicit_rule(sticky.quoted)
            if found is not None:
                rule, command = found
                why = f"title of a {command} prompt (rule {rule.name}), ahead of its turn"
                return rule, why, rule.action.target
        return None

    def _held(
        self,
        held: tuple[CompiledRule | None, str],
        request: ChatRequest,
        complexity: LazyComplexity,
        trace: list[Reason],
        sticky: StickyView | None,
        gate: Gate | None,
    ) -> RouteDecision:
        rule, why_held = held
        # The rule may have gone (a reload): the family stays local on the side's default backend.
        action = rule.action if rule is not None and rule.action.target == "local" else Action("local")
        name = rule.name if rule is not None else "sticky"
        line = f"held local: {why_held}"
        local = action.backend or self._default_backend["local"]
        why = gate(local) if gate is not None else None
        # Kept on the machine by the explicit rule, unless its own `fallback` takes over below.
        keeper: str | None = name if rule is not None else (sticky.held_by if sticky else None) or name
        if isinstance(why, GateNote):
            line += f"; {why}"
        elif why is not None:
            turn = f" in turn {sticky.turn_id}" if sticky is not None and sticky.turn_id else ""
            what = f"{name}: held local{turn}; local backend {local}"
            action = self._fallback(rule, local, why, what, name=name)
            line += f"; local backend {local} cannot take it: {why}; its fallback {action.backend} answers"
            keeper = None
        trace.append(Reason("sticky", None, True, line))
        tail = (len(trace), len(self._held_tail))
        trace.extend(self._held_tail)
        fallback = rule.fallback if rule is not None else None
        where = rule.where if rule is not None else None
        return self._decision(
            action.target,
            "sticky",
            None,
            action,
            fallback,
            where,
            None,
            request,
            complexity,
            trace,
            sticky,
            tail=tail,
            held_local=keeper,
        )

    def _fallback(
        self, rule: CompiledRule | None, local: str | None, why: str, what: str, *, name: str
    ) -> Action:
        """The action of an explicit rule's `fallback` backend, or GateRefused naming the gate."""
        fb = rule.fallback if rule is not None else None
        if fb is None or fb == "none" or fb not in self.config.settings.backends:
            raise GateRefused(
                f"{what} cannot take this request: {why}",
                hint="send it with /cloud, or give the rule a `fallback` backend",
                rule=name,
                backend=local,
            )
        return Action(self.config.settings.backends[fb].side, fb, None, None, "single")

    # ------------------------------------------------------------------------------ the record

    def _context(
        self,
        request: ChatRequest,
        user_text: str,
        complexity: LazyComplexity,
        commands: bool,
        sticky: StickyView | None,
    ) -> Ctx:
        return Ctx(
            request, request.last_text, user_text, complexity, commands, sticky, self._script_complexity
        )

    def _rest(
        self,
        i: int,
        ctx: Ctx | None,
        request: ChatRequest,
        complexity: LazyComplexity,
        sticky: StickyView | None,
    ) -> list[Reason]:
        """`every`: the verdicts of the rules after the winner (the rules' own `_tails` otherwise)."""
        if ctx is None:
            commands = sticky is None or sticky.commands
            ctx = self._context(request, request.last_user_text, complexity, commands, sticky)
        winner = self.rules[i].name
        out: list[Reason] = []
        for later in self.rules[i + 1 :]:
            if not later.enabled:
                out.append(Reason(later.name, later.priority, False, later.disabled_reason))
                continue
            m = later.matcher(ctx)
            verdict = "would also match" if m.matched else "would not match"
            out.append(
                Reason(later.name, later.priority, False, f"{verdict} ({winner} has control): {m.reason}")
            )
        return out

    def _decision(
        self,
        target: str,
        rule: str,
        priority: int | None,
        action: Action,
        fallback: str | None,
        where: str | None,
        delegate: str | None,
        request: ChatRequest,
        complexity: LazyComplexity,
        trace: list[Reason],
        sticky: StickyView | None,
        command: str | None = None,
        *,
        tail: tuple[int, int] = (0, 0),
        held_local: str | None = None,
    ) -> RouteDecision:
        # `complexity_signals` joins the record in RouteDecision.to_dict (scored only when read).
        extra: dict[str, Any] = {}
        side = "local" if target == "local" else "cloud"
        backend = action.backend or self._default_backend[target]
        model, adapter, strategy = action.model, action.adapter, action.strategy
        if sticky is not None:
            extra["sticky"] = sticky.to_dict()
            forced = sticky.forced
            if forced is not None:
                # The turn index knows where this request must go (a tool result returning home, a
                # denylisted tool following its parent): the rules' verdict stays in the trace.
                trace.append(Reason("sticky", None, True, forced.reason))
                if side != forced.side or (forced.backend and backend != forced.backend):
                    moved = side != forced.side
                    side = "local" if forced.side == "local" else "cloud"
                    # A side it names no backend of: that side's default, not the rule's backend.
                    backend = forced.backend or (self._default_backend[side] if moved else backend)
                    rule, priority = "sticky", None
                    model, adapter, strategy = forced.model, None, "single"
            if sticky.family is not None:
                extra["family"] = sticky.family
        # Positional, in RouteDecision's field order (built per request: keywords cost their matching).
        return RouteDecision(
            side,  # type: ignore[arg-type]
            rule,
            priority,
            backend,
            model,
            adapter,
            strategy,  # type: ignore[arg-type]
            delegate,
            RequestSummary(request.estimated_tokens, request.has_tools, complexity=complexity),
            tuple(trace),
            extra,
            tail,
            where,
            fallback,
            command,
            None,  # plan: the planner's, added by the turn lifecycle
            # A forced move off the local side (a tool result returning to the cloud) is no hold.
            held_local if side == "local" else None,
        )
