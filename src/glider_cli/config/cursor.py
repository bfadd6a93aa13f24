"""The `cursor:` section: Glider's intercepting proxy for Cursor (`glider_cli.cursor`).

    cursor:
      port: 8899                      # also `glider serve --cursor-port`; absent: no proxy
      hosts: [api2.cursor.sh, api5.cursor.sh, "*.api5.cursor.sh"]   # decrypted; all else tunnelled
      resolve: {api2.cursor.sh: "127.0.0.1:8443"}                   # like curl --resolve
      upstream_ca_file: ~/corp-ca.pem  # trusted for Cursor's servers, besides the system store

`hosts` are glob patterns (`*` matches across dots). `resolve` maps a host name to `address:port`
for intercepted and tunnelled connections alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from glider_cli.config.located import Checker, LDict, or_default
from glider_cli.values import Frozen, init_fields

CURSOR_KEYS = ("port", "hosts", "resolve", "upstream_ca_file")
DEFAULT_HOSTS: tuple[str, ...] = ("api2.cursor.sh", "api5.cursor.sh", "*.api5.cursor.sh")
_EMPTY: Mapping[str, tuple[str, int]] = MappingProxyType({})


class CursorSettings(Frozen):
    port: int | None
    hosts: tuple[str, ...]
    resolve: Mapping[str, tuple[str, int]]
    upstream_ca_file: str | None

    def __init__(
        self,
        port: int | None = None,
        hosts: tuple[str, ...] = DEFAULT_HOSTS,
        resolve: Mapping[str, tuple[str, int]] = _EMPTY,
        upstream_ca_file: str | None = None,
    ) -> None:
        init_fields(self, port, hosts, resolve, upstream_ca_file)


def parse_address(value: str) -> tuple[str, int] | None:
    """`host:port` or `[v6]:port` -> (host, port); None when it is not one."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        return None
    return host.strip("[]"), int(port)


def read_cursor(ck: Checker, top: LDict) -> CursorSettings:
    sec = ck.section(top, "cursor", CURSOR_KEYS, path="cursor")
    d = CursorSettings()
    if sec is None:
        return d
    port = ck.integer(sec, "port", path="cursor", minimum=0)
    if port is not None and port > 65535:
        ck.error(f"must be a TCP port (0-65535), got {port}", sec.where("port"), key="cursor.port")
        port = None
    hosts = ck.str_list(sec, "hosts", path="cursor")
    for h in hosts or ():
        if not h.strip() or " " in h:
            ck.error(f"{h!r} is not a host name pattern", sec.where("hosts"), key="cursor.hosts")
    resolve: dict[str, tuple[str, int]] = {}
    raw = ck.str_map(sec, "resolve", path="cursor")
    for name, value in (raw or {}).items():
        addr = parse_address(value)
        if addr is None:
            ck.error(
                f"{value!r} (for {name!r}) is not address:port",
                sec.where("resolve"),
                key=f"cursor.resolve.{name}",
                hint='like curl --resolve: {"api2.cursor.sh": "127.0.0.1:8443"}',
            )
            continue
        resolve[name.lower()] = addr
    return CursorSettings(
        port=port,
        hosts=or_default(tuple(h.lower() for h in hosts) if hosts else None, d.hosts),
        resolve=MappingProxyType(resolve),
        upstream_ca_file=ck.string(sec, "upstream_ca_file", path="cursor"),
    )
