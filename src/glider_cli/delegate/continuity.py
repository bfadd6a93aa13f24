"""The per-workspace continuity record: its file format, and safe writes from several processes.

One record per workspace at `$GLIDER_HOME/continuity/<name>-<hash>.md`, where `<name>` is the workspace
folder's name and `<hash>` the first 12 hex digits of the SHA-256 of its absolute path. It holds a ring of
`RING_SIZE` (60) entries (`delegate.entry.Entry`), oldest first. Entry kinds:

    turn        a user turn that `glider serve` saw for the workspace (flagged or not)
    delegate    a delegate run's outcome: the task, a short result, the files it changed, ok or failed,
                recorded under the identity of the front CLI that sent the work (`source_cli`)
    summary     the rolling summary (`delegate.rolling`); its text always starts with `[session summary]`,
                and its metadata carries the `digest` it was rendered from

The file is Markdown a person can read, and Glider parses it back exactly (`serialize(parse(t)) == t`):

    <!-- glider-continuity {"v":1,"workspace":"/abs/path"} -->
    # Continuity record: path
    <blank>
    Workspace: `/abs/path`
    <blank>
    ---
    <!-- glider-entry {"id":..,"kind":..,"ts":..,"source_cli":..,"chars":N, ...} -->
    ### <kind> · <ts> · <source_cli>[ · <delegate> ok|failed]
    <blank>
    <exactly N characters of text>
    <blank>

The `chars` count makes the text opaque to the parser: an entry may contain headings, `---` or comment
markers without confusing it. Any deviation from this shape raises `CorruptRecord`.

Writers serialise on an advisory `fcntl.flock` of `<record>.lock` and replace the record atomically, so
concurrent writers (the proxy, delegate runs, compaction, other processes) never lose an entry. A writer
that finds a corrupt record moves it aside to `<record>.corrupt-<time>` (kept, never deleted), starts a new
record, and reports the move in its result; readers raise `CorruptRecord` and leave the file alone.

Secrets never reach the file: an entry's text goes through `store.eventlog.redact.redact_text` (keys
and tokens such as `sk-…`, `ghp_…`, `AKIA…`, `Bearer …`, private-key blocks become `[REDACTED]`)
before it is written.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from glider_cli.delegate.entry import KINDS, Entry
from glider_cli.delegate.rolling import fit_ring
from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.store.eventlog.redact import redact_text
from glider_cli.values import Frozen, init_fields, replace

RING_SIZE = 60
FORMAT_VERSION = 1

_HEADER_RE = re.compile(r"<!-- glider-continuity (\{.*?\}) -->\n")
_ENTRY_RE = re.compile(r"---\n<!-- glider-entry (\{.*?\}) -->\n")
_NAME_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CorruptRecord(StoreError):
    """A continuity record that cannot be parsed back. `path` is the file; `set_aside` where it was moved."""

    def __init__(self, message: str, *, path: Path, set_aside: Path | None = None) -> None:
        hint = (
            f"the unreadable record was kept at {set_aside}"
            if set_aside
            else "it is left in place; the next write moves it aside (<record>.corrupt-<time>)"
        )
        super().__init__(message, hint=hint)
        self.path = path
        self.set_aside = set_aside


class Record(Frozen):
    workspace: str
    entries: tuple[Entry, ...]

    def __init__(self, workspace: str, entries: tuple[Entry, ...] = ()) -> None:
        init_fields(self, workspace, entries)


class WriteResult(Frozen):
    """What a locked update did: the record now on disk, and where a corrupt one was moved, if any."""

    record: Record
    path: Path
    set_aside: Path | None

    def __init__(self, record: Record, path: Path, set_aside: Path | None = None) -> None:
        init_fields(self, record, path, set_aside)


def record_path(paths: Paths, workspace: str | Path) -> Path:
    """`<continuity>/<name>-<hash>.md` for the workspace's absolute path."""
    ws = str(Path(workspace).absolute())
    name = _NAME_SAFE.sub("_", Path(ws).name) or "root"
    digest = hashlib.sha256(ws.encode("utf-8")).hexdigest()[:12]
    return paths.continuity / f"{name}-{digest}.md"


def _json(d: dict[str, Any]) -> str:
    # Escaping '<' and '>' keeps "-->" out of the comment whatever a path contains.
    return (
        json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
    )


def serialize(record: Record) -> str:
    name = Path(record.workspace).name or record.workspace
    out = [
        f"<!-- glider-continuity {_json({'v': FORMAT_VERSION, 'workspace': record.workspace})} -->\n",
        f"# Continuity record: {name}\n\nWorkspace: `{record.workspace}`\n\n",
    ]
    for e in record.entries:
        out.append(f"---\n<!-- glider-entry {_json(e.meta())} -->\n{e.heading()}\n\n{e.text}\n\n")
    return "".join(out)


