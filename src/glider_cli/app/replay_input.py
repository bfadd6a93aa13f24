"""The input of `glider route replay`: request sequences read from JSONL files and client captures.

`load_requests(files)` reads every file in the order given (see `app.replay` for the formats) and
returns one `ReplayRequest` per model request, naming its file and line (or capture index); a bad
line is a RequestError naming that place. Reading the files is the only I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from glider_cli.errors import RequestError
from glider_cli.values import Frozen, init_fields

_MODEL_PATHS = ("/messages", "/messages/count_tokens", "/chat/completions", "/responses")


class ReplayRequest(Frozen):
    where: str
    path: str | None
    headers: dict[str, str]
    body: dict[str, Any]
    t: float | None
    reply: Any
    file: str

    def __init__(
        self,
        where: str,
        path: str | None,
        headers: dict[str, str],
        body: dict[str, Any],
        t: float | None = None,
        reply: Any = None,
        file: str = "",
    ) -> None:
        init_fields(self, where, path, headers, body, t, reply, file)

    @property
    def count_tokens(self) -> bool:
        return self.path is not None and self.path.split("?", 1)[0].rstrip("/").endswith("/count_tokens")


def _headers(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return {str(k).lower(): str(v) for k, v in raw.items()}
    if isinstance(raw, list) and all(isinstance(p, list | tuple) and len(p) == 2 for p in raw):
        return {str(k).lower(): str(v) for k, v in raw}
    raise RequestError(f"{where}: 'headers' must be an object or a list of [name, value] pairs")


def _request(obj: Any, where: str) -> ReplayRequest | None:
    if not isinstance(obj, Mapping):
        raise RequestError(f"{where}: expected a JSON object with 'body' (and 'headers')")
    method = str(obj.get("method") or "POST").upper()
    path = obj.get("path")
    if path is not None and not isinstance(path, str):
        raise RequestError(f"{where}: 'path' must be a string")
    if method != "POST" or (
        path is not None and not path.split("?", 1)[0].rstrip("/").endswith(_MODEL_PATHS)
    ):
        return None
    body = obj.get("body")
    if not isinstance(body, Mapping):
        raise RequestError(f"{where}: 'body' must be a JSON object (the request body)")
    t = obj.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)):
        raise RequestError(f"{where}: 't' must be a number of seconds")
    headers = _headers(obj.get("headers"), where)
    return ReplayRequest(where, path, headers, dict(body), t, obj.get("reply"), where.split(":", 1)[0])


def load_requests(files: Sequence[str]) -> list[ReplayRequest]:
    """The requests of every file, in order. RequestError names the file and line of a bad one.
    Event log lines (`type` and `data`: Cursor's tool steps are read by `app.replay_tools`) are
    passed over; a file of them alone has no requests and is no error."""
    out: list[ReplayRequest] = []
    events = 0
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise RequestError(f"cannot read {name}: {exc.strerror or exc}") from None
        whole: Any = None
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, Mapping) and isinstance(whole.get("requests"), list):
            for i, item in enumerate(whole["requests"]):
                r = _request(item, f"{name}: requests[{i}]")
                if r is not None:
                    out.append(r)
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise RequestError(f"{name}:{lineno}: not a JSON line: {exc}") from None
            if isinstance(obj, Mapping) and "type" in obj and "data" in obj and "body" not in obj:
                events += 1
                continue
            r = _request(obj, f"{name}:{lineno}")
            if r is not None:
                out.append(r)
    if not out and not events:
        raise RequestError(f"no model requests in {', '.join(files)}")
    return out
