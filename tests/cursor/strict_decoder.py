"""Cursor's frames decoded as Cursor's client decodes them: protobuf-es (npm `@bufbuild/protobuf`,
installed by .ci/run into tests/node) under node, against the project's own cursor.proto. The schema
is handed over at run time as a FileDescriptorSet made from the compiled Python module's descriptor
(no protoc, no generated JavaScript). Python's protobuf reads a field written with the wrong wire type
without a word; protobuf-es fails the frame ("premature EOF") or misreads it, and the node side also
checks every declared field's wire type, so such a frame fails here.

`StrictDecoder.shared()` starts one node process for the test session (None when node or the package
cannot be had: `unavailable()` says why; a missing package is installed once with `npm ci --prefix
tests/node`, from the committed lock file, as tests/npm_cli.py does for the agent CLIs).
`decode(type_name, payloads)` -> one `Decoded` per payload (`ok`, the protobuf-es JSON form, or the
error). The Cursor-shaped client (`cursor_client`) decodes every RunSSE frame it receives with it,
raising StrictDecodeError on one that fails.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

from glider_cli.protocol.cursor import cursor_pb2 as pb

NODE_DIR = Path(__file__).resolve().parent.parent / "node"
SCRIPT = NODE_DIR / "cursor_strict.mjs"
PACKAGE = NODE_DIR / "node_modules" / "@bufbuild" / "protobuf" / "package.json"
SERVER = "glider.cursor.AgentServerMessage"


class StrictDecodeError(AssertionError):
    """A frame protobuf-es (or the wire-type check) rejects."""


@dataclass
class Decoded:
    ok: bool
    json: Any
    error: str


def descriptor_set() -> bytes:
    """The project's cursor.proto as a serialized FileDescriptorSet (it imports no other file), with
    each field's `json_name` filled in as protoc fills it for its plugins (the module's embedded copy
    leaves it out; protobuf-es's JSON form reads it)."""
    fds = descriptor_pb2.FileDescriptorSet()
    file = fds.file.add()
    file.ParseFromString(pb.DESCRIPTOR.serialized_pb)
    todo = list(file.message_type)
    while todo:
        message = todo.pop()
        todo.extend(message.nested_type)
        for field in message.field:
            field.json_name = _json_name(field.name)
    return fds.SerializeToString()


def _json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


_why: list[str | None] = []  # the answer of unavailable(), once known


def unavailable() -> str | None:
    """Why the strict decoder cannot run here, or None (the package installed first when it is not)."""
    if not _why:
        _why.append(_find_or_install())
    return _why[0]


def _find_or_install() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if PACKAGE.is_file():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return f"@bufbuild/protobuf is not installed in {NODE_DIR} and npm is not available"
    proc = subprocess.run(
        [npm, "ci", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    if not PACKAGE.is_file():
        return f"npm could not install @bufbuild/protobuf in {NODE_DIR}: {proc.stderr.strip()[-500:]}"
    return None


class StrictDecoder:
    _shared: StrictDecoder | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="cursor-fds-", suffix=".bin")
        with os.fdopen(fd, "wb") as f:
            f.write(descriptor_set())
        self._fds = path
        self._proc = subprocess.Popen(
            ["node", str(SCRIPT), path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=NODE_DIR,
        )
        self._io = threading.Lock()

    @classmethod
    def shared(cls) -> StrictDecoder | None:
        if unavailable() is not None:
            return None
        with cls._lock:
            if cls._shared is None or cls._shared._proc.poll() is not None:
                cls._shared = cls()
                atexit.register(cls._shared.close)
            return cls._shared

    def decode(self, type_name: str, payloads: list[bytes]) -> list[Decoded]:
        line = json.dumps({"type": type_name, "payloads": [base64.b64encode(p).decode() for p in payloads]})
        with self._io:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the strict decoder (node) exited: {self._proc.poll()}")
        got = json.loads(answer)
        if "error" in got:
            raise RuntimeError(f"the strict decoder: {got['error']}")
        return [Decoded(r["ok"], r.get("json"), r.get("error", "")) for r in got["results"]]

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        self._proc.wait(10)
        if os.path.exists(self._fds):
            os.unlink(self._fds)
