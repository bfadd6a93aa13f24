"""Validation of the config sections that are not routing rules -> `settings.Settings` pieces.

Each `read_*` takes the section's LDict (or None when absent) and a Checker, records every problem
as an Issue, and returns the frozen value with the spec's defaults for what is not given. The
`backends:` section is read in `config.backends`.
"""

from __future__ import annotations

import math
import re

from glider_cli.config.located import Checker, LDict, or_default
from glider_cli.config.orchestration import read_orchestration as read_orchestration
from glider_cli.config.settings import (
    BackgroundSettings,
    ContextSettings,
    DelegateSettings,
    ServerSettings,
    StickySettings,
    SummarySettings,
    ToolFollowupSettings,
    TransformSettings,
)
from glider_cli.values import lazy_pattern

DELEGATE_VENDORS: tuple[str, ...] = ("claude", "cursor-agent", "agy", "codex")
SUMMARY_SOURCES: tuple[str, ...] = ("origin", "cloud", "local", "none")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# routing.tool_followup entries: a tool name, or `Tool:subagent_type` (Claude Code's Agent:Explore).
_TOOL_ENTRY = lazy_pattern(r"^[^\s:]+(?::[^\s:]+)?$")

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
    "cap_loopback_clients",
)


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
    port = ck.port(sec, "port", path="server")
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
        cap_loopback_clients=or_default(
            ck.boolean(sec, "cap_loopback_clients", path="server"), d.cap_loopback_clients
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
    keys = ("ttl_seconds", "grace_seconds", "title_wait_seconds")
    sec = ck.section(routing, "sticky", keys, path="routing.sticky")
    d = StickySettings()
    if sec is None:
        return d
    return StickySettings(
        ttl_seconds=or_default(ck.number(sec, "ttl_seconds", path="routing.sticky"), d.ttl_seconds),
        grace_seconds=or_default(ck.number(sec, "grace_seconds", path="routing.sticky"), d.grace_seconds),
        title_wait_seconds=or_default(_title_wait(ck, sec), d.title_wait_seconds),
    )


def _title_wait(ck: Checker, sec: LDict) -> float | None:
    """`routing.sticky.title_wait_seconds`: a short bound (a title holds its request while it waits)."""
    return ck.number(sec, "title_wait_seconds", path="routing.sticky", at_most=10, unit="seconds")


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
