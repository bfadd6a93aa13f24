"""Run one delegate CLI headless, in a private run directory, under a watchdog.

Contract:
- Each run gets a fresh directory under `$GLIDER_HOME/run` (mode 0700) holding the vendor's context
  file (`context_document`) and a `workspace` symlink to the workspace. The directory is removed when
  the run ends, whatever the outcome (success, failure, timeout, an exception). Nothing is written into
  the user's repository by Glider: the workspace is only read (`git status`, its own AGENTS.md).
- The user's own AGENTS.md (at the workspace root) is copied into the context document, so its
  instructions reach vendors that read AGENTS.md from the run directory instead of the workspace.
- The vendor's CLI runs under a guard (`delegate.guard`, in a session of its own): whatever ends the
  run, the guard ends the run's whole process tree (its descendants that left for a process group
  or session of their own included: SIGTERM, then SIGKILL after `guard.GRACE`), and when Glider
  itself is gone (even killed with SIGKILL) it does so by itself and removes the run's directories.
- Watchdog: the run is stopped after `timeout` seconds, or as soon as `cancel` is set (the client
  that asked went away, or a signal to `glider delegate`: `delegate.stop`; the outcome says which,
  and `RunResult.stopped` what was stopped: the CLI's pid, the processes ended, the run directory
  removed). A vendor whose adapter reports the result complete but which does not exit is stopped
  after `LINGER_GRACE` seconds.
- Captured stdout is capped at `output_cap` bytes (64 MiB) and stderr at `STDERR_CAP`, keeping the
  start and the end (the middle is drained and dropped): a JSONL vendor's result is near its end. A
  reply longer than `TEXT_CAP` (1 MiB) loses its middle (`ranking.truncate_middle`) and is still a
  success; `output_truncated` says so.
- A failed run's text ends with the vendor's own reason from its stderr (the last lines, e.g. "Not
  logged in · Please run /login"), so the person who asked sees why.
- `progress(line)`, when given, gets what the vendor reports while it works (`Adapter.progress` of
  each complete stdout line: codex's commands and messages), on the capture thread.
- Changed files are the paths of `changes` (one snapshot of the workspace before and after the run:
  `delegate.changes`), merged with the files the vendor itself reports (codex `file_change`).
- `changes` is what the run changed as a diff (`delegate.changes`: git trees, or a file walk outside a
  repository), from the workspace alone, never from the vendor's report; its scratch folder is under
  `$GLIDER_HOME/run` and removed with the run's.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from glider_cli.config.settings import DelegateSettings
from glider_cli.delegate import changes as changes_mod
from glider_cli.delegate import guard
from glider_cli.delegate import stop as stop_mod
from glider_cli.delegate.agents import Adapter, Outcome
from glider_cli.delegate.changes import NONE as NO_CHANGES
from glider_cli.delegate.changes import Changes
from glider_cli.delegate.ranking import truncate_middle
from glider_cli.errors import DelegateError
from glider_cli.values import Frozen, init_fields, replace

OUTPUT_CAP = 64 * 1024 * 1024
TEXT_CAP = 1024 * 1024
STDERR_CAP = 64 * 1024
REASON_CHARS = 400
LINGER_GRACE = 2.0
USER_AGENTS_MD_CHARS = 16 * 1024


class Stopped(Frozen):
    """A run stopped before it ended (`cancel`): who stopped it (`stop.Stop.by`), the vendor CLI's pid
    (None: stopped before it started), how many processes of its tree were ended, its run directory
    and whether that is gone."""

    by: str
    pid: int | None
    processes: int
    run_dir: str
    run_dir_removed: bool

    def __init__(self, by: str, pid: int | None, processes: int, run_dir: str, run_dir_removed: bool) -> None:
        init_fields(self, by, pid, processes, run_dir, run_dir_removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "pid": self.pid,
            "processes": self.processes,
            "run_dir_removed": self.run_dir_removed,
        }


class RunResult(Frozen):
    vendor: str
    ok: bool
    text: str
    files: tuple[str, ...]
    exit_code: int | None
    timed_out: bool
    stopped_after_result: bool
    duration_s: float
    argv: tuple[str, ...]
    stderr_tail: str
    output_truncated: bool
    detail: Mapping[str, Any]
    changes: Changes
    stopped: Stopped | None

    def __init__(
        self,
        vendor: str,
        ok: bool,
        text: str,
        files: tuple[str, ...],
        exit_code: int | None,
        timed_out: bool,
        stopped_after_result: bool,
        duration_s: float,
        argv: tuple[str, ...],
        stderr_tail: str = "",
        output_truncated: bool = False,
        detail: Mapping[str, Any] | None = None,
        changes: Changes = NO_CHANGES,
        stopped: Stopped | None = None,
    ) -> None:
        init_fields(
            self,
            vendor,
            ok,
            text,
            files,
            exit_code,
            timed_out,
            stopped_after_result,
            duration_s,
            argv,
            stderr_tail,
            output_truncated,
            {} if detail is None else detail,
            changes,
            stopped,
        )


def read_user_agents_md(workspace: Path) -> str:
    try:
        text = (workspace / "AGENTS.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return truncate_middle(text, USER_AGENTS_MD_CHARS)[0]


def context_document(block: str, workspace: Path, user_agents_md: str) -> str:
    """The file a vendor reads by itself: the block, where the workspace is, the user's AGENTS.md."""
    parts = [block.rstrip() + "\n\n"] if block else []
    parts.append(
        "# Workspace\n\n"
        f"The task is about the workspace at `{workspace}` (from the run directory also reachable as "
        "`./workspace`). Work on the files there. The current directory may be Glider's private run "
        "directory; it is removed after the run.\n"
    )
    if user_agents_md.strip():
        parts.append(f"\n# The workspace's own AGENTS.md instructions\n\n{user_agents_md.rstrip()}\n")
    return "".join(parts)


