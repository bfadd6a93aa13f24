"""The Cursor proxy as `glider serve` runs it: started by the app's lifespan on the server's own event
loop when `cursor.port` is set (or `--cursor-port`), closed with it.

`CursorService(settings, home, proxy)`: `start()` loads or creates the CA (`$GLIDER_HOME/cursor/`),
listens on 127.0.0.1:`port` (0: any free port; `port` then says which) and returns the port;
`describe()` is what `/healthz` and the banner show. HTTP/2 clients are served by `h2_front` (Run
routed as RunSSE is). Which transport each Cursor client uses is kept for `glider doctor`
(`cursor.transports`); `notice(text)` is told once per client and transport (the terminal says it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from glider_cli.config.cursor import CursorSettings
from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.ca import CertAuthority
from glider_cli.cursor.front import FrontDoor
from glider_cli.cursor.h2_front import H2Front
from glider_cli.cursor.run_h2 import RunH2
from glider_cli.cursor.runs import CursorRuns
from glider_cli.cursor.transports import Transports
from glider_cli.cursor.upstream import Network
from glider_cli.proxy import Engine

HOST = "127.0.0.1"


class CursorService:
    def __init__(
        self,
        settings: CursorSettings,
        home: Path,
        proxy: Engine,
        *,
        notice: Callable[[str], None] | None = None,
        hold: float = 10.0,
        heartbeat: float = 3.0,
    ) -> None:
        self.settings = settings
        self.directory = home / "cursor"
        self.proxy = proxy
        self.notice = notice
        self.hold = hold
        self.heartbeat = heartbeat
        self.port: int | None = None
        self.ca: CertAuthority | None = None
        self._front: FrontDoor | None = None
        self._runs: CursorRuns | None = None
        self._network: Network | None = None

    async def start(self) -> int:
        assert self.settings.port is not None
        self.ca = CertAuthority.load_or_create(self.directory)
        self._network = Network(self.settings)
        self._runs = CursorRuns(
            self._network,
            CursorAdapter(self.proxy),
            hold=self.hold,
            heartbeat=self.heartbeat,
            max_steps=self.settings.max_steps,
            deadline=self.settings.turn_deadline_seconds,
            stream_wait=self.settings.stream_wait_seconds,
            shell_timeout=self.settings.shell_timeout_seconds,
            transports=Transports(self.directory, self.notice),
        )
        h2 = H2Front(self._runs, RunH2(self._runs, hold=self.hold), self._network)
        self._front = FrontDoor(self.settings.hosts, self.ca, self._network, self._runs, h2=h2)
        self.port = await self._front.start(HOST, self.settings.port)
        return self.port

    def describe(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "url": f"http://{HOST}:{self.port}",
            "hosts": list(self.settings.hosts),
            "ca": str(self.directory / "ca.pem"),
        }

    async def close(self) -> None:
        if self._front is not None:
            await self._front.close()
        if self._runs is not None:
            await self._runs.close()
        if self._network is not None:
            await self._network.close()
