"""An agent CLI from the npm registry, for the tests that drive the real one.

`find_or_install(binary, package, label)` looks `binary` up on PATH, then in <repo>/.ci/node (where
.ci/run installs it); when it is in neither, one `npm install --prefix <repo>/.ci/node PACKAGE` is
tried. It returns the path, or None and why it could not be had (the tests skip with that reason).
An install takes minutes and hundreds of MB, so a line says what is being installed and how big it is
before npm starts, and one how it ended: on pytest's terminal past its output capture
(`tests/conftest.py` hands `tell_to` the writer), else on stderr.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE_PREFIX = REPO / ".ci" / "node"
# What each package and its dependencies take in node_modules (measured: 887 MB for the three).
SIZES = {"@anthropic-ai/claude-code": "~240 MB", "@openai/codex": "~420 MB", "@google/gemini-cli": "~230 MB"}

_told: list[Callable[[str], None]] = []


def tell_to(write: Callable[[str], None]) -> None:
    """Where the progress lines go (one line per call); the last one given wins."""
    _told[:] = [write]


def _tell(text: str) -> None:
    if _told:
        _told[0](text)
    else:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def find(binary: str, prefix: Path = NODE_PREFIX) -> str | None:
    found = shutil.which(binary)
    if found:
        return found
    local = prefix / "node_modules" / ".bin" / binary
    return str(local) if os.access(local, os.X_OK) else None


def find_or_install(
    binary: str, package: str, label: str, prefix: Path = NODE_PREFIX
) -> tuple[str | None, str]:
    found = find(binary, prefix)
    if found:
        return found, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, f"{label} is not installed and npm is not available to install {package}"
    size = SIZES.get(package, "size unknown")
    _tell(
        f"installing {label} ({package}, {size}) with npm into {prefix} for the tests that drive it; "
        "once, it can take a few minutes"
    )
    started = time.monotonic()
    proc = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", package],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    took = time.monotonic() - started
    found = find(binary, prefix)
    if found is None:
        _tell(f"npm could not install {package} ({took:.0f} s); the tests that drive {label} skip")
        return None, f"npm could not install {package}: {proc.stderr.strip()[-500:]}"
    _tell(f"installed {label} in {took:.0f} s")
    return found, ""