class _Capture(threading.Thread):
    """Reads a pipe to its end, keeping the first and the last `cap // 2` bytes."""

    def __init__(
        self,
        stream: IO[bytes],
        cap: int,
        on_chunk: threading.Event | None = None,
        on_line: Callable[[bytes], None] | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.truncated = False
        self.on_chunk = on_chunk
        self.on_line = on_line
        self._partial = b""

    def run(self) -> None:
        half = max(self.cap // 2, 1)
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
            if not chunk:
                break
            room = half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk_rest = chunk[room:]
            else:
                chunk_rest = chunk
            if chunk_rest:
                self.tail += chunk_rest
                if len(self.tail) > half:
                    self.truncated = True
                    del self.tail[: len(self.tail) - half]
            if self.on_line is not None:
                lines = (self._partial + chunk).split(b"\n")
                self._partial = lines.pop()[-65536:]
                for line in lines:
                    self.on_line(line)
            if self.on_chunk is not None:
                self.on_chunk.set()

    def text(self) -> str:
        joined = bytes(self.head) + (b"\n" if self.truncated else b"") + bytes(self.tail)
        return joined.decode("utf-8", "replace")


def _reason(stderr: str) -> str:
    """The vendor's own words on why it stopped: the last non-empty lines of its stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return truncate_middle(" · ".join(lines[-3:]), REASON_CHARS)[0] if lines else ""


def _stop(proc: subprocess.Popen[bytes], agent: int | None) -> None:
    """Stop the run: SIGTERM to the guard, which ends the run's whole tree (`delegate.guard`); its
    process group and the vendor's killed outright if the guard itself does not end in time."""
    try:
        proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=guard.GRACE + guard.KILL_WAIT + 3.0)
        return
    except subprocess.TimeoutExpired:
        pass
    for group in (proc.pid, agent):
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass


def _reports(life: socket.socket) -> dict[str, int]:
    """What the guard said on the lifeline so far: {"started": pid, "ended": processes}."""
    said: dict[str, int] = {}
    chunks = []
    while True:
        try:
            chunk = life.recv(4096, socket.MSG_DONTWAIT)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    for line in b"".join(chunks).decode("ascii", "replace").splitlines():
        word, _, value = line.partition(" ")
        if value.isdigit():
            said[word] = int(value)
    return said


def make_run_dir(run_root: Path, vendor: str) -> Path:
    run_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    d = Path(tempfile.mkdtemp(prefix=f"{vendor}-", dir=run_root))
    os.chmod(d, 0o700)
    return d


def run(
    adapter: Adapter,
    spec: DelegateSettings | None,
    task: str,
    workspace: Path,
    context: str,
    run_root: Path,
    *,
    timeout: float,
    environ: Mapping[str, str] | None = None,
    output_cap: int = OUTPUT_CAP,
    cancel: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    grant: tuple[str, tuple[str, ...]] | None = None,
) -> RunResult:
    """Run `adapter`'s CLI on `task` with `context` as its context file; see the module contract.
    `grant` (session id, rules) resumes that run with exactly those rules allowed (`Adapter.build`)."""
    if not workspace.is_dir():
        raise DelegateError(f"workspace {workspace} is not a directory")
    scratch = make_run_dir(run_root, f"{adapter.vendor}-changes")
    try:
        snap = changes_mod.take(workspace, scratch)
        result = _run(
            adapter,
            spec,
            task,
            workspace,
            context,
            run_root,
            timeout,
            environ,
            output_cap,
            cancel,
            progress,
            grant,
            scratch,
        )
        changed = snap.changes()
        return replace(result, files=_merged(changed, result), changes=changed)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _merged(changed: Changes, result: RunResult) -> tuple[str, ...]:
    files = [f.path for f in changed.files]
    return tuple(files + [f for f in result.files if f not in files])


def _run(
    adapter: Adapter,
    spec: DelegateSettings | None,
    task: str,
    workspace: Path,
    context: str,
    run_root: Path,
    timeout: float,
    environ: Mapping[str, str] | None,
    output_cap: int,
    cancel: threading.Event | None,
    progress: Callable[[str], None] | None,
    grant: tuple[str, tuple[str, ...]] | None,
    scratch: Path,
) -> RunResult:
    run_dir = make_run_dir(run_root, adapter.vendor)
    started = time.monotonic()
    said: dict[str, int] = {}
    life: socket.socket | None = None
    try:
        (run_dir / adapter.context_file).write_text(context, encoding="utf-8")
        (run_dir / "workspace").symlink_to(workspace, target_is_directory=True)
        inv = adapter.build(spec, task, workspace, run_dir, grant)
        exe = shutil.which(inv.argv[0], path=environ.get("PATH") if environ is not None else None)
        if exe is None:
            raise DelegateError(
                f"{adapter.vendor}: command {inv.argv[0]!r} not found on PATH",
                hint=f"install it, or set delegate.{adapter.vendor}.command in the config",
            )
        if cancel is not None and cancel.is_set():  # stopped before it started: nothing is run
            return _stopped_before(adapter, cancel, inv.argv, run_dir, started)
        life, theirs = socket.socketpair()
        try:
            # The guard (`delegate.guard`) starts the vendor's CLI and ends its whole tree when told to,
            # or when Glider is gone (its end of the lifeline closes, however Glider ended).
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",  # isolated: no PYTHON* variable of the agent's environment, no user site
                    "-S",  # no site-packages: the guard needs the standard library only
                    guard.__file__,
                    str(theirs.fileno()),
                    str(run_dir),
                    str(scratch),
                    "--",
                    exe,
                    *inv.argv[1:],
                ],
                cwd=inv.cwd,
                env=dict(environ) if environ is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            raise DelegateError(f"{adapter.vendor}: cannot start {exe}: {exc}") from exc
        finally:
            theirs.close()
        assert proc.stdout is not None and proc.stderr is not None
        chunk = threading.Event()
        on_line = None
        if progress is not None:

            def on_line(line: bytes) -> None:
                said = adapter.progress(line.decode("utf-8", "replace"))
                if said:
                    progress(said)

        out = _Capture(proc.stdout, output_cap, chunk, on_line)
        err = _Capture(proc.stderr, min(output_cap, STDERR_CAP))
        out.start()
        err.start()
        timed_out = stopped = cancelled = False
        result_seen: float | None = None
        deadline = started + timeout
        while proc.poll() is None:
            chunk.wait(0.05)
            if chunk.is_set():
                chunk.clear()
                if result_seen is None and adapter.result_ready(out.text()):
                    result_seen = time.monotonic()
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                cancelled = True
            elif result_seen is not None and now - result_seen > LINGER_GRACE:
                stopped = True
            elif now > deadline:
                timed_out = True
            if cancelled or stopped or timed_out:
                said.update(_reports(life))
                _stop(proc, said.get("started"))
        out.join(1.0)
        if out.is_alive() or err.is_alive():
            # Something still holds the pipes although the guard ended the tree: kill what is left.
            said.update(_reports(life))
            _stop(proc, said.get("started"))
        out.join(10)
        err.join(10)
        said.update(_reports(life))
        code = None if (timed_out or stopped or cancelled) else proc.returncode
        if cancelled:
            assert cancel is not None
            outcome = Outcome(
                False, f"{adapter.vendor} was stopped: {stop_mod.said(stop_mod.reason(cancel))}"
            )
        elif timed_out:
            outcome = Outcome(False, f"{adapter.vendor} timed out after {timeout:g} s")
        else:
            outcome = adapter.parse(out.text(), 0 if stopped else code)
            more = adapter.stderr_refusals(err.text())
            if more:  # what the vendor refused and said only on its stderr (codex exec)
                known = tuple(outcome.detail.get("refused", ()))
                outcome = replace(outcome, detail={**outcome.detail, "refused": known + more})
        text, cut = outcome.text, False
        if outcome.ok:
            text, cut = truncate_middle(text, TEXT_CAP)
        elif not cancelled and (reason := _reason(err.text())) and reason not in text:
            text = f"{text}: {reason}"
    finally:
        if life is not None:
            life.close()
        shutil.rmtree(run_dir, ignore_errors=True)
    halted = None
    if cancelled:
        assert cancel is not None
        halted = Stopped(
            stop_mod.reason(cancel),
            said.get("started"),
            said.get("ended", 0),
            str(run_dir),
            not run_dir.exists(),
        )
    return RunResult(
        vendor=adapter.vendor,
        ok=outcome.ok,
        text=text,
        files=tuple(outcome.files),
        exit_code=code,
        timed_out=timed_out,
        stopped_after_result=stopped,
        duration_s=round(time.monotonic() - started, 3),
        argv=inv.argv,
        stderr_tail=err.text()[-2000:],
        output_truncated=out.truncated or err.truncated or cut,
        detail=outcome.detail,
        stopped=halted,
    )


def _stopped_before(
    adapter: Adapter, cancel: threading.Event, argv: tuple[str, ...], run_dir: Path, started: float
) -> RunResult:
    by = stop_mod.reason(cancel)
    shutil.rmtree(run_dir, ignore_errors=True)
    return RunResult(
        vendor=adapter.vendor,
        ok=False,
        text=f"{adapter.vendor} was stopped before it started: {stop_mod.said(by)}",
        files=(),
        exit_code=None,
        timed_out=False,
        stopped_after_result=False,
        duration_s=round(time.monotonic() - started, 3),
        argv=argv,
        stopped=Stopped(by, None, 0, str(run_dir), not run_dir.exists()),
    )
