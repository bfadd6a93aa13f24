"""Which transport each Cursor client used last: `$GLIDER_HOME/cursor/transports.json`, written by the
Cursor proxy (`cursor.transports`), read by `glider doctor`.

One entry per client (`x-cursor-client-type`: `ide`, `cli`, or `unknown` when a client names none):
`{"transport": "HTTP/2 Run" | "HTTP/1.1 RunSSE" | "HTTP/1.1 Run", "host": "...", "at": <unix time>}`.
Nothing else is kept (no header value, no token, no text). `record` replaces the file at once (a
reader never sees half of it); `load` returns {} when there is no file or it cannot be read.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

FILENAME = "transports.json"
TRANSPORTS = ("HTTP/2 Run", "HTTP/1.1 RunSSE", "HTTP/1.1 Run")


def record(directory: Path, entries: dict[str, dict[str, Any]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".transports.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(entries, f, indent=1, sort_keys=True)
        os.replace(tmp, directory / FILENAME)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(directory: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((directory / FILENAME).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for client, entry in data.items():
        if isinstance(entry, dict) and entry.get("transport") in TRANSPORTS:
            out[str(client)] = {k: entry[k] for k in ("transport", "host", "at") if k in entry}
    return out
