"""The last good probe of each local backend, kept on disk for the commands that do not probe.

    remember(path, backends, found)              # glider serve after its probes, glider doctor
    load(path) -> {backend name: Known}          # glider lint: "from the probe, when known"

The file is `$GLIDER_HOME/run/probes.json`, one JSON object:

    {"v": 1, "backends": {"<name>": {"base_url": "...", "models": [...], "context_window": 8192,
                                     "tools": true, "probed_at": 1764582000.0, "any_model": false}}}

Contract:
- Only a probe in which the server listed its models is kept (`Capability.models` is not None,
  also when the backend's own model was missing from the list); a failed probe leaves the last
  good record of that backend as it was, and the records of other backends are kept (read,
  updated, written back).
- It holds what a server said about itself (model ids, a window, tool support) and the base URL it
  was asked at; never a header, a key or anything a request carried. Written atomically (a
  temporary file in the same folder, then `os.replace`) with mode 0600; the folder is made 0700.
- `remember` (what probes call: `save` of each backend's base URL and what its probe found) never
  fails either: the file is a cache for other commands, and probing never depends on it.
- `load` never fails: a missing, unreadable or malformed file (or record) is no knowledge, `{}`.
- A record describes a config's backend only while the base URL is the same (`Known.applies`):
  a backend pointed elsewhere is unknown until probed again.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from glider_cli.backends.probe import Capability
from glider_cli.backends.registry import Backend
from glider_cli.values import Frozen, init_fields

__all__ = ["FILENAME", "Known", "load", "remember", "save"]

FILENAME = "probes.json"
_VERSION = 1


class Known(Frozen):
    """One backend's last good probe, as read back."""

    backend: str
    base_url: str
    models: tuple[str, ...]
    context_window: int | None
    tools: bool | None
    probed_at: float | None
    any_model: bool

    def __init__(
        self,
        backend: str,
        base_url: str,
        models: tuple[str, ...],
        context_window: int | None = None,
        tools: bool | None = None,
        probed_at: float | None = None,
        any_model: bool = False,
    ) -> None:
        init_fields(self, backend, base_url, models, context_window, tools, probed_at, any_model)

    def applies(self, base_url: str | None) -> bool:
        return _norm(base_url) == _norm(self.base_url)

    def capability(self) -> Capability:
        return Capability(
            self.backend,
            True,
            None,
            self.models,
            self.context_window,
            self.tools,
            "cached probe",
            self.probed_at,
            self.any_model or None,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "models": list(self.models),
            "context_window": self.context_window,
            "tools": self.tools,
            "probed_at": self.probed_at,
            "any_model": self.any_model,
        }


def _norm(url: str | None) -> str:
    return (url or "").rstrip("/")


def _known(name: str, raw: Any) -> Known | None:
    if not isinstance(raw, dict):
        return None
    base, models = raw.get("base_url"), raw.get("models")
    if not isinstance(base, str) or not isinstance(models, list):
        return None
    window = raw.get("context_window")
    tools = raw.get("tools")
    at = raw.get("probed_at")
    return Known(
        name,
        base,
        tuple(m for m in models if isinstance(m, str)),
        window if type(window) is int else None,
        tools if isinstance(tools, bool) else None,
        float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None,
        raw.get("any_model") is True,
    )


def load(path: Path) -> dict[str, Known]:
    """See the module contract."""
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(raw, dict) or raw.get("v") != _VERSION or not isinstance(raw.get("backends"), dict):
        return {}
    out: dict[str, Known] = {}
    for name, rec in raw["backends"].items():
        known = _known(str(name), rec)
        if known is not None:
            out[known.backend] = known
    return out


def save(path: Path, probed: Iterable[tuple[str | None, Capability]]) -> int:
    """Merge the good probes into the file; returns how many records were updated."""
    fresh: Mapping[str, Known] = {
        cap.backend: Known(
            cap.backend,
            base or "",
            cap.models,
            cap.context_window,
            cap.tools,
            cap.probed_at,
            bool(cap.any_model),
        )
        for base, cap in probed
        if cap.models is not None and base
    }
    if not fresh:
        return 0
    records = {name: k.to_json() for name, k in {**load(path), **fresh}.items()}
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = orjson.dumps({"v": _VERSION, "backends": records}, option=orjson.OPT_INDENT_2)
    fd, tmp = tempfile.mkstemp(prefix=".probes-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return len(fresh)


def remember(path: Path, backends: Iterable[Backend], found: Mapping[str, Capability]) -> None:
    """See the module contract."""
    with contextlib.suppress(OSError):
        save(path, [(b.base_url, found[b.name]) for b in backends if b.name in found])
