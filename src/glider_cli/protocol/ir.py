"""The neutral shape every wire protocol is translated through (requests, replies and stream events).

Each protocol module converts its own JSON to and from these values, so N protocols need 2N
converters instead of N². Conventions:

- Roles are "system", "user" and "assistant". Tool results are parts of a user message (the
  Anthropic layout); OpenAI `tool` messages and Responses `function_call_output` items become
  such parts, and the OpenAI/Ollama builders split them out again.
- Stop reasons use the Anthropic vocabulary: end_turn, max_tokens, tool_use, stop_sequence,
  refusal, pause_turn. Each module maps its own values to and from these.
- Tool call arguments are kept as JSON text (what OpenAI sends); `arguments_obj` parses them.
- Thinking parts carry the text and, when the source had one, the opaque signature.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

StopReason = str  # one of STOP_REASONS
STOP_REASONS = ("end_turn", "max_tokens", "tool_use", "stop_sequence", "refusal", "pause_turn")


@dataclass(frozen=True)
class Usage:
    """Token counts one reply reported. `input_tokens` excludes cached tokens (Anthropic's meaning)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass
class Text:
    text: str


@dataclass
class Image:
    """An image: either base64 `data` with its `media_type`, or a `url`."""

    media_type: str = ""
    data: str = ""
    url: str = ""

    def data_url(self) -> str:
        return self.url or f"data:{self.media_type};base64,{self.data}"


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str = "{}"

    def arguments_obj(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass
class ToolResult:
    call_id: str
    content: list[Text | Image]
    is_error: bool = False

    def text(self) -> str:
        return "\n".join(p.text for p in self.content if isinstance(p, Text))


@dataclass
class Thinking:
    text: str
    signature: str = ""


Part = Text | Image | ToolCall | ToolResult | Thinking


@dataclass
class Message:
    role: str
    parts: list[Part]

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))


@dataclass
class Tool:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass
class Request:
    """A chat request. `tool_choice` is "auto", "none", "required" or a tool name. `response_schema`
    asks for a JSON reply: None for free text, a JSON Schema (`{}` for any JSON object) otherwise."""

    model: str
    messages: list[Message]
    system: list[str] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    response_schema: dict[str, Any] | None = None


@dataclass
class Response:
    id: str
    model: str
    parts: list[Part]
    stop_reason: StopReason = "end_turn"
    usage: Usage = field(default_factory=Usage)


# ---- stream events: what every decoder yields and every encoder consumes


@dataclass
class Start:
    id: str = ""
    model: str = ""
    usage: Usage | None = None


@dataclass
class TextDelta:
    text: str


@dataclass
class ThinkingDelta:
    text: str = ""
    signature: str = ""


@dataclass
class ToolStart:
    """A new tool call; `key` identifies it for the ToolArgs deltas that follow."""

    key: int
    id: str
    name: str


@dataclass
class ToolArgs:
    key: int
    json: str


@dataclass
class Finish:
    stop_reason: StopReason = "end_turn"
    usage: Usage | None = None


@dataclass
class Failure:
    """The upstream reported an error inside the stream."""

    message: str
    type: str = "api_error"


StreamEvent = Start | TextDelta | ThinkingDelta | ToolStart | ToolArgs | Finish | Failure


# ---- helpers shared by the protocol modules

_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def safe_id(value: str, prefix: str) -> str:
    """A tool call id every protocol accepts: [A-Za-z0-9_-]+ (Anthropic's pattern); synthesised if empty."""
    if not value:
        return new_id(prefix)
    return _ID_SAFE.sub("_", value)[:64]


def json_text(value: Any) -> str:
    """Compact JSON text (tool call arguments as OpenAI carries them)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_float(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (booleans included)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def merge_usage(first: Usage | None, later: Usage | None) -> Usage:
    """Later non-zero counts win (a stream reports input at the start and output at the end)."""
    if first is None:
        return later or Usage()
    if later is None:
        return first
    return Usage(
        later.input_tokens or first.input_tokens,
        later.output_tokens or first.output_tokens,
        later.cache_read_tokens or first.cache_read_tokens,
        later.cache_write_tokens or first.cache_write_tokens,
    )
