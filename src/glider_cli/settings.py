"""Glider's settings: frozen values with the spec's defaults.

The config loader (`glider_cli.config`) builds a Settings from YAML after strict validation; every
other module receives the piece it needs as a value and never reads files or the environment itself.
Names and defaults here are the contract of `../shared/spec/` (routing-harness.md, memory-and-context.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

DEFAULT_LOCAL_MODEL = "qwen2.5-coder:14b"


@dataclass(frozen=True)
class Timeout:
    """Upstream timeouts in seconds: connect short, read long enough for long generations."""

    connect: float = 5.0
    read: float = 600.0
    write: float = 60.0
    pool: float = 10.0


@dataclass(frozen=True)
class BackendSettings:
    """One named backend under `backends:`.

    `type` is ollama | openai | anthropic | origin. `side` is which target it serves (local|cloud).
    `api_key_env` names an environment variable; the key itself is never in config, events or logs.
    `fallback` names another backend, or "none"; None means the default (local -> cloud).
    `max_tokens` caps the output tokens a translated request asks for (a small vLLM or llama.cpp context
    rejects Claude Code's 32k-128k `max_tokens`); None leaves the client's value.
    """

    name: str
    type: str
    side: str
    base_url: str | None = None
    api_key_env: str | None = None
    model: str | None = None
    timeout: Timeout = field(default_factory=Timeout)
    fallback: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    max_tokens: int | None = None


@dataclass(frozen=True)
class BackgroundSettings:
    token_budget: int = 20000
    max_entries: int = 20
    max_entry_chars: int = 4000


@dataclass(frozen=True)
class SummarySettings:
    enabled: bool = True
    sources: tuple[str, ...] = ("origin", "cloud", "local")


@dataclass(frozen=True)
class ContextSettings:
    max_events: int = 4096
    retain_days: int = 14
    warm_load_days: int = 2
    background: BackgroundSettings = field(default_factory=BackgroundSettings)
    summary: SummarySettings = field(default_factory=SummarySettings)


@dataclass(frozen=True)
class TransformSettings:
    """What a local model receives: the latest user turn plus at most `local_episode_count` episodes."""

    local_context: bool = True
    local_episode_count: int = 3


@dataclass(frozen=True)
class StickySettings:
    """Turn-family stickiness: a bound family stays off the local model for `ttl_seconds`, and for
    `grace_seconds` after its parent run ends."""

    ttl_seconds: float = 900.0
    grace_seconds: float = 120.0


@dataclass(frozen=True)
class ToolFollowupSettings:
    allowlist: tuple[str, ...] = ()
    denylist: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8787
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 32 * 1024 * 1024


@dataclass(frozen=True)
class DelegateSettings:
    """One delegate vendor under `delegate:` (claude, cursor-agent, agy, codex)."""

    vendor: str
    command: str
    args: tuple[str, ...] = ()
    model: str | None = None
    timeout: float = 600.0
    # Widening permissions (--force, bypass modes) only when the user's config asks for it.
    unsafe_permissions: bool = False


@dataclass(frozen=True)
class Settings:
    """Everything but the routing rules, which `config.Config` carries next to these."""

    source: str = "<bundled:default>"
    backends: Mapping[str, BackendSettings] = field(default_factory=lambda: MappingProxyType({}))
    context: ContextSettings = field(default_factory=ContextSettings)
    transform: TransformSettings = field(default_factory=TransformSettings)
    sticky: StickySettings = field(default_factory=StickySettings)
    tool_followup: ToolFollowupSettings = field(default_factory=ToolFollowupSettings)
    fan_out_enabled: bool = False
    server: ServerSettings = field(default_factory=ServerSettings)
    delegate: Mapping[str, DelegateSettings] = field(default_factory=lambda: MappingProxyType({}))
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
