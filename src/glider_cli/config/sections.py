"""Validation of the config sections that are not routing rules -> `settings.Settings` pieces.

Each `read_*` takes the section's LDict (or None when absent) and a Checker, records every problem
as an Issue, and returns the frozen value with the spec's defaults for what is not given.

A backend's network keys: `proxy` must be an http:// or https:// URL with a host and no password (a
password belongs in HTTPS_PROXY with `server.trust_env`, never in a config file), and is refused on a
loopback backend (`is_loopback_host`: 127.0.0.0/8, ::1, localhost), which never goes through a
proxy. `ca_file` is resolved against the folder of the file that names it and must be a readable PEM
file of CA certificates (it is loaded once here, so a wrong file fails at load, not at first request).
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from types import MappingProxyType
from urllib.parse import urlsplit

from glider_cli.config.located import Checker, LDict, looks_like_secret, or_default
from glider_cli.config.orchestration import read_orchestration as read_orchestration
from glider_cli.config.settings import (
    BackendSettings,
    BackgroundSettings,
    ContextSettings,
    DelegateSettings,
    ServerSettings,
    StickySettings,
    SummarySettings,
    Timeout,
    ToolFollowupSettings,
    TransformSettings,
)

BACKEND_TYPES: tuple[str, ...] = ("ollama", "openai", "anthropic", "origin")
SIDES: tuple[str, ...] = ("local", "cloud")
DELEGATE_VENDORS: tuple[str, ...] = ("claude", "cursor-agent", "agy", "codex")
SUMMARY_SOURCES: tuple[str, ...] = ("origin", "cloud", "local", "none")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# routing.tool_followup entries: a tool name, or `Tool:subagent_type` (Claude Code's Agent:Explore).
_TOOL_ENTRY = re.compile(r"^[^\s:]+(?::[^\s:]+)?$")

BACKEND_KEYS = (
    "type",
    "side",
    "base_url",
    "api_key_env",
    "model",
    "timeout",
    "fallback",
    "headers",
    "max_tokens",
    "context_window",
    "tools",
    "proxy",
    "ca_file",
)
TIMEOUT_KEYS = ("connect", "read", "write", "pool")
SERVER_KEYS = (
    "host",
    "port",
    "allowed_hosts",
    "max_body_bytes",
    "trust_env",
    "header_timeout",
    "body_timeout",
    "max_connections_per_client",
    "max_connections",
)
# The type whose well-known base URL (backends.registry) is on this machine.
_LOOPBACK_BY_DEFAULT = frozenset({"ollama"})


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 (also IPv4-mapped), `localhost` and `*.localhost` (RFC 6761)."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _proxy(ck: Checker, raw: LDict, path: str, base_url: str | None, kind: str | None) -> str | None:
    url = ck.string(raw, "proxy", path=path)
    if url is None:
        return None
    where, key = raw.where("proxy"), f"{path}.proxy"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
    except ValueError as exc:
        ck.error(f"is not a URL ({exc})", where, key=key)
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        ck.error(
            f"must be an http:// or https:// proxy URL with a host, got {parts.scheme or 'no'} scheme",
            where,
            key=key,
            hint="SOCKS proxies are not supported",
        )
        return None
    if parts.password is not None:
        ck.error(
            "a proxy password does not belong in a config file",
            where,
            key=key,
            hint="put the proxy URL in HTTPS_PROXY / HTTP_PROXY and set server.trust_env: true",
        )
        return None
    host = urlsplit(base_url).hostname if base_url else None
    if (host is not None and is_loopback_host(host)) or (base_url is None and kind in _LOOPBACK_BY_DEFAULT):
        ck.error("a loopback backend never goes through a proxy", where, key=key)
        return None
    return url


def _ca_file(ck: Checker, raw: LDict, path: str, base_url: str | None) -> str | None:
    name = ck.string(raw, "ca_file", path=path)
    if name is None:
        return None
    where, key = raw.where("ca_file"), f"{path}.ca_file"
    full = os.path.expanduser(name)
    if not os.path.isabs(full) and where[0] is not None:
        full = os.path.join(os.path.dirname(os.path.abspath(where[0])), full)
    if not os.path.isfile(full):
        ck.error(f"CA file {full} does not exist", where, key=key)
        return None
    import ssl

    try:
        ssl.create_default_context().load_verify_locations(cafile=full)
    except (OSError, ssl.SSLError) as exc:
        ck.error(f"CA file {full} is not a PEM file of CA certificates ({exc})", where, key=key)
        return None
    if base_url is not None and base_url.startswith("http://"):
        ck.error(
            "has no effect: base_url is http://, and a CA file is for TLS",
            where,
            key=key,
            severity="warning",
        )
    return full


def _timeout(ck: Checker, backend: LDict, path: str) -> Timeout:
    raw = backend.get("timeout")
    if raw is None:
        return Timeout()
    if isinstance(raw, bool) or not isinstance(raw, int | float | LDict):
        ck.error(
            "must be a number of seconds or a mapping of connect/read/write/pool",
            backend.where("timeout"),
            key=f"{path}.timeout",
        )
        return Timeout()
    if isinstance(raw, int | float):
        if raw <= 0:
            ck.error(
                f"must be more than 0 seconds, got {raw}", backend.where("timeout"), key=f"{path}.timeout"
            )
            return Timeout()
        # As in httpx: one number bounds every phase. A mapping sets phases one by one.
        n = float(raw)
        return Timeout(connect=n, read=n, write=n, pool=n)
    ck.keys(raw, TIMEOUT_KEYS, path=f"{path}.timeout")
    base = Timeout()
    values = {k: ck.number(raw, k, path=f"{path}.timeout") for k in TIMEOUT_KEYS}
    return Timeout(**{k: (v if v is not None else getattr(base, k)) for k, v in values.items()})


def read_backends(ck: Checker, section: LDict | None) -> dict[str, BackendSettings]:
    out: dict[str, BackendSettings] = {}
    if section is None:
        return out
    for name, raw in section.items():
        path = f"backends.{name}"
        if not isinstance(raw, LDict):
            ck.error("must be a mapping", section.where(name), key=path)
            continue
        ck.keys(raw, BACKEND_KEYS, path=path)
        kind = ck.string(raw, "type", path=path, choices=BACKEND_TYPES)
        if "type" not in raw:
            ck.error(f"needs a type ({', '.join(BACKEND_TYPES)})", raw.where(), key=f"{path}.type")
        side = ck.string(raw, "side", path=path, choices=SIDES) or ("local" if kind == "ollama" else "cloud")
        key_env = ck.string(raw, "api_key_env", path=path)
        if key_env is not None and not _ENV_NAME.match(key_env):
            what = "a literal key" if looks_like_secret(key_env) else f"{key_env!r}"
            ck.error(
                f"must name an environment variable (like ANTHROPIC_API_KEY), not {what}",
                raw.where("api_key_env"),
                key=f"{path}.api_key_env",
            )
            key_env = None
        headers = ck.str_map(raw, "headers", path=path) or {}
        base_url = ck.string(raw, "base_url", path=path)
        out[name] = BackendSettings(
            name=name,
            type=kind or "openai",
            side=side,
            base_url=base_url,
            api_key_env=key_env,
            model=ck.string(raw, "model", path=path),
            timeout=_timeout(ck, raw, path),
            fallback=ck.string(raw, "fallback", path=path),
            headers=MappingProxyType(headers),
            max_tokens=ck.integer(raw, "max_tokens", path=path, minimum=1),
            context_window=ck.integer(raw, "context_window", path=path, minimum=256),
            tools=ck.boolean(raw, "tools", path=path),
            proxy=_proxy(ck, raw, path, base_url, kind),
            ca_file=_ca_file(ck, raw, path, base_url),
        )
    for name, backend in out.items():
        fb = backend.fallback
        if fb is not None and fb != "none" and fb not in out:
            ck.error(
                f"fallback {fb!r} is not a backend; known: {', '.join(out) or 'none'}",
                section[name].where("fallback"),
                key=f"backends.{name}.fallback",
            )
        if fb == name:
            ck.error(
                "a backend cannot fall back to itself",
                section[name].where("fallback"),
                key=f"backends.{name}.fallback",
            )
    return out


def read_context(ck: Checker, top: LDict) -> ContextSettings:
    sec = ck.section(
        top,
        "context",
        ("max_events", "retain_days", "warm_load_days", "background", "summary"),
        path="context",
    )
    if sec is None:
        return ContextSettings()
    d = ContextSettings()
    bg_sec = ck.section(
        sec, "background", ("token_budget", "max_entries", "max_entry_chars"), path="context.background"
    )
    bg = BackgroundSettings()
    if bg_sec is not None:
        p = "context.background"
        bg = BackgroundSettings(
            token_budget=or_default(ck.integer(bg_sec, "token_budget", path=p, minimum=0), bg.token_budget),
            max_entries=or_default(ck.integer(bg_sec, "max_entries", path=p, minimum=0), bg.max_entries),
            max_entry_chars=or_default(
                ck.integer(bg_sec, "max_entry_chars", path=p, minimum=1), bg.max_entry_chars
            ),
        )
    sm_sec = ck.section(sec, "summary", ("enabled", "sources"), path="context.summary")
    sm = SummarySettings()
    if sm_sec is not None:
        sources = ck.str_list(sm_sec, "sources", path="context.summary")
        for s in sources or ():
            if s not in SUMMARY_SOURCES:
                ck.error(
                    f"{s!r} is not one of {', '.join(SUMMARY_SOURCES)}",
                    sm_sec.where("sources"),
                    key="context.summary.sources",
                )
        sm = SummarySettings(
            enabled=or_default(ck.boolean(sm_sec, "enabled", path="context.summary"), sm.enabled),
            sources=or_default(sources, sm.sources),
        )
    return ContextSettings(
        max_events=or_default(ck.integer(sec, "max_events", path="context", minimum=1), d.max_events),
        retain_days=or_default(ck.integer(sec, "retain_days", path="context", minimum=0), d.retain_days),
        warm_load_days=or_default(
            ck.integer(sec, "warm_load_days", path="context", minimum=0), d.warm_load_days
        ),
        background=bg,
        summary=sm,
    )


TRANSFORM_KEYS = (
    "local_context",
    "local_episode_count",
    "local_system_chars",
    "local_tools",
    "local_tool_chars",
)


def read_transform(ck: Checker, top: LDict) -> TransformSettings:
    sec = ck.section(top, "transform", TRANSFORM_KEYS, path="transform")
    d = TransformSettings()
    if sec is None:
        return d
    p = "transform"
    return TransformSettings(
        local_context=or_default(ck.boolean(sec, "local_context", path=p), d.local_context),
        local_episode_count=or_default(
            ck.integer(sec, "local_episode_count", path=p, minimum=0), d.local_episode_count
        ),
        local_system_chars=or_default(
            ck.integer(sec, "local_system_chars", path=p, minimum=0), d.local_system_chars
        ),
        local_tools=or_default(ck.str_list(sec, "local_tools", path=p), d.local_tools),
        local_tool_chars=or_default(
            ck.integer(sec, "local_tool_chars", path=p, minimum=0), d.local_tool_chars
        ),
    )


def read_server(ck: Checker, top: LDict) -> ServerSettings:
    sec = ck.section(top, "server", SERVER_KEYS, path="server")
    d = ServerSettings()
    if sec is None:
        return d
    port = ck.integer(sec, "port", path="server", minimum=0)
    if port is not None and port > 65535:
        ck.error(f"must be a TCP port (0-65535), got {port}", sec.where("port"), key="server.port")
        port = None
    return ServerSettings(
        host=or_default(ck.string(sec, "host", path="server"), d.host),
        port=or_default(port, d.port),
        allowed_hosts=or_default(ck.str_list(sec, "allowed_hosts", path="server"), d.allowed_hosts),
        max_body_bytes=or_default(
            ck.integer(sec, "max_body_bytes", path="server", minimum=1), d.max_body_bytes
        ),
        trust_env=or_default(ck.boolean(sec, "trust_env", path="server"), d.trust_env),
        header_timeout=or_default(_seconds(ck, sec, "header_timeout"), d.header_timeout),
        body_timeout=or_default(_seconds(ck, sec, "body_timeout"), d.body_timeout),
        max_connections_per_client=or_default(
            ck.integer(sec, "max_connections_per_client", path="server", minimum=1),
            d.max_connections_per_client,
        ),
        max_connections=or_default(
            ck.integer(sec, "max_connections", path="server", minimum=1), d.max_connections
        ),
    )


def _seconds(ck: Checker, sec: LDict, key: str) -> float | None:
    """A `server:` deadline: a number of seconds above 0 (0 would refuse every request)."""
    value = ck.number(sec, key, path="server")
    if value is not None and not 0 < value < math.inf:
        ck.error(f"must be a number of seconds above 0, got {value:g}", sec.where(key), key=f"server.{key}")
        return None
    return value


def read_delegates(ck: Checker, top: LDict) -> dict[str, DelegateSettings]:
    sec = ck.section(top, "delegate", DELEGATE_VENDORS, path="delegate")
    out: dict[str, DelegateSettings] = {}
    if sec is None:
        return out
    for vendor in DELEGATE_VENDORS:
        if vendor not in sec:
            continue
        p = f"delegate.{vendor}"
        raw = ck.section(sec, vendor, ("command", "args", "model", "timeout", "unsafe_permissions"), path=p)
        if raw is None:
            out[vendor] = DelegateSettings(vendor=vendor, command=vendor)
            continue
        timeout = ck.number(raw, "timeout", path=p)
        out[vendor] = DelegateSettings(
            vendor=vendor,
            command=or_default(ck.string(raw, "command", path=p), vendor),
            args=or_default(ck.str_list(raw, "args", path=p), ()),
            model=ck.string(raw, "model", path=p),
            timeout=timeout if timeout else DelegateSettings.timeout,
            unsafe_permissions=or_default(ck.boolean(raw, "unsafe_permissions", path=p), False),
        )
    return out


def read_sticky(ck: Checker, routing: LDict) -> StickySettings:
    sec = ck.section(routing, "sticky", ("ttl_seconds", "grace_seconds"), path="routing.sticky")
    d = StickySettings()
    if sec is None:
        return d
    return StickySettings(
        ttl_seconds=or_default(ck.number(sec, "ttl_seconds", path="routing.sticky"), d.ttl_seconds),
        grace_seconds=or_default(ck.number(sec, "grace_seconds", path="routing.sticky"), d.grace_seconds),
    )


def read_tool_followup(ck: Checker, routing: LDict) -> ToolFollowupSettings:
    sec = ck.section(routing, "tool_followup", ("allowlist", "denylist"), path="routing.tool_followup")
    if sec is None:
        return ToolFollowupSettings()
    allow = ck.str_list(sec, "allowlist", path="routing.tool_followup") or ()
    deny = ck.str_list(sec, "denylist", path="routing.tool_followup") or ()
    for key, names in (("allowlist", allow), ("denylist", deny)):
        for name in names:
            if not _TOOL_ENTRY.match(name):
                ck.error(
                    f"{name!r} is not a tool name, or a tool name and a subagent type (Agent:Explore)",
                    sec.where(key),
                    key=f"routing.tool_followup.{key}",
                )
    both = sorted(set(allow) & set(deny))
    if both:
        ck.error(
            f"tools on both the allowlist and the denylist: {', '.join(both)}",
            sec.where("denylist"),
            key="routing.tool_followup",
        )
    return ToolFollowupSettings(allowlist=allow, denylist=deny)
