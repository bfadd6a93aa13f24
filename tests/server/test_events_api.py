"""The dashboard's APIs on a live Glider with its real event writer: the live stream, requests,
sessions, counts, the rules in force and continuity."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream
from glider_cli.delegate import continuity
from glider_cli.delegate.entry import Entry, new_id, now_iso
from glider_cli.paths import Paths
from glider_cli.router import Router

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5", "glider-auto"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def send(url: str, text: str, session: str = "sess-1") -> httpx.Response:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": text}]}
    h = {**HEADERS, "x-claude-code-session-id": session}
    return httpx.post(url + "/v1/messages", json=body, headers=h, timeout=10)


class Stream:
    """Reads /api/events/stream in a thread, as a browser's EventSource would; `frames` are
    (arrival time, id, event). `close()` shuts the socket down, which the server sees at once."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.frames: list[tuple[float, str, dict[str, Any]]] = []
        self.opened = threading.Event()
        self.failure: BaseException | None = None
        parts = urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        self._conn.request(
            "GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers or {}
        )
        self._closing = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self.opened.wait(5), f"the stream did not open: {self.failure!r}"

    def _run(self) -> None:
        try:
            r = self._conn.getresponse()
            assert r.status == 200 and r.headers["content-type"].startswith("text/event-stream")
            self.opened.set()
            event_id = ""
            while line := r.readline().decode():
                if line.startswith("id: "):
                    event_id = line[4:].strip()
                elif line.startswith("data: "):
                    self.frames.append((time.monotonic(), event_id, orjson.loads(line[6:])))
        except Exception as exc:  # the socket shut down by close() ends the read with an error
            if not self._closing:
                self.failure = exc

    def wait_for(self, type_: str, timeout: float = 5.0) -> tuple[float, str, dict[str, Any]]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for f in self.frames:
                if f[2]["type"] == type_:
                    return f
            time.sleep(0.01)
        raise AssertionError(f"no {type_} on the stream: {[f[2]['type'] for f in self.frames]}")

    def ended(self, timeout: float) -> bool:
        """True once the server has ended the stream (within `timeout` seconds)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        self._closing = True
        if self._conn.sock is not None:
            with contextlib.suppress(OSError):  # the server may have ended the stream already
                self._conn.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        self._conn.close()
        assert self.failure is None, self.failure


def test_a_proxied_request_is_on_the_stream_within_a_second(tmp_path: Path, fake: FakeUpstream) -> None:
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False) as g:
        stream = Stream(g.url + "/api/events/stream")
        sent = time.monotonic()
        assert send(g.url, "/local fix the typo").status_code == 200
        at, first_id, decided = stream.wait_for("RouteDecided")
        assert at - sent < 1.0
        assert decided["data"]["rule"] == "explicit_local" and decided["id"] == first_id
        _, _, outcome = stream.wait_for("FulfilledLocal")
        assert outcome["turn_id"] == decided["turn_id"] and outcome["data"]["status"] == 200
        stream.close()
        # A browser reconnecting sends Last-Event-ID: the stream resumes after it.
        resumed = Stream(g.url + "/api/events/stream", headers={"last-event-id": first_id})
        _, _, again = resumed.wait_for("FulfilledLocal")
        assert again["id"] == outcome["id"]
        assert all(f[2]["id"] > first_id for f in resumed.frames)
        resumed.close()
        backlog = Stream(g.url + "/api/events/stream?backlog=50&types=RouteDecided")
        _, _, seen = backlog.wait_for("RouteDecided")
        assert seen["id"] == decided["id"] and {f[2]["type"] for f in backlog.frames} == {"RouteDecided"}
        backlog.close()
        assert httpx.get(g.url + "/api/events/stream?backlog=many").status_code == 400


def test_a_stream_ends_by_itself_and_resumes_where_it_ended(tmp_path: Path, fake: FakeUpstream) -> None:
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False) as g:
        g.app.state.events.max_age = 0.5
        first = Stream(g.url + "/api/events/stream")
        assert send(g.url, "/local one").status_code == 200
        _, last_id, _ = first.wait_for("FulfilledLocal")
        assert first.ended(3) and first.failure is None
        assert send(g.url, "/local two").status_code == 200
        # What a browser does next: reconnect with the last id it saw.
        second = Stream(g.url + "/api/events/stream", headers={"last-event-id": last_id})
        _, _, decided = second.wait_for("RouteDecided")
        assert decided["data"]["rule"] == "explicit_local" and decided["id"] > last_id
        # Nothing before it was sent again. A /local turn binds its family local (issue 15): the first
        # turn's run end (StickyBound with ended_at) was written after its outcome, so it comes first.
        ended, opened = second.frames[0][2], second.frames[1][2]
        assert (
            ended["type"] == "StickyBound"
            and ended["data"]["target"] == "local"
            and ended["data"]["ended_at"]
        )
        assert opened["type"] == "TurnOpened" and opened["data"]["ask"] == "/local two"
        second.close()


def test_closing_the_hub_ends_the_streams(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, record=False) as g:
        stream = Stream(g.url + "/api/events/stream")
        g.app.state.events.close()  # from another thread, as a runner's shutdown would
        assert stream.ended(5) and stream.failure is None


def test_the_stream_needs_the_live_writer(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:  # a recording sink
        r = httpx.get(g.url + "/api/events/stream")
        assert r.status_code == 404 and "no live event log" in r.json()["error"]["message"]


def test_requests_sessions_and_stats(tmp_path: Path, fake: FakeUpstream) -> None:
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False) as g:
        assert send(g.url, "/local rename the helper", session="alpha").status_code == 200
        assert send(g.url, "/cloud design the cache", session="alpha").status_code == 200
        assert send(g.url, "/local add a test", session="beta").status_code == 200
        page = httpx.get(g.url + "/api/events/requests", params={"limit": 2}).json()
        assert [r["rule"] for r in page["requests"]] == ["explicit_local", "explicit_cloud"]
        assert page["requests"][0]["session_id"] == "beta" and page["next"] == page["requests"][1]["id"]
        assert all(r["status"] == 200 and r["kind"] == "new_turn" for r in page["requests"])
        rest = httpx.get(g.url + "/api/events/requests", params={"before": page["next"]}).json()
        assert [r["ask"] for r in rest["requests"]] == ["/local rename the helper"] and rest["next"] is None
        alpha = httpx.get(g.url + "/api/events/requests", params={"session": "alpha"}).json()["requests"]
        assert [r["side"] for r in alpha] == ["cloud", "local"]
        sessions = httpx.get(g.url + "/api/events/sessions").json()["sessions"]
        assert [(s["session_id"], s["requests"], s["local"], s["cloud"]) for s in sessions] == [
            ("beta", 1, 1, 0),
            ("alpha", 2, 1, 1),
        ]
        stats = httpx.get(g.url + "/api/events/stats", params={"window": "hour"}).json()
        assert stats["total"] == 3 and stats["sides"] == {"local": 2, "cloud": 1}
        assert {r["rule"]: r["total"] for r in stats["rules"]} == {"explicit_local": 2, "explicit_cloud": 1}
        assert stats["backends"]["ollama"]["state"] == "ok" and stats["backends"]["ollama"]["answered"] == 2
        assert len(stats["series"]) == 12 and sum(b["local"] for b in stats["series"]) == 2
        assert httpx.get(g.url + "/api/events/stats", params={"window": "week"}).status_code == 400
        assert httpx.get(g.url + "/api/events/requests", params={"limit": 0}).status_code == 400


def test_rules_in_force_follow_the_router(tmp_path: Path) -> None:
    extra = (
        "routing:\n  rules:\n"
        "    - {name: catch_all, priority: 60, trigger: {type: always}, action: {target: cloud}}\n"
    )
    with GliderServer(backends_yaml("http://127.0.0.1:9", extra=extra), tmp_path) as g:
        data = httpx.get(g.url + "/api/router/rules").json()
        names = [r["name"] for r in data["rules"]]
        assert names == [r.name for r in Router(g.config).rules]
        by = {r["name"]: r for r in data["rules"]}
        assert by["complexity"]["enabled"] is False and by["complexity"]["disabled_reason"]
        assert by["catch_all"]["shadowed"] is None and "can never run" in by["refactor_local"]["shadowed"]
        rule = next(r for r in g.config.rules if r.name == "explicit_local")
        assert by["explicit_local"]["where"] == f"{rule.file}:{rule.line}"
        assert by["task_classifier.tools"]["where"] is None
        assert data["source"] == g.config.source and data["lint"]["ok"] is False


def test_continuity_record_and_block(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "repo"
    ws.mkdir()
    paths = Paths(home=home)
    for text in ("the parser test fails on empty input", "we changed the CSS of the header"):
        entry = Entry(id=new_id(), kind="turn", ts=now_iso(), source_cli="claude", text=text)
        continuity.append(paths, ws, entry)
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        listed = httpx.get(g.url + "/api/continuity").json()["workspaces"]
        assert [(w["workspace"], w["entries"]) for w in listed] == [(str(ws), 2)]
        rec = httpx.get(g.url + "/api/continuity/record", params={"workspace": str(ws)}).json()
        assert rec["entries"][0]["text"] == "the parser test fails on empty input"
        block = httpx.get(
            g.url + "/api/continuity/block", params={"workspace": str(ws), "task": "fix the parser"}
        ).json()
        assert block["items"] and "parser test" in block["text"] and block["vendor"] == "claude"
        assert httpx.get(g.url + "/api/continuity/record", params={"workspace": "repo"}).status_code == 400
        bad = httpx.get(
            g.url + "/api/continuity/block", params={"workspace": str(ws), "task": "x", "vendor": "nope"}
        )
        assert bad.status_code == 422 and "unknown delegate vendor" in bad.json()["error"]["message"]
