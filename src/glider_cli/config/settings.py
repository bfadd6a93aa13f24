"""Glider's settings: frozen values with the spec's defaults.

The config loader (`glider_cli.config.load`) builds a Settings from YAML after strict validation; every
other module receives the piece it needs as a value and never reads files or the environment itself.
Names and defaults here are the contract of `../shared/spec/` (routing-harness.md, memory-and-context.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from glider_cli.config.cursor import CursorSettings
from glider_cli.config.orchestration_settings import OrchestrationSettings, StrategySettings
from glider_cli.config.telemetry import TelemetrySettings
from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.config.pricing import Price

DEFAULT_LOCAL_MODEL = "qwen2.5-coder:14b"
# The default of every mapping field: read-only, so one instance serves them all.
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Timeout(Frozen):
    """Upstream timeouts in seconds: connect short, read long enough for long generations.

    What each phase bounds with the aiohttp client is stated in `backends.client`'s contract.
    """

    connect: float
    read: float
    write: float
    pool: float

    def __init__(
        self, connect: float = 5.0, read: float = 600.0, write: float = 60.0, pool: float = 10.0
    ) -> None:
        init_fields(self, connect, read, write, pool)


class BreakerSettings(Frozen):
    """A backend's circuit breaker (`backends.breaker`): after `failures` failed attempts (refused,
    timed out, 5xx) within `window` seconds the backend is skipped for `cooldown` seconds.
    `enabled: false` (or `breaker: false`) turns it off for that backend."""

    enabled: bool
    failures: int
    window: float
    cooldown: float

    def __init__(
        self, enabled: bool = True, failures: int = 5, window: float = 60.0, cooldown: float = 30.0
    ) -> None:
        init_fields(self, enabled, failures, window, cooldown)


class BackendSettings(Frozen):
    """One named backend under `backends:`.

    `type` is ollama | openai | anthropic | origin. `side` is which target it serves (local|cloud).
    `api_key_env` names an environment variable; the key itself is never in config, events or logs.
    `fallback` names another backend, or "none"; None means the default (local -> cloud).
    `max_tokens` caps the output tokens a translated request asks for (a small vLLM or llama.cpp context
    rejects Claude Code's 32k-128k `max_tokens`); None leaves the client's value.
    `context_window` (tokens) and `tools` (whether the server can call tools) override what the
    capability probe reads from the server (`backends.probe`); None: as probed, or unknown.
    `structured_output: false` says the server cannot constrain a reply to a JSON Schema (the gate then
    refuses requests that ask for one); None: the probed dialect (`protocol.structured`).
    `proxy` is an http:// or https:// forward proxy URL for this backend only (never for a loopback
    one); `ca_file` a PEM file of CA certificates trusted for its TLS on top of the system's (an
    absolute path: the loader resolves it against the config file's folder).
    `breaker` is when a failing backend is skipped for a cool-down (`BreakerSettings`).
    """

    name: str
    type: str
    side: str
    base_url: str | None
    api_key_env: str | None
    model: str | None
    timeout: Timeout
    fallback: str | None
    headers: Mapping[str, str]
    max_tokens: int | None
    context_window: int | None
    tools: bool | None
    proxy: str | None
    ca_file: str | None
    breaker: BreakerSettings
    structured_output: bool | None

    def __init__(
        self,
        name: str,
        type: str,
        side: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        model: str | None = None,
        timeout: Timeout = Timeout(),
        fallback: str | None = None,
        headers: Mapping[str, str] = _EMPTY,
        max_tokens: int | None = None,
        context_window: int | None = None,
        tools: bool | None = None,
        proxy: str | None = None,
        ca_file: str | None = None,
        breaker: BreakerSettings = BreakerSettings(),
        structured_output: bool | None = None,
    ) -> None:
        init_fields(
            self,
            name,
            type,
            side,
            base_url,
            api_key_env,
            model,
            timeout,
            fallback,
            headers,
            max_tokens,
            context_window,
            tools,
            proxy,
            ca_file,
            breaker,
            structured_output,
        )


class BackgroundSettings(Frozen):
    token_budget: int
    max_entries: int
    max_entry_chars: int

    def __init__(self, token_budget: int = 20000, max_entries: int = 20, max_entry_chars: int = 4000) -> None:
        init_fields(self, token_budget, max_entries, max_entry_chars)


class SummarySettings(Frozen):
    enabled: bool
    sources: tuple[str, ...]

    def __init__(self, enabled: bool = True, sources: tuple[str, ...] = ("origin", "cloud", "local")) -> None:
        init_fields(self, enabled, sources)


class ContextSettings(Frozen):
    max_events: int
    retain_days: int
    warm_load_days: int
    background: BackgroundSettings
    summary: SummarySettings

    def __init__(
        self,
        max_events: int = 4096,
        retain_days: int = 14,
        warm_load_days: int = 2,
        background: BackgroundSettings = BackgroundSettings(),
        summary: SummarySettings = SummarySettings(),
    ) -> None:
        init_fields(self, max_events, retain_days, warm_load_days, background, summary)


# The tools a local model keeps besides those the turn used (`transform.local_tools`): Claude Code's core set,
# then Codex's (`exec_command` is the shell tool of current Codex versions, `shell` of older ones), then
# Gemini CLI's. One list serves all three: only tools the client offered are kept.
DEFAULT_LOCAL_TOOLS: tuple[str, ...] = (
    "Bash",
    "Read",
    "Edit",
    "Write",
    "Grep",
    "Glob",
    "shell",
    "exec_command",
    "apply_patch",
    "update_plan",
    "run_shell_command",
    "read_file",
    "replace",
    "write_file",
    "grep_search",
    "glob",
    "list_directory",
)


class TransformSettings(Frozen):
    """What a local model receives (`turns.pack`): the latest user turn plus at most
    `local_episode_count` episodes, the client's system prompt cut to `local_system_chars` (its start and
    its environment lines), and the tools the turn used plus `local_tools`, each description cut to
    `local_tool_chars`. `local_context: false` sends the client's request as it is."""

    local_context: bool
    local_episode_count: int
    local_system_chars: int
    local_tools: tuple[str, ...]
    local_tool_chars: int

    def __init__(
        self,
        local_context: bool = True,
        local_episode_count: int = 3,
        local_system_chars: int = 2000,
        local_tools: tuple[str, ...] = DEFAULT_LOCAL_TOOLS,
        local_tool_chars: int = 120,
    ) -> None:
        init_fields(
            self, local_context, local_episode_count, local_system_chars, local_tools, local_tool_chars
        )


