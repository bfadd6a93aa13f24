"""Hot reload for `glider serve`: the config in force (`LiveConfig`) and what swaps it (`Reloader`).

Contract:
- A reload is asked for by the file watcher (`run`: the config file and every file it names — the
  profiles it extends, every rule script — polled for a changed mtime, size or existence every
  `interval` seconds, ~1 s), by SIGHUP (`install_sighup`: on the main thread only; without it
  SIGHUP ends the process), or by `POST /api/router/reload`.
- A reload parses the config the server was started with (the same file, or the same bundled
  profile), lints it (`app.lint`: every error `glider lint` reports) and builds a Router from it, off
  the event loop. Then, on the loop, between two requests, it swaps in one step the Router, the
  sticky and tool_followup settings, `routing.local_only` and `routing.escalate`
  (`turns.lifecycle.Turns.use`: turn families and sticky bindings survive). A request in flight
  keeps the decision it was opened with.
  The backends are not swapped: the registry, the local path's probed capabilities and its pack are
  built on them, so a config whose `backends:` (or side defaults) changed is refused with a hint to
  restart; changes to `server:`, `context:`, `delegate:`, `transform:` and `cursor:` take effect on a restart
  (the outcome's `restart_needed` says which).
- A config that does not load, that lint finds errors in, or whose backends changed, changes
  nothing: the rules in force
  keep answering; the reason is logged (`uvicorn.error`, warning) and written as a `ConfigRejected`
  event (source, trigger, errors), and `last` keeps it for `GET /api/router/lint`. A swap writes a
  `ConfigReloaded` event (source, trigger, rules: the count of `config.sequence.in_force`, files,
  restart_needed) and is told to the app state's `on_reloaded(outcome)` when it has one (`glider
  serve` prints a line). Reloads never overlap.
- `LiveConfig.differs()` says whether the files on disk are not the ones the config in force was
  built from (content digests taken when it was).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glider_cli.config.sequence import in_force
from glider_cli.errors import ConfigError
from glider_cli.store.eventlog.events import CONFIG_RELOADED
from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.config.model import Config
    from glider_cli.domain import EventSink
    from glider_cli.proxy import Decider, Engine

_log = logging.getLogger("uvicorn.error")
_RESTART_SECTIONS = ("server", "context", "delegate", "transform", "cursor")


def watched_files(config: Config) -> tuple[Path, ...]:
    """The files a config was built from: its own file, the files its rules were written in (the
    profiles it extends) and every script a rule names."""
    names = [config.source, *config.files, *(r.trigger.file or "" for r in config.rules)]
    out = dict.fromkeys(Path(n) for n in names if n and not n.startswith("<"))
    return tuple(out)


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class ReloadOutcome(Frozen):
    """What one reload did: swapped (`ok`) or rejected (`errors`), and why it ran."""

    ok: bool
    trigger: str
    at: float
    source: str
    errors: tuple[dict[str, Any], ...]
    rules: int
    restart_needed: tuple[str, ...]

    def __init__(
        self,
        ok: bool,
        trigger: str,
        at: float,
        source: str,
        errors: tuple[dict[str, Any], ...] = (),
        rules: int = 0,
        restart_needed: tuple[str, ...] = (),
    ) -> None:
        init_fields(self, ok, trigger, at, source, errors, rules, restart_needed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "trigger": self.trigger,
            "at": self.at,
            "source": self.source,
            "errors": list(self.errors),
            "rules": self.rules,
            "restart_needed": list(self.restart_needed),
        }


class LiveConfig:
    """The config in force and the router built from it; `Reloader` replaces both at once."""

    def __init__(self, config: Config, router: Decider) -> None:
        self.config = config
        self.router = router
        self.last: ReloadOutcome | None = None
        self._digests: dict[Path, str | None] | None = None

    def swap(self, config: Config, router: Decider) -> None:
        """The config and router in force from now on (both at once)."""
        self.config, self.router = config, router

    def reloaded(self, outcome: ReloadOutcome) -> None:
        """How the last reload ended (applied or rejected)."""
        self.last = outcome

    def mark(self, digests: dict[Path, str | None] | None = None) -> None:
        """Remember the files' contents as the ones the config in force was built from."""
        self._digests = (
            digests if digests is not None else {p: _digest(p) for p in watched_files(self.config)}
        )

    def differs(self) -> bool:
        if self._digests is None:
            return False
        now = {p: _digest(p) for p in watched_files(self.config)}
        return now != self._digests


