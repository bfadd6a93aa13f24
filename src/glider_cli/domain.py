"""Glider's shared vocabulary: the request model the router sees, and the decision it makes.

Every protocol parser builds a ChatRequest; `router.decide` returns a RouteDecision; `glider route
explain --json` prints `RouteDecision.to_dict()` (every rule's verdict) and the proxy logs
`RouteDecision.to_record()` as a `RouteDecided` event: the same dict without the trace lines of the
rules after the winner ("not reached: X has control"), which it counts in `not_reached` instead
(explain recomputes them from the config; a record of a request is ~1 KB lighter). Values are
frozen (`values.Frozen`); these are built per request, so each
`__init__` sets its fields one by one (as fast as dataclass-generated code). How events leave the
request path (`EventSink`, `Deferred`) is `glider_cli.sinks`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any, Generic, Literal, Protocol, TypeVar

from glider_cli.sinks import Deferred as Deferred
from glider_cli.sinks import EventSink as EventSink
from glider_cli.values import Frozen

Protocol_ = Literal["anthropic", "openai_chat", "openai_responses", "gemini", "cursor"]
Target = Literal["local", "cloud"]
Strategy = Literal["single", "fan_out", "pipeline", "ensemble"]

TARGETS: tuple[str, ...] = ("local", "cloud")
STRATEGIES: tuple[str, ...] = ("single", "fan_out", "pipeline", "ensemble")
DELEGATE_FLAGS: tuple[str, ...] = ("/claude", "/cursor-agent", "/agy")


_T = TypeVar("_T")


class _Once(Generic[_T]):
    """A property worked out on first read and kept as the instance's attribute of that name (which
    then answers every later read): `functools.cached_property` without its lock, as a request is
    read by one thread. Set with `setattr`, not through `__dict__`: the instance keeps its inline
    attribute values (see `values`)."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> _T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = self.func(instance)
        setattr(instance, self.name, value)
        return value


class ToolCall(Frozen):
    id: str
    name: str

    def __init__(self, id: str, name: str) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.id = id
        s.name = name


