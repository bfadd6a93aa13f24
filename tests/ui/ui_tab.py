"""`Tab`: a browser page under test, with what it logged and a screenshot helper."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_shots: list[Path] = []


def remember() -> list[Path]:
    """Every screenshot taken in this run, in order."""
    return list(_shots)


@dataclass
class Tab:
    """A page with everything it logged: console errors and uncaught exceptions fail the test."""

    page: Any
    shots: Path
    errors: list[str] = field(default_factory=list)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        _shots.append(path)
        return path
