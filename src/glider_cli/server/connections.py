"""What one connection to `glider serve` may hold: deadlines on each request head and body, caps on
the connections open (met by shedding idle ones first), and the counts `/healthz` shows.

Contract:
- `ConnectionLimits(settings.server)` is one per app (`create_app`, `state.limits`): the settings
  (`header_timeout`, `body_timeout`, `max_connections_per_client`, `max_connections`,
  `cap_loopback_clients`), the open connections by peer address, and `counts()` (what `/healthz`
  shows: open, over_cap, shed by why and by cap, header_timeouts, body_timeouts).
- `limits.protocol_class()` is what `glider serve` gives `uvicorn.Config(http=...)`: one object per
  connection that wraps the protocol uvicorn itself would run (`http="auto"`: httptools), passes
  every asyncio Protocol call through to it unchanged, and records the connection as a `Connection`
  keyed by its peer `(host, port)`: the `client` of every ASGI scope uvicorn builds for it, which is
  how the ASGI side (`server.deadlines`) finds it.
- Head deadline: from the moment a connection is made, and again each time the app has answered its
  last request, the connection has `header_timeout` seconds to deliver a complete request head
  (uvicorn calls the app: `Connection.begin()`), else it is closed (counted as a header timeout).
  That covers a client that connects and sends nothing, one that trickles a head, a trickled head on
  the second request of a keep-alive connection, and a body trickled after its request was answered.
  It never applies while a request is served (`begin()` to `end()`), so a long stream is never cut.
  uvicorn's keep-alive timeout (5 s) still closes an idle connection first when it is shorter.
- Body deadline: `Body` is a request's `receive`/`send` while its body is due (`server.deadlines`
  makes one); at `body_timeout` seconds after `begin()` the connection expires it. A model call
  (`server.app`) is watched instead (`watch(task, due)`): at `due`, before its body is in
  (`body_in()`), the connection cancels its task and says so (`late`).
- Disconnects: a watched request whose connection is lost before its reply is complete
  (`replied()`) has its task cancelled by the connection, and `lost` says so: the app sees the
  disconnect without a task of its own waiting on `receive()` (uvicorn's way of telling).
- One watchdog timer per connection enforces both: re-armed only when it fires, never per request,
  at most `tick` (the shorter of the two timeouts) apart, or sooner when a deadline is due sooner.
- Shedding, not refusing: a new connection past `max_connections` open ones in all, or (for a peer
  the per-client cap applies to) past `max_connections_per_client` from its peer host, first takes
  the place of a connection that is doing no useful work: one still without a complete request
  head (it connected and sent nothing, or it trickles a head), then an idle keep-alive one (it was
  answered and sent nothing since), the longest waiting first within each; that connection is
  closed and counted under `shed` by why (`incomplete_head`, `idle_keep_alive`) and under
  `shed_for` by the cap. A connection whose request is being served (`begin()` to `end()`: its
  body arriving, its answer computed or streamed) is never shed, nor one that has just sent a
  complete head (`HEAD_GRACE` seconds: its request is about to be served). Only when nothing can
  be shed is the new connection `over_cap` (the key of the cap; counted): the ASGI side answers
  its request 503 with `Retry-After` and closes it. It takes no place under the caps.
- The per-client cap skips loopback peers unless `server.cap_loopback_clients`: on 127.0.0.1 every
  local client (agents, the dashboard, scripts, any web page) is one peer, and would share it.

The wrapped uvicorn protocol, and the uvicorn names it depends on, are `server.guarded`.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import math
from typing import Any

from starlette.types import Message, Receive, Send

from glider_cli.config.settings import ServerSettings
from glider_cli.server.guarded import Guarded, uvicorn_http_class

Peer = tuple[str, int]


class Body:
    """`receive` and `send` of one request whose body is still due, under its deadline: once its
    connection's watchdog calls `expire()`, the pending (or next) `receive()` returns
    `http.disconnect` and what the app sends before its reply started is dropped (`server.deadlines`
    answers 408 in its place)."""

    __slots__ = ("_receive", "_send", "_waiter", "deadline", "done", "expired", "started")

    def __init__(self, receive: Receive, send: Send, deadline: float) -> None:
        self._receive = receive
        self._send = send
        self._waiter: asyncio.Task[Any] | None = None
        self.deadline = deadline
        self.done = False
        self.expired = False
        self.started = False

    def expire(self) -> None:
        self.expired = True
        if self._waiter is not None:
            self._waiter.cancel()

    async def receive(self) -> Message:
        if self.done:
            return await self._receive()
        if self.expired:
            return {"type": "http.disconnect"}
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        self._waiter = task
        try:
            message = await self._receive()
        except asyncio.CancelledError:
            # Ours (the deadline) unless the task was cancelled for another reason as well.
            if self.expired and task.uncancel() <= cancelling:
                return {"type": "http.disconnect"}
            raise
        finally:
            self._waiter = None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.done = True
        return message

    async def send(self, message: Message) -> None:
        if self.expired and not self.started:
            return  # the app's answer to the deadline's disconnect: the 408 replaces it
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


# How long a connection that has just sent a complete request head is not shed: uvicorn has
# scheduled its request, which begins on the next turn of the event loop.
HEAD_GRACE = 1.0
# Why a connection was shed, by what it was doing (the order is the order in which they go).
INCOMPLETE_HEAD = "incomplete_head"
IDLE_KEEP_ALIVE = "idle_keep_alive"


class Connection:
    """One open connection: its peer, the cap it is over (its key; "" when admitted), its watchdog.

    The watchdog is one timer per connection, re-armed only when it fires (never per request): at
    most every `tick` seconds (the shorter deadline), or at a deadline that is due sooner. It closes
    a connection idle past `header_timeout` and expires a request's `body` past its deadline (or
    cancels a watched request's task, `watch`)."""

    __slots__ = (
        "_due",
        "_idle_since",
        "_limits",
        "_loop",
        "_timer",
        "_transport",
        "_watched",
        "active",
        "admitted",
        "body",
        "head_seen",
        "heard",
        "late",
        "lost",
        "over_cap",
        "peer",
        "served",
    )

    def __init__(
        self, limits: ConnectionLimits, transport: asyncio.BaseTransport, peer: Peer, over_cap: str
    ) -> None:
        self._limits = limits
        self._transport = transport
        self.peer = peer
        self.over_cap = over_cap
        self.admitted = not over_cap  # holds a place under the caps
        self.body: Body | None = None
        self.served = False  # answered at least one request
        self.heard = False  # bytes arrived since it was last answered (a next head under way)
        self.head_seen = -math.inf  # when bytes ending a request head last arrived between requests
        self.active = 0
        # The watched request (`watch`): its task, when its body is due (inf once it is in), and
        # why the connection cancelled it (`late`, `lost`).
        self._watched: asyncio.Task[Any] | None = None
        self._due = math.inf
        self.late = False
        self.lost = False
        self._loop = asyncio.get_running_loop()
        self._idle_since = self._loop.time()
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(limits.tick, self._check)

    def begin(self) -> float:
        """uvicorn called the app with a request of this connection (its head is complete); the
        time now, from which its body deadline runs."""
        self.active += 1
        self.head_seen = -math.inf
        return self._loop.time()

    def end(self, watched: asyncio.Task[Any] | None = None) -> None:
        """The app returned (on the task `watched`, when its request was watched): the next request
        head is due within `header_timeout`."""
        self.active -= 1
        if watched is not None and watched is self._watched:
            self._watched = None  # (a pipelined request's task may be watched already)
        if self.active == 0:
            self.body = None
            self.served = True
            self.heard = False
            self._idle_since = self._loop.time()

    def awaits(self, body: Body) -> None:
        """The request being served has its body due: `body`, which the watchdog expires at its deadline."""
        self.body = body

    def watch(self, task: asyncio.Task[Any], due: float) -> None:
        """The request being served runs as `task`: cancel it when its body is not in (`body_in()`)
        by `due` (then `late`), or when the connection is lost before its reply is complete
        (`replied()`; then `lost`). `end(task)` ends the watch."""
        self._watched = task
        self._due = due
        self.late = self.lost = False

    def body_in(self) -> None:
        """The watched request has its body (or will not read it): its deadline is off."""
        self._due = math.inf

    def replied(self) -> None:
        """The watched request's reply is complete (or handed over whole): a disconnect now
        cancels nothing."""
        self._watched = None

    def release(self) -> bool:
        """Give up its place under the caps (closed or shed); False when it held none."""
        if not self.admitted:
            return False
        self.admitted = False
        return True

    def received(self, data: bytes) -> None:
        """Bytes arrived while no request of this connection is served (a head under way)."""
        self.heard = True
        if data.find(b"\r\n\r\n") >= 0:  # `in` on bytes costs ~1k instructions more on 3.11
            self.head_seen = self._loop.time()

    def shed_class(self, now: float) -> tuple[int, float] | None:
        """Where this connection stands in the shedding order (lowest first), None if it is doing
        useful work: (0, since) without a complete request head, (1, since) idle keep-alive."""
        if self.active or not self.admitted or now - self.head_seen < HEAD_GRACE:
            return None
        if self._transport.is_closing():
            return None
        return (1 if self.served and not self.heard else 0, self._idle_since)

    def shed(self) -> str:
        """Close this connection to make room; why it could go."""
        why = IDLE_KEEP_ALIVE if self.served and not self.heard else INCOMPLETE_HEAD
        self._abort(self._transport)
        return why

    def closed(self) -> None:
        self.body = None
        watched = self._watched
        if watched is not None:
            self._watched = None
            self.lost = True
            watched.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        transport = self._transport
        if transport.is_closing():
            return
        limits = self._limits
        now = self._loop.time()
        due = now + limits.tick
        if not self.active:
            head_due = self._idle_since + limits.header_timeout
            if now >= head_due:
                self._limits.header_timed_out()
                self._abort(transport)
                return
            due = min(due, head_due)
        elif self.body is not None and not self.body.done and not self.body.expired:
            if now >= self.body.deadline:
                self.body.expire()
            else:
                due = min(due, self.body.deadline)
        elif self._watched is not None and self._due != math.inf:
            if now >= self._due:
                watched, self._watched = self._watched, None
                self.late = True
                watched.cancel()
            else:
                due = min(due, self._due)
        self._timer = self._loop.call_at(due, self._check)

    @staticmethod
    def _abort(transport: asyncio.BaseTransport) -> None:
        # A client that does not read what it was sent would keep a closing transport open forever.
        if isinstance(transport, asyncio.WriteTransport) and transport.get_write_buffer_size():
            transport.abort()
        else:
            transport.close()


