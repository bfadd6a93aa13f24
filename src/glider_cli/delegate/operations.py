"""What `glider serve` and `glider delegate` call: record turns, run delegates, keep records compact.

For the proxy (one call per user turn, then one per flagged turn):

    from glider_cli.delegate import operations, workspace as ws
    compactor = operations.make_compactor(paths, settings, environ=os.environ, events=sink)  # lifespan
    workspace = ws.from_request(chat_request)                 # None: the client named no workspace
    source_cli = ws.client_name(chat_request.headers)          # "claude-code", "codex", ...
    operations.record_turn(paths, settings, workspace, chat_request.last_user_text, source_cli,
                        events=sink, compactor=compactor)      # every user turn, flagged or not
    found = operations.parse_flag(chat_request.last_user_text)    # before any routing rule
    if found:
        flag, task = found
        result = await anyio.to_thread.run_sync(lambda: operations.run_flagged(
            paths, settings, flag, task, workspace, source_cli, events=sink, environ=os.environ,
            compactor=compactor))
        reply = result.reply_text()    # answer the client with this as an ordinary assistant message
    compactor.close()                                          # at shutdown

`record_turn` does file I/O under a lock (milliseconds) and never compacts inline: it only schedules
compaction on the background `Compactor`. `run_flagged` blocks for the whole delegate run (minutes):
call it from a worker thread. It never raises for a delegate failure: a failed or timed-out run (or a
command not found) comes back as `DelegateResult(ok=False)` and is recorded as a failed outcome.
The outcome is recorded under `source_cli`, the front CLI that sent the work.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from glider_cli.config.settings import Settings
from glider_cli.delegate import compaction, continuity, permissions, ranking, runner
from glider_cli.delegate.agents import FLAG_VENDOR, adapter_for
from glider_cli.delegate.changes import NONE as NO_CHANGES
from glider_cli.delegate.changes import Changes
from glider_cli.delegate.entry import Entry
from glider_cli.delegate.permissions import Refusal
from glider_cli.delegate.workspace import normalise
from glider_cli.domain import EventSink
from glider_cli.errors import DelegateError
from glider_cli.paths import Paths
from glider_cli.store.eventlog.events import CONTINUITY_COMPACTION_FAILED, CONTINUITY_CORRUPT, DELEGATE_RUN
from glider_cli.turns.turn_keys import user_words
from glider_cli.values import Frozen, init_fields

RESULT_CHARS_IN_RECORD = 1500
# What a delegate changed (`delegate.changes`): the hunks kept, middle-out, in each place it goes.
DIFF_CHARS_IN_REPLY = 6000
DIFF_CHARS_IN_RECORD = 1500
DIFF_CHARS_IN_EVENT = 4000
_FLAG_RE = re.compile(r"(?:(?<=\s)|^)(/claude|/cursor-agent|/agy)(?=\s|$)")


class DelegateResult(Frozen):
    """A delegate run as the caller sees it; `entry` is the outcome recorded in the continuity record."""

    vendor: str
    ok: bool
    text: str
    files: tuple[str, ...]
    workspace: str
    source_cli: str
    timed_out: bool
    exit_code: int | None
    duration_s: float
    block_entries: int
    block_tokens: int
    entry: Entry | None
    changes: Changes
    refused: tuple[Refusal, ...]
    token: str | None
    stopped: runner.Stopped | None

    def __init__(
        self,
        vendor: str,
        ok: bool,
        text: str,
        files: tuple[str, ...],
        workspace: str,
        source_cli: str,
        timed_out: bool = False,
        exit_code: int | None = None,
        duration_s: float = 0.0,
        block_entries: int = 0,
        block_tokens: int = 0,
        entry: Entry | None = None,
        changes: Changes = NO_CHANGES,
        refused: tuple[Refusal, ...] = (),
        token: str | None = None,
        stopped: runner.Stopped | None = None,
    ) -> None:
        init_fields(
            self,
            vendor,
            ok,
            text,
            files,
            workspace,
            source_cli,
            timed_out,
            exit_code,
            duration_s,
            block_entries,
            block_tokens,
            entry,
            changes,
            refused,
            token,
            stopped,
        )

    def reply_text(self) -> str:
        """The assistant reply a client gets for a flagged turn, ending with what the run changed in
        the workspace (`delegate.changes`, its hunks capped at DIFF_CHARS_IN_REPLY)."""
        text = self.text if self.ok else f"[{self.vendor} failed] {self.text}"
        if self.refused:  # what its CLI refused, and the one-shot token to allow exactly that
            text = f"{text.rstrip()}\n\n{permissions.describe(self.vendor, self.refused, self.token)}"
        changed = self.changes.render(DIFF_CHARS_IN_REPLY)
        return f"{text.rstrip()}\n\n{changed}" if changed else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "ok": self.ok,
            "text": self.text,
            "files": list(self.files),
            "workspace": self.workspace,
            "source_cli": self.source_cli,
            "timed_out": self.timed_out,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "block_entries": self.block_entries,
            "block_tokens": self.block_tokens,
            "entry_id": self.entry.id if self.entry else None,
            "changes": self.changes.to_dict(DIFF_CHARS_IN_EVENT),
            "refused": [r.to_dict() for r in self.refused],
            "grant_offered": self.token is not None,  # never the token itself
            # Stopped before it ended: by whom (client_left, SIGINT, SIGTERM, SIGHUP) and what was ended.
            "stopped": self.stopped.to_dict() if self.stopped is not None else None,
        }


def parse_flag(text: str) -> tuple[str, str] | None:
    """(flag, task) when the person's words carry `/claude`, `/cursor-agent` or `/agy` as a word.

    The task is those words without the flag (client-added reminder blocks are never part of it).
    """
    text = user_words(text)
    m = _FLAG_RE.search(text)
    if not m:
        return None
    task = " ".join((text[: m.start()] + " " + text[m.end() :]).split())
    return m.group(1), task


def _report_set_aside(events: EventSink | None, workspace: str, res: continuity.WriteResult) -> None:
    if events is not None and res.set_aside is not None:
        events.emit(
            CONTINUITY_CORRUPT,
            {"workspace": workspace, "record": str(res.path), "set_aside": str(res.set_aside)},
        )


def make_compactor(
    paths: Paths, settings: Settings, *, environ: Mapping[str, str], events: EventSink | None = None
) -> compaction.Compactor:
    """The background compaction worker for this settings/environ (one per process is enough)."""
    from glider_cli.delegate.summarizers import sources_for

    def one_pass(workspace: str) -> object:
        return compaction.compact(
            paths,
            workspace,
            settings.context.summary,
            lambda origin_cli: sources_for(settings, paths, environ, origin_cli),
            events=events,
        )

    def on_error(workspace: str, exc: BaseException) -> None:
        if events is not None:
            events.emit(CONTINUITY_COMPACTION_FAILED, {"workspace": workspace, "error": str(exc)[:500]})

    return compaction.Compactor(one_pass, on_error)


def _after_write(
    paths: Paths,
    settings: Settings,
    res: continuity.WriteResult,
    compactor: compaction.Compactor | None,
    environ: Mapping[str, str] | None,
    events: EventSink | None,
) -> None:
    if not compaction.needs_compaction(res.record.entries):
        return
    if compactor is not None:
        compactor.schedule(res.record.workspace)
        return
    # No long-lived worker: a one-off background thread, still off the caller's clock.
    make_compactor(paths, settings, environ=environ or {}, events=events).schedule(res.record.workspace)


def record_turn(
    paths: Paths,
    settings: Settings,
    workspace: str | Path,
    text: str,
    source_cli: str,
    *,
    events: EventSink | None = None,
    compactor: compaction.Compactor | None = None,
    environ: Mapping[str, str] | None = None,
) -> Entry | None:
    """Record one user turn for the workspace (client-added reminders stripped); None when it is empty."""
    text = user_words(text)
    if not text:
        return None
    ws = str(normalise(workspace))
    entry = Entry(kind="turn", text=text, source_cli=source_cli)
    res = continuity.append(paths, ws, entry)
    _report_set_aside(events, ws, res)
    _after_write(paths, settings, res, compactor, environ, events)
    return entry


def block_for(
    settings: Settings, entries: tuple[Entry, ...], task: str, *, max_bytes: int | None = None
) -> ranking.Block:
    """The block a delegate for `task` gets; the turn that carried this very task is left out."""
    for i in range(len(entries) - 1, -1, -1):
        e = entries[i]
        if e.kind == "turn":
            found = parse_flag(e.text)
            if (found[1] if found else " ".join(e.text.split())) == " ".join(task.split()):
                entries = entries[:i] + entries[i + 1 :]
            break
    return ranking.build_block(entries, task, settings.context.background, max_bytes=max_bytes)


def prepare_context(
    settings: Settings, vendor: str, task: str, workspace: str | Path, entries: tuple[Entry, ...]
) -> tuple[str, ranking.Block]:
    """The vendor's context document and the block inside it, within the vendor's read limit."""
    adapter = adapter_for(vendor)
    ws = Path(workspace)
    user_md = runner.read_user_agents_md(ws)
    max_bytes = None
    if adapter.context_limit is not None:
        frame = runner.context_document("", ws, user_md)
        max_bytes = max(adapter.context_limit - len(frame.encode("utf-8")) - 2, 0)
    block = block_for(settings, entries, task, max_bytes=max_bytes)
    return runner.context_document(block.text, ws, user_md), block


def delegate(
    paths: Paths,
    settings: Settings,
    vendor: str,
    task: str,
    workspace: str | Path,
    source_cli: str,
    *,
    timeout: float | None = None,
    events: EventSink | None = None,
    environ: Mapping[str, str] | None = None,
    compactor: compaction.Compactor | None = None,
    turn_id: str | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    grants: permissions.Grants | None = None,
    resume: permissions.Pending | None = None,
) -> DelegateResult:
    """Run `vendor` on `task` in `workspace` with the continuity block, and record the outcome
    (`DelegateRun`, under `turn_id` when the run answers a proxied turn). `cancel` stops the run
    (the client left, or a signal to `glider delegate`: `delegate.stop`; `DelegateResult.stopped`
    says what was stopped); `progress` gets what the vendor reports while it works (`runner.run`).
    What its CLI refused is kept in `grants` for a one-shot token (`delegate.permissions`);
    `resume` continues such a run with exactly what it was refused allowed (`delegate.allow_deny`)."""
    adapter = adapter_for(vendor)
    if not task.strip():
        raise DelegateError("the delegate task is empty")
    ws = normalise(workspace)
    if not ws.is_dir():
        raise DelegateError(f"workspace {ws} is not a directory")
    spec = settings.delegate.get(vendor)
    limit = timeout if timeout is not None else (spec.timeout if spec else 600.0)
    record = continuity.read(paths, ws)
    context, block = prepare_context(settings, vendor, task, ws, record.entries)
    try:
        run = runner.run(
            adapter,
            spec,
            task,
            ws,
            context,
            paths.run,
            timeout=limit,
            environ=environ,
            cancel=cancel,
            progress=progress,
            grant=(resume.session_id, resume.grants) if resume is not None else None,
        )
        ok, text, files, changes = run.ok, run.text, run.files, run.changes
        refused: tuple[Refusal, ...] = run.detail.get("refused", ())
        session = run.detail.get("session_id")
        timed_out, code, duration = run.timed_out, run.exit_code, run.duration_s
        stopped = run.stopped
    except DelegateError as exc:
        ok, text, files = False, exc.message + (f" ({exc.hint})" if exc.hint else ""), ()
        timed_out, code, duration, changes = False, None, 0.0, NO_CHANGES
        refused, session, stopped = (), None, None
    token = None
    if refused and grants is not None:
        token = grants.offer(
            vendor, session if isinstance(session, str) else None, refused, str(ws), task, source_cli
        )
    short = ranking.truncate_middle(text, RESULT_CHARS_IN_RECORD)[0]
    changed = changes.render(DIFF_CHARS_IN_RECORD)
    allowed = f"\nAllowed by the person for this run: {' '.join(resume.grants)}" if resume is not None else ""
    said = "".join(f"\nRefused by its permissions: {r.line()}" for r in refused)
    entry = Entry(
        kind="delegate",
        text=f"Task: {task.strip()}{allowed}\nResult: {short}{said}" + (f"\n{changed}" if changed else ""),
        source_cli=source_cli,
        delegate=vendor,
        ok=ok,
        files=files,
    )
    res = continuity.append(paths, ws, entry)
    _report_set_aside(events, str(ws), res)
    result = DelegateResult(
        vendor=vendor,
        ok=ok,
        text=text,
        files=files,
        workspace=str(ws),
        source_cli=source_cli,
        timed_out=timed_out,
        exit_code=code,
        duration_s=duration,
        block_entries=len(block.items),
        block_tokens=block.tokens,
        entry=entry,
        changes=changes,
        refused=refused,
        token=token,
        stopped=stopped,
    )
    if events is not None:
        data = result.to_dict()
        data.pop("text")
        # `ms` and `summary` are the keys the store's views read (store/eventlog/events.py).
        data["ms"] = int(duration * 1000)
        data["summary"] = ranking.truncate_middle(text, 300)[0]
        # The vendor's CLI reports no usage to Glider: the task, the continuity block and the
        # answer, 4 bytes a token, marked as an estimate (`store.usage` counts it as delegate usage).
        data["input_tokens"] = (len(task.encode()) + 3) // 4 + block.tokens
        data["output_tokens"] = (len(text.encode()) + 3) // 4
        data["estimated"] = ["input_tokens", "output_tokens"]
        events.emit(DELEGATE_RUN, data, turn_id=turn_id)
    _after_write(paths, settings, res, compactor, environ, events)
    return result


def run_flagged(
    paths: Paths,
    settings: Settings,
    flag: str,
    task: str,
    workspace: str | Path,
    source_cli: str,
    *,
    events: EventSink | None = None,
    environ: Mapping[str, str] | None = None,
    compactor: compaction.Compactor | None = None,
    timeout: float | None = None,
    turn_id: str | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    grants: permissions.Grants | None = None,
) -> DelegateResult:
    """Run the delegate an in-message flag (`/claude`, `/cursor-agent`, `/agy`) names."""
    vendor = FLAG_VENDOR.get(flag)
    if vendor is None:
        raise DelegateError(
            f"unknown delegate flag {flag!r}", hint=f"expected one of: {', '.join(FLAG_VENDOR)}"
        )
    return delegate(
        paths,
        settings,
        vendor,
        task,
        workspace,
        source_cli,
        timeout=timeout,
        events=events,
        environ=environ,
        compactor=compactor,
        turn_id=turn_id,
        cancel=cancel,
        progress=progress,
        grants=grants,
    )
