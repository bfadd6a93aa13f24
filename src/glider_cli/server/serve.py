"""Run the proxy: load the config, build the app, serve it with uvicorn until interrupted.

Contract: `prepare(...)` does everything that can fail on the user's input (config, backends, bind
address) and returns a `Prepared` value without opening a socket, so `glider serve` reports a bad
config as `Error: ...` (exit 1) before anything listens. A config `glider lint` finds errors in
(one without a catch-all, a dead rule, a script whose `evaluate` takes the wrong arguments...) is
refused as a reload would refuse it (`server.reload`). `run(prepared)` blocks serving it.
Binds 127.0.0.1 unless the config (`server.host`) or `--host` says otherwise. uvicorn's access log is
off: request lines would be noise on the hot path, and the event log already records every request;
so is X-Forwarded-* handling (`proxy_headers`), since nothing reads the client address. Only
uvicorn's public settings are used (`uvicorn.Config`, `uvicorn.Server`); its `auto` choices pick
httptools and uvloop, both dependencies of Glider. The app's connection limits (`server.connections`:
deadlines, the per-client and overall caps, shedding idle connections) are uvicorn's `http` protocol
class. uvicorn's own `limit_concurrency` is not used: `server.max_connections` is counted there too,
where idle connections are shed before a new one is refused, and a refused one gets the same
protocol-shaped 503 with `Retry-After` as one over the per-client cap. `ws` is `none`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from glider_cli.config.model import Config
from glider_cli.values import Frozen, init_fields, replace

if TYPE_CHECKING:
    from glider_cli.proxy import Observer, RefusedObserver
    from glider_cli.server.inner import Hooks


class Prepared(Frozen):
    config: Config
    host: str
    port: int
    app: Any

    def __init__(self, config: Config, host: str, port: int, app: Any) -> None:
        init_fields(self, config, host, port, app)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def summary(self) -> dict[str, Any]:
        registry = self.app.state.registry
        return {
            "url": self.url,
            "config": self.config.source,
            "profile": self.config.profile,
            "backends": registry.describe(),
        }


def prepare(
    *,
    config: str | None = None,
    profile: str | None = None,
    host: str | None = None,
    port: int | None = None,
    environ: Mapping[str, str] | None = None,
    observer: Observer | None = None,
    refused_observer: RefusedObserver | None = None,
    cursor_port: int | None = None,
    hooks: Hooks | None = None,
) -> Prepared:
    from glider_cli.config.load import load_config
    from glider_cli.server.app import create_app

    env = os.environ if environ is None else environ
    cfg = load_config(config=config, profile=profile, environ=env)
    if cursor_port is not None:  # `--cursor-port` wins over `cursor.port`
        cursor = replace(cfg.settings.cursor, port=cursor_port)
        cfg = replace(cfg, settings=replace(cfg.settings, cursor=cursor))
    _refuse_lint_errors(cfg)
    bind_host = host or cfg.settings.server.host
    bind_port = cfg.settings.server.port if port is None else port
    app = create_app(
        cfg,
        environ=env,
        bound_host=bind_host,
        observer=observer,
        refused_observer=refused_observer,
        hooks=hooks,
    )
    return Prepared(cfg, bind_host, bind_port, app)


def _refuse_lint_errors(cfg: Config) -> None:
    from glider_cli.app.lint import lint

    errors = lint(cfg).errors
    if errors:
        first = errors[0]
        more = f"{len(errors) - 1} more; " if len(errors) > 1 else ""
        hint = (first.hint + "; " if first.hint else "") + f"{more}run `glider lint`"
        raise replace(first, hint=hint).to_error()


def uvicorn_options(app: Any = None) -> dict[str, Any]:
    """The `uvicorn.Config` settings `glider serve` runs `app` with (tests serve the app with the same
    ones). For an app `create_app` made, the protocol class of its connection limits (`state.limits`:
    the head and body deadlines, the per-client and overall connection caps). Without one, the rest
    (a bare ASGI app on the same stack)."""
    options: dict[str, Any] = {
        "log_level": "warning",
        "access_log": False,
        # Glider binds loopback and reads no client address: X-Forwarded-* rewriting is work for nothing.
        "proxy_headers": False,
        "lifespan": "on",
        "server_header": False,
        "timeout_graceful_shutdown": 5,
        # Glider serves no WebSocket (`server.model_routes`), and an upgrade would take the
        # connection from the protocol that enforces its limits (`server.connections`).
        "ws": "none",
    }
    limits = getattr(getattr(app, "state", None), "limits", None)
    if limits is not None:
        options["http"] = limits.protocol_class()
    return options


def run(prepared: Prepared, *, on_bound: Callable[[], None] | None = None) -> None:
    """Serve until interrupted. The listening socket is bound first (a port that is taken is an
    Error naming it, exit 1, before anything is printed as listening), then `on_bound` runs, then
    uvicorn serves that socket (`uvicorn.Server.run(sockets=...)`). Ctrl-C ends it quietly (uvicorn
    re-raises the signal once it has shut down); a server that could not start exits 3."""
    import socket

    import uvicorn

    from glider_cli.errors import GliderError

    family = socket.AF_INET6 if ":" in prepared.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((prepared.host, prepared.port))
    except OSError as exc:
        sock.close()
        raise GliderError(
            f"cannot listen on {prepared.url}: {exc.strerror or exc}",
            hint="another glider serve (or another server) has the port; pick one with --port",
        ) from None
    sock.set_inheritable(True)
    if on_bound is not None:
        on_bound()
    options = uvicorn_options(prepared.app)
    config = uvicorn.Config(prepared.app, host=prepared.host, port=prepared.port, **options)
    server = uvicorn.Server(config)
    collect_for_serving()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    if not server.started:
        raise SystemExit(3)


@contextlib.contextmanager
def collector_paused() -> Iterator[Callable[[], None]]:
    """The cyclic garbage collector off while `glider serve` starts (issue 29's cold start); yields
    `started`, to call once the app's lifespan has started (`glider serve` calls it from the app's
    `state.on_ready`, before uvicorn listens, so before the first request is read): it freezes what
    the start left since `collect_for_serving` and turns the collector back on (if it was on).
    Leaving without it turns the collector back on as it was.

    A start allocates much and frees little (modules, the config, the app, then in the lifespan the
    upstream client's modules, the warm-loaded ring and the turn families rebuilt from it), so the
    collections it set off walked live objects and found next to nothing: ~20 ms of a start on the
    2-core test machine (`gc.callbacks` timings), and the lifespan's share came back as one
    collection of ~10 ms on the first request when the collector was merely turned on again. What
    start-up loaded before the app's lifespan is still collected and frozen by `collect_for_serving`
    (which collects while the collector is off); what the lifespan left is frozen by `started`
    without a walk: the upstream client's modules live as long as the process, a turn family holds
    no reference back (evicted, it is freed by reference counting, frozen or not), and the garbage
    the lifespan made (~1k objects, most of them from building the upstream client's classes at
    import) stays with them, once."""
    import gc

    was = gc.isenabled()
    gc.disable()
    done = False

    def started() -> None:
        nonlocal done
        if was and not done:
            done = True
            gc.freeze()
            gc.enable()

    try:
        yield started
    finally:
        if was and not done:
            gc.enable()


# Full collections wait for this many collections of the middle generation (Python's default: 10).
GC_FULL_EVERY = 100
# A young collection starts once this many more container objects were made than freed (Python's
# default: 700, which the objects of 32 requests in flight pass all the time).
GC_YOUNG = 10_000


def collect_for_serving() -> None:
    """Freeze what start-up loaded, for the cyclic garbage collector (issue 29).

    Everything loaded by now (modules, the config, the app: ~37k objects) lives as long as the
    process: frozen (`gc.freeze`), it is left out of every later full collection instead of being
    walked again each time. It is frozen without a collection first: under `glider serve`
    (`collector_paused`) the start made ~230 objects of cyclic garbage (~60 kB: classes built and
    dropped, uvicorn's logging configurator), which stay frozen with the rest, while the full
    collection that found them walked every object alive for 13-37 ms of each start on the 2-core
    test machine (as `started` freezes the lifespan's garbage unwalked). Under load (c=32, 9,600 requests, the
    collector's own timings through `gc.callbacks`) the full collections took 155 ms instead of
    246 ms. A full collection then walks what requests leave alive (turn families, sticky
    bindings: ~33k objects once their indexes are full), freed by reference counting when
    evicted, so a full collection finds next to nothing: they wait for `GC_FULL_EVERY` middle collections
    instead of 10 (steady state, same load: one full collection of 47-80 ms instead of nine or
    ten, 146-272 ms in all; each still as long, since a pause is the size of the heap).

    Young collections start after `GC_YOUNG` net allocations of container objects instead of 700:
    the 32 requests in flight of the bench's c=32 hold more than 700 between them, so at Python's
    threshold a young collection ran every ~9 requests (1,041-1,099 per 9,600 requests, ~100 of
    the middle generation on top) and found next to nothing to free, since a request's objects are
    freed by reference counting when it ends. At 10,000: 0-3 young collections per 9,600 requests,
    serve's CPU per request -5-12% (same run, interleaved; `gc.callbacks` timings)."""
    import gc

    gc.freeze()
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, middle, GC_FULL_EVERY)
