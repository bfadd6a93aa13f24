"""The transport each Cursor client uses, as the proxy sees its runs (`store.cursor_transports`).

`Transports(directory, notice)`: `seen(client_type, transport, host)` per run: `HTTP/2 Run` (routed by
`run_h2`), `HTTP/1.1 RunSSE` (routed by `runs`) or `HTTP/1.1 Run` (which Cursor refuses with 464).
The file is rewritten when a client's transport or host changes, else at most once a minute (so `at`
says when it was used last); `notice(text)` is told once per client and transport (the terminal of
`glider serve` says it). A file that cannot be written is logged, never raised: a run does not fail
for it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from glider_cli.store import cursor_transports

REFRESH = 60.0
CLIENTS = {"ide": "the IDE", "cli": "cursor-agent"}
log = logging.getLogger(__name__)


class Transports:
    def __init__(self, directory: Path, notice: Callable[[str], None] | None = None) -> None:
        self.directory = directory
        self.notice = notice
        self.entries: dict[str, dict[str, Any]] = cursor_transports.load(directory)
        self._told: set[tuple[str, str]] = set()
        self._written = 0.0

    def seen(self, client_type: str | None, transport: str, host: str) -> None:
        client = client_type if client_type in CLIENTS else "unknown"
        now = time.time()
        last = self.entries.get(client)
        changed = last is None or last.get("transport") != transport or last.get("host") != host
        self.entries[client] = {"transport": transport, "host": host, "at": round(now, 3)}
        if changed or now - self._written >= REFRESH:
            self._written = now
            try:
                cursor_transports.record(self.directory, self.entries)
            except OSError as exc:
                log.warning("cursor: cannot write %s: %s", self.directory / cursor_transports.FILENAME, exc)
        if (client, transport) not in self._told and self.notice is not None:
            self._told.add((client, transport))
            who = CLIENTS.get(client, "a Cursor client")
            routed = "refused by Cursor (464)" if transport == "HTTP/1.1 Run" else "routed"
            try:
                self.notice(f"cursor: {who} uses {transport} to {host}: {routed}")
            except Exception:
                pass