class Message(Frozen):
    """One message flattened for routing: `content` is its text (text blocks joined by newlines).

    `tool_calls` are the calls an assistant message makes; `tool_results` the ids of the calls a
    user/tool message answers.
    """

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...]
    tool_results: tuple[str, ...]

    def __init__(
        self,
        role: str,
        content: str,
        tool_calls: tuple[ToolCall, ...] = (),
        tool_results: tuple[str, ...] = (),
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.role = role
        s.content = content
        s.tool_calls = tool_calls
        s.tool_results = tool_results


class ChatRequest(Frozen):
    """The one internal request model, built from Anthropic Messages, OpenAI Chat or Responses, or Gemini
    (and Cursor's agent messages, `glider_cli.cursor`).

    `client_kind`: what the client's own protocol fields say the request is (`new_turn`,
    `continuation`, `summary`, `title`, `subagent`), when they say it (Cursor); None for the JSON
    APIs, whose kind is read from their content. `client_hint`: what the client said about the turn's
    weight (Cursor's `max_mode`, agent `mode`), scored as `complexity_source: cursor`; None: no hint.
    `headers`: the request's HTTP headers, their names lowercased (as `protocol.parse` gives them).
    """

    protocol: Protocol_
    model: str
    stream: bool
    messages: tuple[Message, ...]
    system: str
    tool_names: tuple[str, ...]
    estimated_tokens: int
    temperature: float | None
    max_tokens: int | None
    session_id: str | None
    headers: Mapping[str, str]
    client_kind: str | None
    client_hint: Mapping[str, Any] | None

    def __init__(
        self,
        protocol: Protocol_,
        model: str,
        stream: bool,
        messages: tuple[Message, ...],
        system: str = "",
        tool_names: tuple[str, ...] = (),
        estimated_tokens: int = 0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        session_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        client_kind: str | None = None,
        client_hint: Mapping[str, Any] | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.protocol = protocol
        s.model = model
        s.stream = stream
        s.messages = messages
        s.system = system
        s.tool_names = tool_names
        s.estimated_tokens = estimated_tokens
        s.temperature = temperature
        s.max_tokens = max_tokens
        s.session_id = session_id
        s.headers = {} if headers is None else headers
        s.client_kind = client_kind
        s.client_hint = client_hint

    @_Once
    def has_tools(self) -> bool:
        return bool(self.tool_names)

    @property
    def last_text(self) -> str:
        """The most recent message's text (what `regex` and `explicit` triggers look at)."""
        return self.messages[-1].content if self.messages else ""

    @_Once
    def is_new_user_message(self) -> bool:
        """The most recent message is user text that answers no tool call (found once: placing,
        the router and the turn keys each ask)."""
        if not self.messages:
            return False
        last = self.messages[-1]
        return last.role == "user" and bool(last.content.strip()) and not last.tool_results

    @_Once
    def last_user_text(self) -> str:
        """The latest user message with text (found once: the router, the turn lifecycle and the
        delegation each ask, and an agent's turn can end in a long run of tool results)."""
        for m in reversed(self.messages):
            if m.role == "user" and m.content:
                return m.content
        return ""


class Reason(Frozen):
    """One line of a decision's trace: a rule, whether it matched, and why (one per rule per request)."""

    rule: str
    priority: int | None
    matched: bool
    reason: str

    def __init__(self, rule: str, priority: int | None, matched: bool, reason: str) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.rule = rule
        s.priority = priority
        s.matched = matched
        s.reason = reason

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "priority": self.priority, "matched": self.matched, "reason": self.reason}

    @_Once
    def record(self) -> dict[str, Any]:
        """`to_dict()`, made once and shared by every decision record this line is in (the router
        reuses the lines that do not depend on the request): read, never changed."""
        return self.to_dict()


_RECORD = attrgetter("record")  # a trace line's shared record (no Python frame per line)


class Scored(Protocol):
    """A complexity as the router measures it (router.complexity.Complexity or its lazy form)."""

    @property
    def score(self) -> int: ...

    @property
    def source(self) -> str: ...

    @property
    def signals(self) -> tuple[dict[str, Any], ...]: ...


class RequestSummary:
    """What the router measured about a request (part of every decision record). Immutable, as a
    `values.Frozen` is: its fields are read-only to the type checker.

    The complexity comes as numbers, or as a `complexity` object read on first use: the router scores
    lazily, since only a complexity rule, a script or the decision record needs the score."""

    estimated_tokens: int
    has_tools: bool
    _score: int
    _source: str
    _complexity: Scored | None

    def __init__(
        self,
        estimated_tokens: int,
        has_tools: bool,
        complexity_score: int = 0,
        complexity_source: str = "heuristic",
        *,
        complexity: Scored | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.estimated_tokens = estimated_tokens
        s.has_tools = has_tools
        s._score = complexity_score
        s._source = complexity_source
        s._complexity = complexity

    @property
    def complexity_score(self) -> int:
        return self._score if self._complexity is None else self._complexity.score

    @property
    def complexity_source(self) -> str:
        return self._source if self._complexity is None else self._complexity.source

    @property
    def complexity_signals(self) -> tuple[dict[str, Any], ...] | None:
        """The scorer's signals; None when the summary was given as numbers."""
        return None if self._complexity is None else self._complexity.signals

    def _key(self) -> tuple[int, bool, int, str]:
        return (self.estimated_tokens, self.has_tools, self.complexity_score, self.complexity_source)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RequestSummary) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        t, tools, score, source = self._key()
        return (
            f"RequestSummary(estimated_tokens={t}, has_tools={tools}, "
            f"complexity_score={score}, complexity_source={source!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (RequestSummary, self._key())

    def to_dict(self) -> dict[str, Any]:
        c = self._complexity
        return {
            "estimated_tokens": self.estimated_tokens,
            "has_tools": self.has_tools,
            "complexity_score": self._score if c is None else c.score,
            "complexity_source": self._source if c is None else c.source,
        }


class RouteDecision(Frozen):
    """What the router decided and the ordered reasons that produced it.

    `tail` is (index, count) of the trace lines of the rules after the winner, which were not
    evaluated (`to_record` leaves them out). What others act on is typed: `fallback` (the rule's
    fallback backend, `proxy.dispatch`), `command` (the explicit command found, by which the turn
    index binds the family), `plan` (a strategy's plan record, `router.plan`), `held_local` (the
    explicit rule, `/local` or `/fast`, that keeps this request on the machine: the command itself or
    its family; the proxy then falls back to no cloud backend but the rule's own `fallback`); `where`
    is the rule's source. `extra` is record-only data (the sticky view, the family)."""

    target: Target
    rule: str
    priority: int | None
    backend: str | None
    model: str | None
    adapter: str | None
    strategy: Strategy
    delegate: str | None
    request: RequestSummary
    trace: tuple[Reason, ...]
    extra: Mapping[str, Any]
    tail: tuple[int, int]
    where: str | None
    fallback: str | None
    command: str | None
    plan: Mapping[str, Any] | None
    held_local: str | None

    def __init__(
        self,
        target: Target,
        rule: str,
        priority: int | None,
        backend: str | None,
        model: str | None,
        adapter: str | None,
        strategy: Strategy,
        delegate: str | None,
        request: RequestSummary,
        trace: tuple[Reason, ...],
        extra: Mapping[str, Any] | None = None,
        tail: tuple[int, int] = (0, 0),
        where: str | None = None,
        fallback: str | None = None,
        command: str | None = None,
        plan: Mapping[str, Any] | None = None,
        held_local: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.target = target
        s.rule = rule
        s.priority = priority
        s.backend = backend
        s.model = model
        s.adapter = adapter
        s.strategy = strategy
        s.delegate = delegate
        s.request = request
        s.trace = trace
        s.extra = {} if extra is None else extra
        s.tail = tail
        s.where = where
        s.fallback = fallback
        s.command = command
        s.plan = plan
        s.held_local = held_local

    def to_dict(self) -> dict[str, Any]:
        return self._record(self.trace)

    def to_record(self) -> dict[str, Any]:
        """The `RouteDecided` event: `to_dict()` with the not-reached rules counted, not listed."""
        at, n = self.tail
        trace = self.trace
        if n:  # the not-reached lines are most often the last ones: one slice then
            trace = trace[:at] if at + n == len(trace) else trace[:at] + trace[at + n :]
        d = self._record(trace)
        d["not_reached"] = n
        return d

    def _record(self, trace: tuple[Reason, ...]) -> dict[str, Any]:
        """`to_dict()` with these trace lines: built in one go (each Reason's shared `record`, the
        summary's read once), since a record is made per request."""
        req = self.request
        # `req.to_dict()` and `req.complexity_signals` inline: the complexity read once per field.
        c = req._complexity
        if c is None:
            score, source, signals = req._score, req._source, None
        else:  # a lazy complexity (`router.complexity.LazyComplexity`): its value read once
            v = getattr(c, "value", c)
            score, source, signals = v.score, v.source, v.signals
        d: dict[str, Any] = {
            "target": self.target,
            "rule": self.rule,
            "priority": self.priority,
            "backend": self.backend,
            "model": self.model,
            "adapter": self.adapter,
            "strategy": self.strategy,
            "delegate": self.delegate,
            "request": {
                "estimated_tokens": req.estimated_tokens,
                "has_tools": req.has_tools,
                "complexity_score": score,
                "complexity_source": source,
            },
            "trace": list(map(_RECORD, trace)),
            "where": self.where,
            "fallback": self.fallback,
        }
        if self.command is not None:
            d["command"] = self.command
        if self.held_local is not None:
            d["held_local"] = self.held_local
        if self.extra:
            d.update(self.extra)
        if self.plan is not None:
            d["plan"] = self.plan
        if signals is not None:
            d["complexity_signals"] = list(signals)
        return d


class Clock(Protocol):
    def __call__(self) -> float: ...


def model_label(model: str) -> str:
    """A model id as a person reads it: a file path (llama.cpp names its model by the .gguf path it
    loaded) becomes the file's name; anything else (`qwen2.5-coder:14b`, vLLM's `org/name`) is kept."""
    drive = len(model) > 2 and model[1] == ":" and model[2] in "\\/"
    if drive or model.startswith(("/", "~", "./", "../")):
        return model.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or model
    return model