class StickySettings(Frozen):
    """Turn-family stickiness: a bound family stays off the local model for `ttl_seconds`, and for
    `grace_seconds` after its parent run ends. A title request that quotes a prompt no family has
    opened with yet waits up to `title_wait_seconds` for that prompt's request (0: never waits)."""

    ttl_seconds: float
    grace_seconds: float
    title_wait_seconds: float

    def __init__(
        self, ttl_seconds: float = 900.0, grace_seconds: float = 120.0, title_wait_seconds: float = 0.3
    ) -> None:
        init_fields(self, ttl_seconds, grace_seconds, title_wait_seconds)


class ToolFollowupSettings(Frozen):
    allowlist: tuple[str, ...]
    denylist: tuple[str, ...]

    def __init__(self, allowlist: tuple[str, ...] = (), denylist: tuple[str, ...] = ()) -> None:
        init_fields(self, allowlist, denylist)


class ServerSettings(Frozen):
    """`server:`. `trust_env`: cloud backends honour HTTPS_PROXY / HTTP_PROXY / NO_PROXY (off: the
    environment's proxy variables are ignored; loopback backends never use them).
    What a connection may hold (`server.connections`): `header_timeout` seconds to send a request's
    head, `body_timeout` seconds for its whole body (408 beyond), `max_connections_per_client` open
    connections from one peer address (not applied to loopback peers unless
    `cap_loopback_clients`), `max_connections` open connections in all; past a cap idle connections
    are shed first, and only then is a new one refused (503)."""

    host: str
    port: int
    allowed_hosts: tuple[str, ...]
    max_body_bytes: int
    trust_env: bool
    header_timeout: float
    body_timeout: float
    max_connections_per_client: int
    max_connections: int
    cap_loopback_clients: bool

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8787,
        allowed_hosts: tuple[str, ...] = (),
        max_body_bytes: int = 32 * 1024 * 1024,
        trust_env: bool = False,
        header_timeout: float = 10.0,
        body_timeout: float = 30.0,
        max_connections_per_client: int = 64,
        max_connections: int = 512,
        cap_loopback_clients: bool = False,
    ) -> None:
        init_fields(
            self,
            host,
            port,
            allowed_hosts,
            max_body_bytes,
            trust_env,
            header_timeout,
            body_timeout,
            max_connections_per_client,
            max_connections,
            cap_loopback_clients,
        )


class DelegateSettings(Frozen):
    """One delegate vendor under `delegate:` (claude, cursor-agent, agy, codex)."""

    vendor: str
    command: str
    args: tuple[str, ...]
    model: str | None
    timeout: float
    # Widening permissions (--force, bypass modes) only when the user's config asks for it.
    unsafe_permissions: bool

    def __init__(
        self,
        vendor: str,
        command: str,
        args: tuple[str, ...] = (),
        model: str | None = None,
        timeout: float = 600.0,
        unsafe_permissions: bool = False,
    ) -> None:
        init_fields(self, vendor, command, args, model, timeout, unsafe_permissions)


class Settings(Frozen):
    """Everything but the routing rules, which `config.Config` carries next to these."""

    source: str
    backends: Mapping[str, BackendSettings]
    context: ContextSettings
    transform: TransformSettings
    sticky: StickySettings
    tool_followup: ToolFollowupSettings
    fan_out_enabled: bool
    server: ServerSettings
    delegate: Mapping[str, DelegateSettings]
    extra: Mapping[str, Any]
    orchestration: OrchestrationSettings
    pricing: tuple[Price, ...]
    cursor: CursorSettings
    telemetry: TelemetrySettings

    def __init__(
        self,
        source: str = "<bundled:default>",
        backends: Mapping[str, BackendSettings] = _EMPTY,
        context: ContextSettings = ContextSettings(),
        transform: TransformSettings = TransformSettings(),
        sticky: StickySettings = StickySettings(),
        tool_followup: ToolFollowupSettings = ToolFollowupSettings(),
        fan_out_enabled: bool = False,
        server: ServerSettings = ServerSettings(),
        delegate: Mapping[str, DelegateSettings] = _EMPTY,
        extra: Mapping[str, Any] = _EMPTY,
        orchestration: OrchestrationSettings | None = None,
        pricing: tuple[Price, ...] = (),
        cursor: CursorSettings = CursorSettings(),
        telemetry: TelemetrySettings = TelemetrySettings(),
    ) -> None:
        if orchestration is None:
            orchestration = OrchestrationSettings(fan_out=StrategySettings(enabled=fan_out_enabled))
        init_fields(
            self,
            source,
            backends,
            context,
            transform,
            sticky,
            tool_followup,
            fan_out_enabled,
            server,
            delegate,
            extra,
            orchestration,
            pricing,
            cursor,
            telemetry,
        )
