"""Validation of the `backends:` section -> `settings.BackendSettings` by name.

`read_backends(ck, section)` records every problem as an Issue (file, line and key) and returns the
frozen values with the spec's defaults for what is not given.

A backend's network keys: `proxy` must be an http:// or https:// URL with a host and no password (a
password belongs in HTTPS_PROXY with `server.trust_env`, never in a config file), and is refused on a
loopback backend (`is_loopback_host`: 127.0.0.0/8, ::1, localhost), which never goes through a
proxy. `ca_file` is resolved against the folder of the file that names it and must be a readable PEM
file of CA certificates (it is loaded once here, so a wrong file fails at load, not at first request).

`breaker` (`backends.breaker`): `false`, or a mapping of `enabled`, `failures` (an integer >= 1),
`window` and `cooldown` (seconds > 0); what is not given keeps its default (5 failures in 60 s,
30 s cool-down).
"""

from __future__ import annotations

import ipaddress
import os
from types import MappingProxyType
from urllib.parse import urlsplit

from glider_cli.config.located import Checker, LDict, looks_like_secret
from glider_cli.config.settings import BackendSettings, BreakerSettings, Timeout
from glider_cli.values import lazy_pattern

BACKEND_TYPES: tuple[str, ...] = ("ollama", "openai", "anthropic", "origin")
SIDES: tuple[str, ...] = ("local", "cloud")
_ENV_NAME = lazy_pattern(r"^[A-Za-z_][A-Za-z0-9_]*$")

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
    "structured_output",
    "proxy",
    "ca_file",
    "breaker",
)
TIMEOUT_KEYS = ("connect", "read", "write", "pool")
BREAKER_KEYS = ("enabled", "failures", "window", "cooldown")
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


def _breaker(ck: Checker, backend: LDict, path: str) -> BreakerSettings:
    """`breaker: false` (off), or a mapping of enabled / failures / window / cooldown (seconds)."""
    raw = backend.get("breaker")
    if raw is None:
        return BreakerSettings()
    if isinstance(raw, bool):
        return BreakerSettings(enabled=raw)
    key = f"{path}.breaker"
    if not isinstance(raw, LDict):
        what = "must be false or a mapping of enabled/failures/window/cooldown"
        ck.error(what, backend.where("breaker"), key=key)
        return BreakerSettings()
    ck.keys(raw, BREAKER_KEYS, path=key)
    base = BreakerSettings()
    enabled = ck.boolean(raw, "enabled", path=key)
    failures = ck.integer(raw, "failures", path=key, minimum=1)
    seconds: dict[str, float] = {}
    for name in ("window", "cooldown"):
        value = ck.number(raw, name, path=key)
        if value is not None and value <= 0:
            ck.error(f"must be more than 0 seconds, got {value:g}", raw.where(name), key=f"{key}.{name}")
            value = None
        seconds[name] = value if value is not None else getattr(base, name)
    return BreakerSettings(
        enabled=base.enabled if enabled is None else enabled,
        failures=failures or base.failures,
        window=seconds["window"],
        cooldown=seconds["cooldown"],
    )


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
            breaker=_breaker(ck, raw, path),
            structured_output=ck.boolean(raw, "structured_output", path=path),
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
