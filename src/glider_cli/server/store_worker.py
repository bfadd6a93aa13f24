"""The store views of `glider serve`, answered by a worker process of their own.

Why a process: a view of weeks of history parses index files, builds the entity graph and its search
index; in the server's own process that work would hold the GIL the proxy's event loop needs, and
its memory would stay with the server. In a worker it does neither: the proxy's latency is not moved
by the views, and the server's RSS does not grow with them.

Contract:
- `StoreWorker(paths, settings)` starts nothing; the first `call` starts the worker (a `spawn`ed
  process that builds one `store.context_store.ContextStore`, whose caches then serve later calls).
- `call(op, *args) -> (json bytes, meta)` runs one view and blocks until it is answered (callers run
  it on a thread); calls are answered one at a time, in order. Ops: `turns(limit, before)` (meta:
  `count`, `first`), `turn(id)`, `egress(days, session, limit)`, `usage(days, by, prices)` (prices:
  `Price.to_dict()`s), `query(text)` (the `--json` value),
  `index_tree(root, turn_id)`, `index_symbols(root)`, `prune(days, dry_run)`, and the MCP tools'
  `mcp_call` / `mcp_read` (`server.mcp_server.WorkerTools`). `stream("export")` yields the export's
  pieces.
- A view's QueryError or StoreError is raised again here with its message (and position).
- The worker runs at a lower priority (`nice` +10): where it shares a core with the server, the
  proxy's event loop is scheduled first.
- Memory budget, for the server and its worker together: every call carries the server's resident
  memory (`server_rss()`, read in the server as it sends the call); after answering, a worker whose
  own resident memory plus the server's is above `budget_mb` (150 MB) exits, and the next call
  starts a fresh one (its caches are rebuilt from the index files). What a worker keeps between
  views (the graph and search index of every turn, the day caches of its turn index, and what its
  allocator holds on to once they are dropped) is thereby bounded by what the server leaves of the
  budget; a server that alone is over it gets a fresh worker for every view. `recycled` counts the
  workers that exited over the budget. A worker idle for `idle` seconds exits too, and one whose
  server went away (its pipe closed).
  A worker that died is started again and the call retried once.
"""

from __future__ import annotations

import multiprocessing
import threading
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import orjson

from glider_cli.config.settings import ContextSettings
from glider_cli.errors import GliderError, QueryError, StoreError
from glider_cli.paths import Paths

BUDGET_MB = 150.0
IDLE = 300.0
NICE = 10

Meta = dict[str, Any]
RECYCLE = "recycle"  # in an answer's meta: the worker exits after it (over the memory budget)


def _rss_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def price_entries(prices: list[dict[str, Any]]) -> tuple[Any, ...]:
    """`Price.to_dict()`s (as a call carries them to the worker) -> Prices."""
    from glider_cli.config.pricing import Price

    return tuple(Price(**p) for p in prices)


def _ops(store: Any) -> dict[str, Callable[..., tuple[Any, Meta]]]:
    def turns(limit: int | None, before: str | None) -> tuple[Any, Meta]:
        page = store.turns(limit, before)
        return page, {"count": len(page), "first": page[0]["turn_id"] if page else None}

    def prune(days: int | None, dry_run: bool) -> tuple[Any, Meta]:
        plan = store.prune_plan(days)
        result = None if dry_run else store.prune_apply(plan)
        value = {
            "plan": plan.to_dict(),
            "applied": not dry_run,
            "result": result.to_dict() if result else None,
        }
        return value, {}

    return {
        "turns": turns,
        "turn": lambda tid: (store.turn(tid), {}),
        "egress": lambda days, session, limit: (store.egress(days, session, limit), {}),
        "usage": lambda days, by, prices: (store.usage(days, by, price_entries(prices)), {}),
        "query": lambda text: (store.query(text).to_json(), {}),
        "index_tree": lambda root, tid: (store.index_tree(Path(root), turn_id=tid).to_dict(), {}),
        "index_symbols": lambda root: (store.index_symbols(Path(root)).to_dict(), {}),
        "prune": prune,
    }


def _mcp_ops(store: Any) -> dict[str, Callable[..., tuple[Any, Meta]]]:
    """`app.mcp_tools` in the worker, for `server.mcp_server.WorkerTools`: `mcp_call(setup, name, args,
    named)` -> {"text", "structured", "is_error"}, `mcp_read(setup, uri, named)` -> {"text", "mime"};
    `setup` is (config, profile, default workspace), whose tools are built once (the config loaded)."""
    import os

    made: dict[tuple[Any, ...], Any] = {}

    def tools(setup: tuple[str | None, str | None, str | None]) -> Any:
        if setup not in made:
            from glider_cli.app.mcp_tools import McpTools
            from glider_cli.config.load import load_config

            config, profile, default = setup
            settings = load_config(config=config, profile=profile, environ=os.environ).settings
            made[setup] = McpTools(
                store.paths,
                store,
                lambda: settings,
                environ=os.environ,
                config=config,
                profile=profile,
                default=Path(default) if default else None,
            )
        return made[setup]

    def call(setup: Any, name: str, args: Any, named: str | None) -> tuple[Any, Meta]:
        a = tools(tuple(setup)).call(name, args, named)
        return {"text": a.text, "structured": a.structured, "is_error": a.is_error}, {}

    def read(setup: Any, uri: str, named: str | None) -> tuple[Any, Meta]:
        text, mime = tools(tuple(setup)).read_resource(uri, named)
        return {"text": text, "mime": mime}, {}

    return {"mcp_call": call, "mcp_read": read}


