"""The person's answer to what a delegate was refused (`delegate.permissions`): allow or deny, once.

    pending = grants.take(token)                      # None: unknown, used or expired
    result = allow(paths, settings, pending, ...)      # the same run resumed, exactly that allowed
    entry = deny(paths, pending, source_cli)           # nothing runs; the record says so

`allow` resumes the vendor's own session (`operations.delegate(resume=...)`: claude's `--resume` with
`--allowedTools` for exactly the refused actions) and records its outcome with the rules allowed.
`deny` records the refusal and the decision in the workspace's continuity record; no run.
"""

from __future__ import annotations

from typing import Any

from glider_cli.config.settings import Settings
from glider_cli.delegate import continuity, operations, permissions
from glider_cli.delegate.entry import Entry
from glider_cli.paths import Paths

__all__ = ["allow", "deny"]


def allow(
    paths: Paths, settings: Settings, pending: permissions.Pending, **kw: Any
) -> operations.DelegateResult:
    """Resume `pending`'s run with exactly what it was refused allowed (keywords: `operations.delegate`'s)."""
    task = (
        f"The person allowed what was refused ({', '.join(pending.grants)}). "
        f"Continue the task where you stopped: {pending.task}"
    )
    return operations.delegate(
        paths, settings, pending.vendor, task, pending.workspace, pending.source_cli, resume=pending, **kw
    )


def deny(paths: Paths, pending: permissions.Pending, source_cli: str) -> Entry:
    """Record that the person denied what `pending`'s run was refused."""
    refused = "; ".join(r.line() for r in pending.refused)
    entry = Entry(
        kind="delegate",
        text=f"Task: {pending.task}\nDenied by the person: {refused}",
        source_cli=source_cli,
        delegate=pending.vendor,
        ok=False,
    )
    continuity.append(paths, pending.workspace, entry)
    return entry