@functools.cache
def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class ConnectionLimits:
    """The limits of one app's connections and what they counted (see the module contract)."""

    def __init__(self, settings: ServerSettings) -> None:
        self.header_timeout = settings.header_timeout
        self.body_timeout = settings.body_timeout
        # How often at most a connection's watchdog wakes: never later than either deadline.
        self.tick = min(settings.header_timeout, settings.body_timeout)
        self.max_per_client = settings.max_connections_per_client
        self.max_connections = settings.max_connections
        self.cap_loopback = settings.cap_loopback_clients
        self.connections: dict[Peer, Connection] = {}
        self._per_host: dict[str, int] = {}
        self._admitted = 0  # open connections under both caps
        self.over_cap = 0
        self.header_timeouts = 0
        self.body_timeouts = 0
        self.shed = {INCOMPLETE_HEAD: 0, IDLE_KEEP_ALIVE: 0}
        self.shed_for: dict[str, int] = {}

    def opened(self, transport: asyncio.BaseTransport) -> Connection | None:
        """Record a new connection (None: a peer with no address, such as a Unix socket's)."""
        info = transport.get_extra_info("peername")
        if not isinstance(info, tuple | list) or len(info) < 2:
            return None
        peer = (str(info[0]), int(info[1]))
        host = peer[0]
        over = ""
        if (
            self._per_host.get(host, 0) >= self.max_per_client
            and (self.cap_loopback or not _is_loopback(host))
            and not self._shed_one("server.max_connections_per_client", host)
        ):
            over = "server.max_connections_per_client"
        elif self._admitted >= self.max_connections and not self._shed_one("server.max_connections"):
            over = "server.max_connections"
        if over:
            self.over_cap += 1
        else:
            self._per_host[host] = self._per_host.get(host, 0) + 1
            self._admitted += 1
        conn = Connection(self, transport, peer, over)
        self.connections[peer] = conn
        return conn

    def _shed_one(self, cap: str, host: str | None = None) -> bool:
        """Close the first connection in the shedding order (of `host`, or of all) to make room for
        a new one under `cap`; False when every one is doing useful work."""
        now = asyncio.get_running_loop().time()
        victim: Connection | None = None
        best: tuple[int, float] | None = None
        for conn in self.connections.values():
            if host is not None and conn.peer[0] != host:
                continue
            rank = conn.shed_class(now)
            if rank is not None and (best is None or rank < best):
                victim, best = conn, rank
        if victim is None:
            return False
        self.shed[victim.shed()] += 1
        self.shed_for[cap] = self.shed_for.get(cap, 0) + 1
        self._release(victim)
        return True

    def header_timed_out(self) -> None:
        """A connection was closed for not sending a complete request head in time (counted)."""
        self.header_timeouts += 1

    def body_timed_out(self) -> None:
        """A request was answered 408 for not sending its body in time (counted)."""
        self.body_timeouts += 1

    def _release(self, conn: Connection) -> None:
        if not conn.release():
            return
        self._admitted -= 1
        host = conn.peer[0]
        left = self._per_host.get(host, 1) - 1
        if left > 0:
            self._per_host[host] = left
        else:
            self._per_host.pop(host, None)

    def closed(self, conn: Connection) -> None:
        conn.closed()
        if self.connections.get(conn.peer) is conn:
            del self.connections[conn.peer]
        self._release(conn)

    def counts(self) -> dict[str, Any]:
        return {
            "open": len(self.connections),
            "over_cap": self.over_cap,
            "shed": dict(self.shed),
            "shed_for": dict(self.shed_for),
            "header_timeouts": self.header_timeouts,
            "body_timeouts": self.body_timeouts,
        }

    def protocol_class(self) -> type[asyncio.Protocol]:
        """The `uvicorn.Config(http=...)` class for connections under these limits."""
        limits = self
        inner = uvicorn_http_class()

        class Protocol(Guarded):
            _limits = limits
            _inner_class = inner

        return Protocol
