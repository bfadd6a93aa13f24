"""The last route of a client session, for Claude Code's statusline (and the API that serves it).

- `last_route(events, session_id)`: from logged events (oldest first), the newest `RouteDecided` whose
  family has this session id, with who answered it (the outcome event of the same turn that follows
  it: `FulfilledLocal` / `OriginPassthrough`): `{session_id, turn_id, side, rule, backend, model,
  delegate, ts}`, or None. Pure.
- `line(route)`: the one line a statusline shows, e.g. `glider local · explicit_local · qwen2.5-coder:14b`.
- `main()`: the statusline command (`python -m glider_cli.app.statusline [--url URL]`, what
  `glider setup claude-code --statusline` installs). Claude Code runs it with a JSON object on stdin
  that has the `session_id`; it asks `GET <url>/api/sessions/<id>/route` (with `GLIDER_TOKEN` when set)
  and prints the line, `glider: no route yet` for an unknown session, `glider: not running` when Glider
  does not answer. It imports nothing heavy and waits at most one second.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from glider_cli.store.eventlog.events import FULFILLED_LOCAL, ORIGIN_PASSTHROUGH, ROUTE_DECIDED

OUTCOMES = (FULFILLED_LOCAL, ORIGIN_PASSTHROUGH)


def last_route(events: Sequence[Mapping[str, Any]], session_id: str) -> dict[str, Any] | None:
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        data = ev.get("data")
        if ev.get("type") != ROUTE_DECIDED or not isinstance(data, Mapping):
            continue
        family = data.get("family")
        if not isinstance(family, Mapping) or family.get("session_id") != session_id:
            continue
        turn = ev.get("turn_id")
        served: Mapping[str, Any] = {}
        for later in events[i + 1 :]:
            if later.get("type") in OUTCOMES and later.get("turn_id") == turn:
                served = later.get("data") or {}
                break
        return {
            "session_id": session_id,
            "turn_id": turn,
            "side": data.get("target"),
            "rule": data.get("rule"),
            "backend": served.get("backend") or data.get("backend"),
            "model": served.get("model") or data.get("model"),
            "delegate": data.get("delegate"),
            "ts": ev.get("ts"),
        }
    return None


def line(route: Mapping[str, Any] | None) -> str:
    if route is None:
        return "glider: no route yet"
    if route.get("delegate"):
        return f"glider delegate · {str(route['delegate']).lstrip('/')}"
    parts = [str(route.get("side") or "?"), str(route.get("rule") or "?")]
    if route.get("model"):
        parts.append(str(route["model"]))
    elif route.get("backend"):
        parts.append(str(route["backend"]))
    return "glider " + " · ".join(parts)


def fetch(url: str, session_id: str, token: str | None, timeout: float = 1.0) -> dict[str, Any] | None:
    """The session's route from a running Glider (None for an unknown session); raises OSError when
    Glider does not answer."""
    req = urllib.request.Request(
        f"{url.rstrip('/')}/api/sessions/{urllib.parse.quote(session_id, safe='')}/route"
    )
    if token:
        req.add_header("x-glider-token", token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise OSError(f"Glider answered {exc.code}") from None
    return data if isinstance(data, dict) else None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    url = args[args.index("--url") + 1] if "--url" in args[:-1] else "http://127.0.0.1:8787"
    try:
        info = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        info = {}
    session = info.get("session_id") if isinstance(info, dict) else None
    if not isinstance(session, str) or not session:
        print("glider: no session")
        return 0
    try:
        route = fetch(url, session, os.environ.get("GLIDER_TOKEN"))
    except (OSError, ValueError):
        print("glider: not running")
        return 0
    print(line(route))
    return 0


if __name__ == "__main__":
    sys.exit(main())
