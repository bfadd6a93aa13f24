"""Where Glider keeps its state.

Everything lives under GLIDER_HOME (default `~/.glider`). The environ is passed in so tests and
commands never reach for `os.environ` deep inside the code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from glider_cli.values import Frozen, init_fields


class Paths(Frozen):
    home: Path

    def __init__(self, home: Path) -> None:
        init_fields(self, home)

    @property
    def config(self) -> Path:
        return self.home / "config.yaml"

    @property
    def context(self) -> Path:
        return self.home / "context"

    @property
    def continuity(self) -> Path:
        return self.home / "continuity"

    @property
    def run(self) -> Path:
        return self.home / "run"

    def as_dict(self) -> dict[str, str]:
        return {
            "home": str(self.home),
            "config": str(self.config),
            "context": str(self.context),
            "continuity": str(self.continuity),
            "run": str(self.run),
        }


def resolve(environ: Mapping[str, str] | None = None, home: str | Path | None = None) -> Paths:
    """GLIDER_HOME from an explicit value, the environment, or `~/.glider`."""
    env = os.environ if environ is None else environ
    raw = home if home is not None else env.get("GLIDER_HOME")
    base = Path(raw).expanduser() if raw else Path.home() / ".glider"
    return Paths(home=base.absolute())