def _main(conn: Connection, paths: Paths, settings: ContextSettings, budget_mb: float, idle: float) -> None:
    """The worker: answer calls until idle, orphaned, or over the memory budget it shares with the
    server (whose resident memory comes with every call)."""
    import contextlib
    import os

    from glider_cli.store.context_store import ContextStore

    with contextlib.suppress(OSError, AttributeError):
        os.nice(NICE)  # on a shared core the proxy's event loop goes first

    store = ContextStore(paths, settings)
    ops = {**_ops(store), **_mcp_ops(store)}
    try:
        while conn.poll(idle):
            op, args, server_mb = conn.recv()
            reply: tuple[str, Any, Meta]
            try:
                if op == "export":
                    for piece in store.export():
                        conn.send(("chunk", piece, {}))
                    reply = ("end", b"", {})
                else:
                    value, meta = ops[op](*args)
                    reply = ("ok", orjson.dumps(value, default=str), meta)
            except QueryError as exc:
                reply = ("query_error", exc.message, {"position": exc.position})
            except GliderError as exc:
                reply = ("error", exc.message, {})
            except Exception:  # a bug: the server answers 500 with it, the worker lives on
                reply = ("bug", traceback.format_exc()[-2000:], {})
            over = _rss_mb() + server_mb > budget_mb
            if over:  # the server is told with the answer, and starts a fresh worker for the next call
                reply[2][RECYCLE] = True
            conn.send(reply)
            if over:
                return
    except (EOFError, OSError):
        return  # the server went away


class StoreWorker:
    """See the module contract. Thread-safe."""

    def __init__(
        self,
        paths: Paths,
        settings: ContextSettings,
        *,
        budget_mb: float = BUDGET_MB,
        idle: float = IDLE,
        server_rss: Callable[[], float] = _rss_mb,
    ) -> None:
        self.paths = paths
        self.settings = settings
        self.budget_mb = budget_mb
        self.idle = idle
        self.server_rss = server_rss
        self.started = 0
        self.recycled = 0
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Connection | None = None

    def _ensure(self) -> Connection:
        if self._conn is not None and self._proc is not None and self._proc.is_alive():
            return self._conn
        self._reap()
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_main,
            args=(child, self.paths, self.settings, self.budget_mb, self.idle),
            name="glider-store-worker",
            daemon=True,
        )
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self.started += 1
        return parent

    def _reap(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
        self._proc = self._conn = None

    def _exchange(self, op: str, args: tuple[Any, ...]) -> tuple[Connection, tuple[str, Any, Meta]]:
        for attempt in (1, 2):
            conn = self._ensure()
            try:
                conn.send((op, args, self.server_rss()))
                return conn, conn.recv()
            except (EOFError, OSError):
                self._reap()
                if attempt == 2:
                    raise StoreError("the store worker of glider serve stopped while answering") from None
        raise AssertionError("unreachable")

    @staticmethod
    def _raise(status: str, body: Any, meta: Meta) -> None:
        if status == "query_error":
            raise QueryError(str(body), position=meta.get("position"))
        if status == "error":
            raise StoreError(str(body))
        if status == "bug":
            raise RuntimeError(f"the store worker failed:\n{body}")

    def _recycled(self, meta: Meta) -> None:
        """The worker said it exits after this answer (over the budget): wait for it to be gone."""
        if meta.pop(RECYCLE, False):
            self.recycled += 1
            self._reap()

    def call(self, op: str, *args: Any) -> tuple[bytes, Meta]:
        with self._lock:
            _, (status, body, meta) = self._exchange(op, args)
            self._recycled(meta)
            self._raise(status, body, meta)
            return bytes(body), meta

    def stream(self, op: str, *args: Any) -> Iterator[bytes]:
        with self._lock:
            conn, (status, body, meta) = self._exchange(op, args)
            done = False
            try:
                while status == "chunk":
                    yield bytes(body)
                    status, body, meta = conn.recv()
                done = True
            finally:
                if not done:  # the reader left mid-stream: the rest of it must not reach the next call
                    self._reap()
            self._recycled(meta)
            self._raise(status, body, meta)

    def close(self) -> None:
        with self._lock:
            self._reap()
