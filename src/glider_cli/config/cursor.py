"""The `cursor:` section: Glider's intercepting proxy for Cursor (`glider_cli.cursor`).

    cursor:
      port: 8899                      # also `glider serve --cursor-port`; absent: no proxy
      hosts: [api2.cursor.sh, api5.cursor.sh, "*.api5.cursor.sh"]   # decrypted; all else tunnelled
      resolve: {api2.cursor.sh: "127.0.0.1:8443"}                   # like curl --resolve
      upstream_ca_file: ~/corp-ca.pem  # trusted for Cursor's servers, besides the system store
      max_steps: 25                   # a local tool turn's model calls, at most
      turn_deadline_seconds: 600      # a local tool turn's time, at most
      shell_timeout_seconds: 120      # a local tool turn's shell command, when the model gives none
      stream_wait_seconds: 60         # a routed run's RunSSE must open within this, else: abandoned

`hosts` are glob patterns (`*` matches across dots). `resolve` maps a host name to `address:port`
for intercepted and tunnelled connections alike. `max_steps` (1-200) and `turn_deadline_seconds`
(5-3600) bound the agent loop Glider runs for a local Cursor turn that uses tools (`cursor.agent_loop`);
`shell_timeout_seconds` (1-3600) is the timeout its shell commands are sent with (Cursor's client stops
a command past it) unless the model gives one.
`stream_wait_seconds` (1-3600): a run decided by Glider whose `RunSSE` the client has not opened by
then (it sent the run's BidiAppend, then timed out or went away) is closed with `outcome: abandoned`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from glider_cli.config.located import Checker, LDict, or_default
from glider_cli.values import Frozen, init_fields

CURSOR_KEYS = (
    "port",
    "hosts",
    "resolve",
    "upstream_ca_file",
    "max_steps",
    "turn_deadline_seconds",
    "stream_wait_seconds",
    "shell_timeout_seconds",
)
MAX_STEPS = 25
TURN_DEADLINE = 600.0
STREAM_WAIT = 60.0
SHELL_TIMEOUT = 120.0
DEFAULT_HOSTS: tuple[str, ...] = ("api2.cursor.sh", "api5.cursor.sh", "*.api5.cursor.sh")
_EMPTY: Mapping[str, tuple[str, int]] = MappingProxyType({})


class CursorSettings(Frozen):
    port: int | None
    hosts: tuple[str, ...]
    resolve: Mapping[str, tuple[str, int]]
    upstream_ca_file: str | None
    max_steps: int
    turn_deadline_seconds: float
    stream_wait_seconds: float
    shell_timeout_seconds: float

    def __init__(
        self,
        port: int | None = None,
        hosts: tuple[str, ...] = DEFAULT_HOSTS,
        resolve: Mapping[str, tuple[str, int]] = _EMPTY,
        upstream_ca_file: str | None = None,
        max_steps: int = MAX_STEPS,
        turn_deadline_seconds: float = TURN_DEADLINE,
        stream_wait_seconds: float = STREAM_WAIT,
        shell_timeout_seconds: float = SHELL_TIMEOUT,
    ) -> None:
        limits = (max_steps, turn_deadline_seconds, stream_wait_seconds, shell_timeout_seconds)
        init_fields(self, port, hosts, resolve, upstream_ca_file, *limits)


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
    port = ck.port(sec, "port", path="cursor")
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
    steps = ck.integer(sec, "max_steps", path="cursor", minimum=1, maximum=200)
    deadline = ck.number(sec, "turn_deadline_seconds", path="cursor", between=(5, 3600), unit="seconds")
    wait = ck.number(sec, "stream_wait_seconds", path="cursor", between=(1, 3600), unit="seconds")
    shell = ck.number(sec, "shell_timeout_seconds", path="cursor", between=(1, 3600), unit="seconds")
    return CursorSettings(
        port=port,
        hosts=or_default(tuple(h.lower() for h in hosts) if hosts else None, d.hosts),
        resolve=MappingProxyType(resolve),
        upstream_ca_file=ck.string(sec, "upstream_ca_file", path="cursor"),
        max_steps=or_default(steps, d.max_steps),
        turn_deadline_seconds=or_default(deadline, d.turn_deadline_seconds),
        stream_wait_seconds=or_default(wait, d.stream_wait_seconds),
        shell_timeout_seconds=or_default(shell, d.shell_timeout_seconds),
    )
