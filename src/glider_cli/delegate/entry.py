"""One entry of a continuity record (`delegate.continuity`): a user turn, a delegate run's outcome, or
the rolling summary (`delegate.rolling`), whose text always starts with `SUMMARY_MARK`. An entry knows
its own heading and metadata as the record's file shows them; the file around it is the record's."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any, Literal

from glider_cli.values import Frozen

EntryKind = Literal["turn", "delegate", "summary"]
KINDS: tuple[str, ...] = ("turn", "delegate", "summary")
SUMMARY_MARK = "[session summary]"


class Entry(Frozen):
    """One entry of the record. `ok` and `delegate` are set for kind `delegate` only, `digest` for a
    rolling summary (`delegate.rolling`)."""

    kind: EntryKind
    text: str
    source_cli: str
    ts: str
    id: str
    delegate: str | None
    ok: bool | None
    files: tuple[str, ...]
    digest: Mapping[str, Any] | None

    def __init__(
        self,
        kind: EntryKind,
        text: str,
        source_cli: str,
        ts: str | None = None,
        id: str | None = None,
        delegate: str | None = None,
        ok: bool | None = None,
        files: tuple[str, ...] = (),
        digest: Mapping[str, Any] | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.kind = kind
        s.text = text
        s.source_cli = source_cli
        s.ts = now_iso() if ts is None else ts
        s.id = new_id() if id is None else id
        s.delegate = delegate
        s.ok = ok
        s.files = files
        s.digest = digest

    @property
    def is_summary(self) -> bool:
        """A summary is recognised by its mark, so a later pass never summarises it again."""
        return self.text.startswith(SUMMARY_MARK)

    def heading(self) -> str:
        parts = [self.kind, self.ts, self.source_cli]
        if self.kind == "delegate":
            parts.append(f"{self.delegate or '?'} {'ok' if self.ok else 'failed'}")
        return "### " + " · ".join(parts)

    def meta(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "kind": self.kind, "ts": self.ts, "source_cli": self.source_cli}
        if self.delegate is not None:
            d["delegate"] = self.delegate
        if self.ok is not None:
            d["ok"] = self.ok
        if self.files:
            d["files"] = list(self.files)
        if self.digest:
            d["digest"] = self.digest
        d["chars"] = len(self.text)
        return d

    def to_dict(self) -> dict[str, Any]:
        d = self.meta()
        d["text"] = self.text
        return d


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_id() -> str:
    return secrets.token_hex(6)