def _entry_from_meta(meta: Any, text: str) -> Entry:
    if not isinstance(meta, dict):
        raise ValueError("entry metadata is not an object")
    kind = meta.get("kind")
    if kind not in KINDS:
        raise ValueError(f"unknown entry kind {kind!r}")
    for key in ("id", "ts", "source_cli"):
        if not isinstance(meta.get(key), str):
            raise ValueError(f"entry field {key!r} is missing or not a string")
    files = meta.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError("entry field 'files' is not a list of strings")
    delegate = meta.get("delegate")
    ok = meta.get("ok")
    if delegate is not None and not isinstance(delegate, str):
        raise ValueError("entry field 'delegate' is not a string")
    if ok is not None and not isinstance(ok, bool):
        raise ValueError("entry field 'ok' is not a boolean")
    digest = meta.get("digest")
    if digest is not None and not isinstance(digest, dict):
        raise ValueError("entry field 'digest' is not an object")
    return Entry(
        kind=kind,
        text=text,
        source_cli=meta["source_cli"],
        ts=meta["ts"],
        id=meta["id"],
        delegate=delegate,
        ok=ok,
        files=tuple(files),
        digest=digest,
    )


def parse(text: str) -> Record:
    """Parse a record exactly; raise ValueError naming the offset of the first deviation."""
    m = _HEADER_RE.match(text)
    if not m:
        raise ValueError("offset 0: missing the glider-continuity header")
    head = orjson.loads(m.group(1))
    if (
        not isinstance(head, dict)
        or head.get("v") != FORMAT_VERSION
        or not isinstance(head.get("workspace"), str)
    ):
        raise ValueError("offset 0: unsupported header")
    workspace: str = head["workspace"]
    pos = m.end()
    name = Path(workspace).name or workspace
    preamble = f"# Continuity record: {name}\n\nWorkspace: `{workspace}`\n\n"
    if not text.startswith(preamble, pos):
        raise ValueError(f"offset {pos}: the title block does not match the header")
    pos += len(preamble)
    entries: list[Entry] = []
    while pos < len(text):
        em = _ENTRY_RE.match(text, pos)
        if not em:
            raise ValueError(f"offset {pos}: expected an entry separator")
        meta = orjson.loads(em.group(1))
        chars = meta.get("chars") if isinstance(meta, dict) else None
        if not isinstance(chars, int) or chars < 0:
            raise ValueError(f"offset {pos}: entry without a character count")
        pos = em.end()
        heading_end = text.find("\n", pos)
        if heading_end < 0:
            raise ValueError(f"offset {pos}: truncated entry heading")
        heading = text[pos:heading_end]
        body_start = heading_end + 2
        body = text[body_start : body_start + chars]
        if text[heading_end : heading_end + 2] != "\n\n" or len(body) != chars:
            raise ValueError(f"offset {pos}: truncated entry")
        entry = _entry_from_meta(meta, body)
        if heading != entry.heading():
            raise ValueError(f"offset {pos}: entry heading does not match its metadata")
        end = body_start + chars
        if text[end : end + 2] != "\n\n":
            raise ValueError(f"offset {end}: entry text is not followed by a blank line")
        pos = end + 2
        entries.append(entry)
    return Record(workspace=workspace, entries=tuple(entries))


def load(path: Path) -> Record | None:
    """Read a record; None when there is none; CorruptRecord when it cannot be parsed back."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptRecord(f"continuity record {path} cannot be read: {exc}", path=path) from exc
    try:
        return parse(text)
    except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
        raise CorruptRecord(f"continuity record {path} is corrupt: {exc}", path=path) from exc


def read(paths: Paths, workspace: str | Path) -> Record:
    """The workspace's record (empty when there is none yet). Never modifies anything."""
    ws = str(Path(workspace).absolute())
    return load(record_path(paths, ws)) or Record(workspace=ws)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _set_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}-{secrets.token_hex(3)}")
    os.replace(path, target)
    return target


def trim_ring(entries: Sequence[Entry], size: int = RING_SIZE) -> tuple[Entry, ...]:
    """Keep the newest entries within `size`: the older ones are folded into the leading rolling summary
    (`delegate.rolling.fit_ring`), never dropped, so no delegate outcome leaves the record silently."""
    return fit_ring(entries, size)


def update(
    paths: Paths, workspace: str | Path, change: Callable[[tuple[Entry, ...]], Sequence[Entry]]
) -> WriteResult:
    """Apply `change` to the entries under the record's lock and write the result (ring-trimmed)."""
    ws = str(Path(workspace).absolute())
    path = record_path(paths, ws)
    with _locked(path):
        set_aside: Path | None = None
        try:
            current = load(path)
        except CorruptRecord:
            set_aside = _set_aside(path)
            current = None
        entries = tuple(current.entries) if current else ()
        record = Record(workspace=ws, entries=trim_ring(_redacted(change(entries))))
        _write_atomic(path, serialize(record))
    return WriteResult(record=record, path=path, set_aside=set_aside)


def _redact_all(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redact_all(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact_all(v) for k, v in value.items()}
    return value


def _redacted(entries: Sequence[Entry]) -> list[Entry]:
    out = []
    for e in entries:
        text = redact_text(e.text)
        digest = _redact_all(dict(e.digest)) if e.digest else e.digest
        out.append(e if text == e.text and digest == e.digest else replace(e, text=text, digest=digest))
    return out


def append(paths: Paths, workspace: str | Path, entry: Entry) -> WriteResult:
    """Add one entry at the end of the workspace's record."""
    return update(paths, workspace, lambda entries: (*entries, entry))
