"""An agent CLI from the npm registry, for the tests that drive the real one.

`find_or_install(binary, package, label)` looks `binary` up on PATH, then in <repo>/.ci/node (where
.ci/run installs it); when it is in neither, one `npm install --prefix <repo>/.ci/node PACKAGE` is
tried. It returns the path, or None and why it could not be had (the tests skip with that reason).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE_PREFIX = REPO / ".ci" / "node"


def find(binary: str) -> str | None:
    found = shutil.which(binary)
    if found:
        return found
    local = NODE_PREFIX / "node_modules" / ".bin" / binary
    return str(local) if os.access(local, os.X_OK) else None


def find_or_install(binary: str, package: str, label: str) -> tuple[str | None, str]:
    found = find(binary)
    if found:
        return found, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, f"{label} is not installed and npm is not available to install {package}"
    proc = subprocess.run(
        [npm, "install", "--prefix", str(NODE_PREFIX), "--no-audit", "--no-fund", package],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    found = find(binary)
    if found is None:
        return None, f"npm could not install {package}: {proc.stderr.strip()[-500:]}"
    return found, ""
