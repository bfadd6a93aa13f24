"""The pack: what a local model receives instead of the client's whole request.

Spec (memory-and-context.md, "What the local model receives"): Glider never sends the full transcript; it
sends a pack of limited size, the most recent user turn and at most N short episodes. Issue #13 §1 says
what goes in it. Contract of `pack(protocol, body, settings, episodes=..., tools=..., request=...)`:

- Pure: no I/O, no clock; `body` is not modified. The result is a new body in the client's own protocol
  (anthropic, openai_chat, openai_responses or gemini), so the usual translation to the backend's wire
  applies to it unchanged, plus a `PackReport` (sizes before and after, and what was kept).
- `settings.local_context` false: the body comes back as it is (`report.packed` is false).
- The current turn, whole: every message from the latest real user message on (user text that answers no
  tool call and is not only client-injected context such as `<system-reminder>`), with this turn's
  assistant tool calls and tool results and their ids as they were. Nothing before it is sent. Only the
  context blocks the client injected into the turn's user messages (Claude Code's `<system-reminder>`s:
  CLAUDE.md, git status, attribution) are cut, each to a quarter of `settings.local_system_chars`.
- A short system prompt: Glider's own brief instruction (`BRIEF`), then the client's system text (its
  system prompt, and the system/developer messages it puts among the messages) cut to
  `settings.local_system_chars`, keeping its start and its environment lines (working directory,
  platform, shell, OS, date; Claude Code's `# Environment` lines and Codex's `<environment_context>`,
  wherever in the request they are), then the last `settings.local_episode_count` episodes (short texts
  the caller gives, oldest first) as one "earlier in this session" block, then the environment lines
  that carry a clock time. Stable across a project's sessions first, byte-identical, per-session and
  per-turn text after (the local server reuses the longest cached prefix: a new session's first turn
  then pays only for its own part).
- A tool diet, only when `tools` (the backend can call tools): the tools this turn's calls used plus
  those named in `settings.local_tools`, among those the client offered; each description cut to
  `settings.local_tool_chars` and each parameter's description to a quarter of it, JSON-Schema
  `$schema` dropped. Without `tools` no tool is sent (and no `tool_choice`).
- Sizes: bytes of the body's JSON, and the prompt tokens the router estimates (`parse_request`); the
  request's own estimate is `request.estimated_tokens` when the caller has the request parsed already
  (the proxy: the body is not parsed a second time), only the pack is parsed then. The
  captured Claude Code first turn: 50,177 bytes / ~12,300 tokens -> ~6,400 bytes / ~1,450 tokens.
- The per-protocol reading and rebuilding is `turns.pack_shapes` (and `turns.pack_gemini`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from glider_cli.config.settings import TransformSettings
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request
from glider_cli.turns import pack_shapes
from glider_cli.turns.pack_gemini import Gemini
from glider_cli.turns.pack_shapes import Shape, cut
from glider_cli.values import Frozen, lazy_pattern

SHAPES: Mapping[str, Shape] = {**pack_shapes.SHAPES, "gemini": Gemini()}
# The client protocols a pack can be made for: all four client protocols.
PACKABLE: frozenset[str] = frozenset(SHAPES)

BRIEF = (
    "You answer one turn of a coding agent's session (through Glider): the latest request in full, an "
    "excerpt of the agent's instructions, notes on earlier turns. Be brief; use a tool only when needed."
)
EPISODES_HEADING = "Earlier in this session (Glider's notes, oldest first):"
# One episode is a few lines (asked, routed, outcome, files); a longer one is cut.
EPISODE_CHARS = 400
# An environment line longer than this is not an environment line worth its place (Codex's filesystem
# permission profile is one such); it is cut.
ENV_LINE_CHARS = 200

# The environment lines coding agents write: Claude Code's `# Environment` list and older "Working
# directory:" forms, Codex's `<environment_context>` elements, Gemini CLI's `<session_context>` lines.
_ENV_LINE = lazy_pattern(
    r"^\s*(?:[-*]\s*)?(?:primary working directory|working directory|additional working directories"
    r"|is (?:a )?git repo(?:sitory)?|platform|shell|os version|today'?s date|current date|timezone"
    r"|my operating system|i'?m currently working in the directory)\b"
    r"\s*(?:is\b|:)"
    r"|^\s*<(cwd|shell|current_date|timezone|os|platform)>.+</\1>\s*$",
    re.IGNORECASE,
)
_CLIENT_HEADER = lazy_pattern(r"^x-anthropic-billing-header:")
# An environment line with a clock time (a date with its time) changes from turn to turn: it goes last.
_CLOCK = lazy_pattern(r"\b\d{1,2}:\d{2}\b")
CLOCK_HEADING = "Time of this turn:"
# The room kept for the clock lines is rounded up to this, so the client's excerpt before them keeps
# its length (and its bytes) when a time is one character longer.
_CLOCK_ROOM = 64


class PackReport(Frozen):
    """What the pack kept and what it weighs (`glider route explain --json` shows it)."""

    packed: bool
    bytes_before: int
    bytes_after: int
    tokens_before: int
    tokens_after: int
    system_chars_before: int
    system_chars: int
    env_lines: int
    messages_before: int
    messages_kept: int
    episodes: int
    tools_kept: tuple[str, ...]
    tools_dropped: tuple[str, ...]

    def __init__(
        self,
        packed: bool,
        bytes_before: int,
        bytes_after: int,
        tokens_before: int,
        tokens_after: int,
        system_chars_before: int,
        system_chars: int,
        env_lines: int,
        messages_before: int,
        messages_kept: int,
        episodes: int,
        tools_kept: tuple[str, ...],
        tools_dropped: tuple[str, ...],
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.packed = packed
        s.bytes_before = bytes_before
        s.bytes_after = bytes_after
        s.tokens_before = tokens_before
        s.tokens_after = tokens_after
        s.system_chars_before = system_chars_before
        s.system_chars = system_chars
        s.env_lines = env_lines
        s.messages_before = messages_before
        s.messages_kept = messages_kept
        s.episodes = episodes
        s.tools_kept = tools_kept
        s.tools_dropped = tools_dropped

    def to_dict(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in self._fields}
        d["tools_kept"], d["tools_dropped"] = list(self.tools_kept), list(self.tools_dropped)
        return d


class Packed(Frozen):
    """A pack: the body to send (the client's protocol) and its report."""

    body: dict[str, Any]
    report: PackReport

    def __init__(self, body: dict[str, Any], report: PackReport) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.body = body
        s.report = report


def _environment(texts: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    lines: list[str] = []
    for text in texts:
        for line in text.splitlines():
            if not _ENV_LINE.match(line):
                continue
            line = cut(line.strip(), ENV_LINE_CHARS)
            if line not in seen:
                seen.add(line)
                lines.append(line)
    return lines


def system_prompt(
    client: Sequence[str], context: Sequence[str], budget: int, episodes: Sequence[str]
) -> tuple[str, int, int]:
    """The pack's system prompt, the characters of the client's text it kept and its environment lines.

    `client` is the client's system text (prompt and system/developer messages), `context` the other
    text the turn no longer carries (earlier messages), read only for environment lines.

    Ordered for the local server's prompt cache (it reuses the longest prefix it saw): what is the same
    for every session of a project first and byte-identical (the brief, the client's excerpt, the
    environment lines), then what changes per session or per turn (the episodes, then environment
    lines with a clock time, taken out of the excerpt)."""
    parts = [t for t in (t.strip() for t in client) if t and not _CLIENT_HEADER.match(t)]
    env = _environment([*parts, *context])
    clock = [line for line in env if _CLOCK.search(line)]
    if clock:
        timed = set(clock)
        parts = [
            "\n".join(x for x in t.splitlines() if cut(x.strip(), ENV_LINE_CHARS) not in timed) for t in parts
        ]
        env = [line for line in env if line not in timed]
    full = "\n\n".join(p for p in parts if p)
    clock_block = cut("\n".join(clock), budget // 4)
    room = -(-(len(clock_block) + 2) // _CLOCK_ROOM) * _CLOCK_ROOM if clock_block else 0
    env_block = cut("\n".join(env), budget // 2)
    kept_env = (env_block.count("\n") + 1 if env_block else 0) + (
        clock_block.count("\n") + 1 if clock_block else 0
    )
    start = cut(full, max(0, budget - len(env_block) - 2 - room)) if budget else ""
    missing = [line for line in env_block.splitlines() if line not in start]
    env_text = "\n".join(missing)
    sections = [BRIEF]
    if start:
        sections.append(start)
    if env_text:
        sections.append("Environment:\n" + env_text)
    if episodes:
        sections.append(
            EPISODES_HEADING + "\n" + "\n".join("- " + cut(e.strip(), EPISODE_CHARS) for e in episodes)
        )
    if clock_block and budget:
        sections.append(CLOCK_HEADING + "\n" + clock_block)
    return "\n\n".join(sections), len(start) + len(env_text) + len(clock_block), kept_env


def _size(protocol: str, body: Mapping[str, Any], parsed: ChatRequest | None = None) -> tuple[int, int]:
    tokens = parsed.estimated_tokens if parsed is not None else parse_request(protocol, body).estimated_tokens
    return len(orjson.dumps(body)), tokens


def pack(
    protocol: str,
    body: Mapping[str, Any],
    settings: TransformSettings,
    *,
    episodes: Sequence[str] = (),
    tools: bool = True,
    request: ChatRequest | None = None,
) -> Packed:
    """The pack of a client request for a local backend (see the module docstring). RequestError for a
    body that `parse_request` refuses; an unknown protocol is a ValueError."""
    shape = SHAPES.get(protocol)
    if shape is None:
        raise ValueError(f"no pack for protocol {protocol!r}")
    size_before, tokens_before = _size(protocol, body, request)
    split = shape.split(body)
    client_chars = sum(len(t) for t in split.system)
    n = len(split.messages)
    if not settings.local_context:
        report = PackReport(
            False, size_before, size_before, tokens_before, tokens_before, client_chars, client_chars,
            0, n, n, 0, tuple(shape.tool_names(body)), (),
        )  # fmt: skip
        return Packed(dict(body), report)
    start = shape.turn_start(split.messages)
    turn = pack_shapes.trim_context(split.messages[start:], settings.local_system_chars // 4)
    context = [shape.text(m) for m in split.messages[:start]]
    recent = list(episodes[-settings.local_episode_count :]) if settings.local_episode_count else []
    system, kept_chars, env_lines = system_prompt(split.system, context, settings.local_system_chars, recent)
    offered = shape.tool_names(body)
    keep = set(settings.local_tools) | shape.used_tools(turn) if tools else set()
    diet = shape.diet(body, keep, settings.local_tool_chars) if tools else []
    kept = tuple(shape.tool_names({"tools": diet}))
    out = shape.build(body, system, turn, diet)
    size_after, tokens_after = _size(protocol, out)
    report = PackReport(
        True, size_before, size_after, tokens_before, tokens_after, client_chars, kept_chars, env_lines,
        n, len(turn), len(recent), kept, tuple(t for t in offered if t not in kept),
    )  # fmt: skip
    return Packed(out, report)
