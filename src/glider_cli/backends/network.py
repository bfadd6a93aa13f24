"""Which way each upstream request goes: straight, or through a forward proxy; and which CAs it trusts.

Contract (`routes(backends, trust_env=..., environ=...)`, pure: the environ is passed in, read once):
- A backend at a loopback host (127.0.0.0/8, ::1, localhost) always goes straight: a `proxy:` on it
  is a ConfigError and no proxy variable applies, so a `*_PROXY` variable cannot loop traffic back
  into Glider (or send a local model's prompts to a corporate proxy).
- Otherwise a backend's own `proxy:` URL is used for it, whatever the environment says.
- Otherwise, only with `server.trust_env: true` and only for cloud-side backends: `https_proxy` for an
  https:// backend, `http_proxy` for an http:// one, `all_proxy` for either when that one is unset
  (lower-case names win over upper-case, as in curl and urllib), unless `no_proxy` matches the host:
  `*`, a host name or domain suffix (`corp.example`, `.corp.example`, `*.corp.example`), an IP, an IP
  network (`10.0.0.0/8`), each optionally with `:port`. A proxy value without a scheme is http://;
  any scheme but http and https is a ConfigError (aiohttp speaks no SOCKS).
- `ca_file` (already resolved and checked by the config loader) is trusted for that backend's TLS on
  top of the system trust store, also through a proxy's CONNECT tunnel.
- A route is decided per origin (`scheme://host:port` exactly as the base URL spells it): two
  backends on one origin that would need different routes are a ConfigError. A URL whose origin
  belongs to no backend goes straight with the system trust store.
- `redact(url)` drops the password of a proxy URL, for anything shown or logged.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from glider_cli.backends.registry import ORIGIN_BASE_URL, Backend
from glider_cli.config.backends import is_loopback_host
from glider_cli.errors import ConfigError
from glider_cli.values import Frozen, init_fields


class Route(Frozen):
    """How requests to one origin leave: through `proxy` (None: straight), trusting `ca_file` too."""

    proxy: str | None
    ca_file: str | None

    def __init__(self, proxy: str | None = None, ca_file: str | None = None) -> None:
        init_fields(self, proxy, ca_file)


STRAIGHT = Route()


def origin_of(url: str) -> str:
    """`scheme://host:port` of an absolute URL, as spelled (the prefix before the path)."""
    start = url.find("://")
    end = url.find("/", start + 3 if start >= 0 else 0)
    return url if end < 0 else url[:end]


def redact(url: str) -> str:
    """The URL with its password (if any) replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name.lower()) or environ.get(name.upper())
    return value.strip() if value and value.strip() else None


def _proxy_url(value: str, variable: str) -> str:
    url = value if "://" in value else f"http://{value}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{variable} is {redact(url)!r}: Glider speaks only to http:// and https:// proxies",
            key="server.trust_env",
        )
    return url


def no_proxy_matches(no_proxy: str, host: str, port: int | None) -> bool:
    """Whether a `no_proxy` list names `host` (see the module contract for the forms)."""
    host = host.strip("[]").rstrip(".").lower()
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        want_port: int | None = None
        if entry.startswith("["):  # [::1]:8080
            addr, _, rest = entry[1:].partition("]")
            entry = addr
            if rest.startswith(":") and rest[1:].isdigit():
                want_port = int(rest[1:])
        elif entry.count(":") == 1:
            name, _, p = entry.partition(":")
            if p.isdigit():
                entry, want_port = name, int(p)
        if want_port is not None and want_port != port:
            continue
        if "/" in entry or ip is not None:
            try:
                if ip is not None and ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        suffix = entry.removeprefix("*").lstrip(".")
        if host == suffix or host.endswith("." + suffix):
            return True
    return False


def _route(backend: Backend, url: str, trust_env: bool, environ: Mapping[str, str]) -> Route:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if is_loopback_host(host):
        if backend.proxy:
            raise ConfigError(
                "a loopback backend never goes through a proxy", key=f"backends.{backend.name}.proxy"
            )
        return Route(None, backend.ca_file)
    if backend.proxy:
        return Route(backend.proxy, backend.ca_file)
    if not trust_env or backend.side != "cloud":
        return Route(None, backend.ca_file)
    scheme = parts.scheme
    name = f"{scheme}_proxy"
    value = _env(environ, name)
    if value is None:
        name, value = "all_proxy", _env(environ, "all_proxy")
    if value is None:
        return Route(None, backend.ca_file)
    no_proxy = _env(environ, "no_proxy")
    port = parts.port or (443 if scheme == "https" else 80)
    if no_proxy is not None and no_proxy_matches(no_proxy, host, port):
        return Route(None, backend.ca_file)
    return Route(_proxy_url(value, name.upper()), backend.ca_file)


def routes(backends: Iterable[Backend], *, trust_env: bool, environ: Mapping[str, str]) -> dict[str, Route]:
    """The route of every origin the backends reach (see the module contract)."""
    out: dict[str, Route] = {}
    owner: dict[str, str] = {}
    for backend in backends:
        bases = [backend.base_url] if backend.base_url else sorted(set(ORIGIN_BASE_URL.values()))
        for base in bases:
            origin = origin_of(base)
            route = _route(backend, base, trust_env, environ)
            if origin in out and out[origin] != route:
                raise ConfigError(
                    f"backends {owner[origin]!r} and {backend.name!r} both reach {origin} but with a "
                    "different proxy or ca_file; give them the same ones",
                    key=f"backends.{backend.name}",
                )
            out[origin] = route
            owner.setdefault(origin, backend.name)
    return out