class Reloader:
    """See the module contract. Created by `create_app`; started and stopped by its lifespan."""

    def __init__(
        self,
        live: LiveConfig,
        proxy: Engine,
        environ: Mapping[str, str],
        sink: EventSink,
        *,
        interval: float | None = 1.0,
        state: Any = None,
    ) -> None:
        self.live = live
        self.proxy = proxy
        self.environ = environ
        self.sink = sink
        self.interval = interval
        self.state = state  # the app's state: `state.on_reloaded(outcome)`, when set, hears each swap
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._stats: dict[Path, tuple[int, int] | None] = {}
        self._sighup = False

    # ------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Take the files' state as the one in force, start watching, and take SIGHUP if we can."""
        self.live.mark()
        self._stats = {p: _stat(p) for p in watched_files(self.live.config)}
        if self.interval is not None:
            self._task = asyncio.get_running_loop().create_task(self.run())
        self.install_sighup()

    async def stop(self) -> None:
        if self._sighup:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            self._sighup = False
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def install_sighup(self) -> None:
        """SIGHUP reloads (instead of ending the server). Only the main thread can take a signal:
        a server run in another thread (the tests') reloads by its watcher and the API only."""
        sighup = getattr(signal, "SIGHUP", None)
        if sighup is None or threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(sighup, lambda: loop.create_task(self.reload("sighup")))
        self._sighup = True

    async def run(self) -> None:
        """Poll the watched files; a change reloads, once the files have stayed still for a poll."""
        assert self.interval is not None
        pending = False
        while True:
            await asyncio.sleep(self.interval)
            now = {p: _stat(p) for p in watched_files(self.live.config)}
            if now != self._stats:
                self._stats, pending = now, True  # still being written, maybe: wait one more poll
                continue
            if pending:
                pending = False
                await self.reload("watch")
                self._stats = {p: _stat(p) for p in watched_files(self.live.config)}

    # ------------------------------------------------------------------------------ reloading

    async def reload(self, trigger: str) -> ReloadOutcome:
        async with self._lock:
            built = await asyncio.to_thread(self._build)
            return self._apply(trigger, built)

    def _build(self) -> tuple[Config | None, Decider | None, tuple[dict[str, Any], ...], dict[Path, Any]]:
        """Load, lint and compile the config (off the loop): the config and its router, or the errors
        that refuse it. The files' digests are taken first, so an edit made while this runs is seen
        as a difference (and reloaded by the watcher)."""
        from glider_cli.app.lint import lint
        from glider_cli.config.load import check_config
        from glider_cli.router import Router

        old = self.live.config
        digests = {p: _digest(p) for p in watched_files(old)}
        bundled = old.source.startswith("<bundled:")
        try:
            config, issues = check_config(
                config=None if bundled else old.source,
                profile=(old.profile or "default") if bundled else None,
                environ=self.environ,
            )
            errors = [i for i in issues if i.severity == "error"] or list(lint(config).errors)
            router = None if errors else Router(config)
        except ConfigError as exc:
            error = {"rule": exc.rule, "key": exc.key, "message": exc.detail, "file": exc.file or old.source}
            return None, None, ({**error, "line": exc.line, "severity": "error"},), digests
        if errors:
            return None, None, tuple(i.to_dict() for i in errors), digests
        moved = _backends_moved(old, config)
        if moved is not None:
            return None, None, (moved,), digests
        digests.update({p: _digest(p) for p in watched_files(config) if p not in digests})
        return config, router, (), digests

    def _apply(self, trigger: str, built: tuple[Any, ...]) -> ReloadOutcome:
        config, router, errors, digests = built
        old = self.live.config
        at = time.time()
        if config is None or router is None:
            outcome = ReloadOutcome(False, trigger, at, old.source, errors, len(in_force(old)))
            self.live.reloaded(outcome)
            first = errors[0]["message"] if errors else "unknown"
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            _log.warning(
                "glider: config %s rejected (%s), the rules in force stay: %s%s",
                old.source,
                trigger,
                first,
                more,
            )
            self.sink.emit(
                "ConfigRejected", {"source": old.source, "trigger": trigger, "errors": list(errors)}
            )
            return outcome
        self._swap(config, router)
        self.live.mark(digests)
        restart = tuple(s for s in _RESTART_SECTIONS if _section(old, s) != _section(config, s))
        outcome = ReloadOutcome(True, trigger, at, config.source, (), len(in_force(config)), restart)
        self.live.reloaded(outcome)
        _log.info("glider: config %s reloaded (%s): %d rules in force", config.source, trigger, outcome.rules)
        data = outcome.to_dict()
        data.pop("errors")
        data["files"] = [str(p) for p in watched_files(config)]
        self.sink.emit(CONFIG_RELOADED, data)
        told = getattr(self.state, "on_reloaded", None)
        if told is not None:
            told(outcome)
        return outcome

    def _swap(self, config: Config, router: Decider) -> None:
        local_only = config.routing.local_only
        self.proxy.turns.use(
            router,
            config.settings.sticky,
            config.settings.tool_followup,
            local_only=local_only,
            escalate=config.routing.escalate,
        )
        self.live.swap(config, router)


def _backends_moved(old: Config, new: Config) -> dict[str, Any] | None:
    """The error that refuses a reload whose backends differ from the ones the server runs with."""
    sides = ("local", "cloud")
    if dict(old.settings.backends) == dict(new.settings.backends) and all(
        old.default_backend(s) == new.default_backend(s) for s in sides
    ):
        return None
    return {
        "rule": None,
        "key": "backends",
        "message": "the backends changed (backends:, routing.local_backend / cloud_backend): the server's "
        "backends are set at start; restart glider serve to use them",
        "file": new.source,
        "line": None,
        "severity": "error",
    }


def _section(config: Config, name: str) -> Any:
    s = config.settings
    sections = {
        "server": s.server,
        "context": s.context,
        "delegate": dict(s.delegate),
        "transform": s.transform,
    }
    return {**sections, "cursor": s.cursor}[name]
