"""Run one delegate CLI headless, in a private run directory, under a watchdog.

Contract:
- Each run gets a fresh directory under `$GLIDER_HOME/run` (mode 0700) holding the vendor's context
  file (`context_document`) and a `workspace` symlink to the workspace. The directory is removed when
  the run ends, whatever the outcome (success, failure, timeout, an exception). Nothing is written into
  the user's repository by Glider: the workspace is only read (`git status`, its own AGENTS.md).
- The user's own AGENTS.md (at the workspace root) is copied into the context document, so its
  instructions reach vendors that read AGENTS.md from the run directory instead of the workspace.
- Watchdog: the process group is terminated (then killed) after `timeout` seconds, or as soon as
  `cancel` is set (the client that asked went away: the outcome says so). A vendor whose adapter
  reports the result complete but which does not exit is stopped after `LINGER_GRACE` seconds.
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
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from glider_cli.config.settings import DelegateSettings
from glider_cli.delegate import changes as changes_mod
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


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


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
) -> RunResult:
    run_dir = make_run_dir(run_root, adapter.vendor)
    started = time.monotonic()
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
        try:
            proc = subprocess.Popen(
                [exe, *inv.argv[1:]],
                cwd=inv.cwd,
                env=dict(environ) if environ is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise DelegateError(f"{adapter.vendor}: cannot start {exe}: {exc}") from exc
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
                _stop(proc)
            elif result_seen is not None and now - result_seen > LINGER_GRACE:
                stopped = True
                _stop(proc)
            elif now > deadline:
                timed_out = True
                _stop(proc)
        out.join(1.0)
        if out.is_alive() or err.is_alive():
            # A grandchild still holds the pipes: end the rest of the run's process group.
            _stop(proc)
        out.join(10)
        err.join(10)
        code = None if (timed_out or stopped or cancelled) else proc.returncode
        if cancelled:
            outcome = Outcome(False, f"{adapter.vendor} was stopped: the client that asked for it went away")
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
        shutil.rmtree(run_dir, ignore_errors=True)
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
    )
