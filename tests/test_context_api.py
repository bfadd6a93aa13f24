"""The /api/context/* endpoints through a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import orjson
import pytest
import uvicorn
from starlette.applications import Starlette

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.server.context_api import context_routes
from glider_cli.server.http_json import EXCEPTION_HANDLERS
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import make_event
from glider_cli.store.eventlog.writer import EventWriter

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "store" / "polyglot"
pytestmark = pytest.mark.live


@contextlib.contextmanager
def serve(app: Starlette) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    end = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < end, "server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@pytest.fixture
def live(glider_env: Path) -> Iterator[tuple[httpx.Client, EventWriter]]:
    paths = Paths(home=glider_env)
    writer = EventWriter(paths, ContextSettings())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        writer.start()
        try:
            yield
        finally:
            writer.close()

    routes = context_routes(paths, ContextSettings(), writer)
    # The app's own error handling (server.http_json), as create_app installs it.
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=dict(EXCEPTION_HANDLERS))
    with serve(app) as url, httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
        yield client, writer


def test_events_turns_and_episodes(live: tuple[httpx.Client, EventWriter]) -> None:
    client, writer = live
    writer.emit(
        "TurnOpened",
        {"ask": "rename the helper", "headers": {"x-api-key": "sk-live-0123456789abc"}},
        turn_id="t1",
    )
    writer.emit("RouteDecided", {"target": "cloud", "backend": "anthropic"}, turn_id="t1")
    writer.emit("OriginPassthrough", {"backend": "anthropic", "status": 200}, turn_id="t1")
    recent = client.get("/api/context/recent", params={"limit": 2}).json()
    assert [e["type"] for e in recent] == ["RouteDecided", "OriginPassthrough"]
    turns = client.get("/api/context/turns").json()
    assert [t["turn_id"] for t in turns] == ["t1"]
    assert turns[0]["outcome"] == "answered by anthropic status 200"
    detail = client.get("/api/context/turns/t1").json()
    assert len(detail["events"]) == 3
    assert detail["events"][0]["data"]["headers"]["x-api-key"] == "[REDACTED]"
    missing = client.get("/api/context/turns/nope")
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "turn_id"
    eps = client.get("/api/context/episodes").json()
    assert eps[0]["summary"].startswith("asked: rename the helper; routed: cloud via anthropic")
    bad = client.get("/api/context/recent", params={"limit": "many"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "limit"


def test_recent_turns_and_episodes_page_back_with_a_cursor(live: tuple[httpx.Client, EventWriter]) -> None:
    client, writer = live
    for i in range(5):
        writer.emit("TurnOpened", {"ask": f"ask {i}"}, turn_id=f"t{i}")
        writer.emit("OriginPassthrough", {"backend": "anthropic", "status": 200}, turn_id=f"t{i}")
    newest = client.get("/api/context/recent", params={"limit": 3}).json()
    older = client.get("/api/context/recent", params={"limit": 3, "before": newest[0]["id"]}).json()
    assert [e["turn_id"] for e in older] == ["t2", "t2", "t3"] and older[-1]["id"] < newest[0]["id"]
    page = client.get("/api/context/turns", params={"limit": 2}).json()
    assert [t["turn_id"] for t in page] == ["t3", "t4"]
    back = client.get("/api/context/turns", params={"limit": 2, "before": page[0]["turn_id"]}).json()
    assert [t["turn_id"] for t in back] == ["t1", "t2"]
    assert len(client.get("/api/context/turns").json()) == 5  # no limit: every turn, as before
    eps = client.get("/api/context/episodes", params={"limit": 2, "before": "t1"}).json()
    assert [e["asked"] for e in eps] == ["ask 0"]
    assert client.get("/api/context/recent", params={"before": "a b"}).status_code == 400


def test_index_query_explain_communities(live: tuple[httpx.Client, EventWriter], tmp_path: Path) -> None:
    client, _ = live
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    r = client.post("/api/context/index-tree", json={"path": str(repo), "turn_id": "t9"})
    assert r.status_code == 200 and r.json()["files"] == 13
    r = client.post("/api/context/index-symbols", json={"path": str(repo)})
    assert r.status_code == 200 and r.json()["by_lang"]["go"] == 2
    assert client.post("/api/context/index-tree", json={"path": str(repo / "nope")}).status_code == 400
    assert client.post("/api/context/index-tree", content=b"{not json").status_code == 400
    assert client.post("/api/context/index-symbols", json=[1]).status_code == 400

    hits = client.get("/api/context/query", params={"q": "t9 kind=symbol parser"}).json()
    assert hits[0]["name"] == "Parser" and hits[0]["line"] == 6
    bad = client.get("/api/context/query", params={"q": "t9 kind=weird parser"})
    assert bad.status_code == 400 and bad.json()["error"]["position"] == 8
    ex = client.get("/api/context/explain", params={"turn_id": "t9", "id": "pkg/helpers.py"}).json()
    assert ex["entity"]["id"] == f"file:{repo}/pkg/helpers.py" and ex["hubs"]
    assert client.get("/api/context/explain", params={"turn_id": "t9"}).status_code == 400
    comm = client.get("/api/context/communities", params={"turn_id": "t9"}).json()
    assert comm["algorithm"] == "components" and comm["count"] == 1
    wrong = client.get("/api/context/communities", params={"turn_id": "t9", "algorithm": "leiden"})
    assert wrong.status_code == 400
    unknown = client.get("/api/context/communities", params={"turn_id": "zz"})
    assert unknown.status_code == 400 and "unknown turn" in unknown.json()["error"]["message"]


def test_export_and_prune(live: tuple[httpx.Client, EventWriter], glider_env: Path) -> None:
    client, writer = live
    context = Paths(home=glider_env).context
    old_day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=60)
    old = make_event("0" * 32, "Note", f"{old_day}T00:00:00.000Z", "old", {"text": "x"})
    log.append_events(context, [old])
    writer.emit("Note", {"text": "fresh"}, turn_id="new")
    lines = [orjson.loads(x) for x in client.get("/api/context/export").content.splitlines()]
    assert [e["turn_id"] for e in lines] == ["old", "new"]
    dry = client.post("/api/context/prune", json={"dry_run": True}).json()
    assert dry["applied"] is False and len(dry["plan"]["delete"]) == 1
    assert client.post("/api/context/prune", json={"days": 0}).status_code == 400
    assert client.post("/api/context/prune", json={"dry_run": "yes"}).status_code == 400
    done = client.post("/api/context/prune").json()
    assert done["applied"] is True and len(done["result"]["deleted"]) == 1
    writer.emit("Note", {"text": "after prune"}, turn_id="new")
    recent = client.get("/api/context/recent").json()
    assert [e["data"]["text"] for e in recent][-2:] == ["fresh", "after prune"]
    assert writer.flush(10)
    texts = [e["data"]["text"] for e in log.iter_events(context)]
    assert texts == ["fresh", "after prune"]


def test_no_key_from_a_request_through_glider_serve_reaches_disk(tmp_path: Path) -> None:
    """The real `create_app` with its own EventWriter: keys in headers and in the text stay off disk."""
    from fake_upstream import FakeUpstream
    from glider_cli.config.load import load_config
    from glider_cli.server.app import create_app

    home = tmp_path / "home"
    client_key = "sk-ant-api03-ClientKeyThatMustNeverBeWritten0123456789"
    pasted = "ghp_PastedTokenThatMustNeverBeWritten0123"
    with FakeUpstream(models=["claude-x"], ollama_models=["qwen-local"]) as fake:
        cfg = tmp_path / "glider.yaml"
        cfg.write_text(
            "extends: default\nbackends:\n"
            f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
            f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        )
        config = load_config(config=str(cfg), environ={})
        app = create_app(config, environ={"GLIDER_HOME": str(home)})
        with serve(app) as url, httpx.Client(base_url=url, timeout=60, trust_env=False) as client:
            for text in (f"my key is {client_key}, and {pasted}", "/cloud explain this repo please"):
                r = client.post(
                    "/v1/messages",
                    headers={
                        "x-api-key": client_key,
                        "authorization": f"Bearer {client_key}",
                        "anthropic-version": "2023-06-01",
                    },
                    json={
                        "model": "claude-x",
                        "max_tokens": 32,
                        "messages": [{"role": "user", "content": text}],
                    },
                )
                assert r.status_code == 200, r.text
    files = [p for p in home.rglob("*") if p.is_file()]
    events = [e for _, p in log.list_day_files(home / "context") for e in log.read_file(p)]
    assert {"TurnOpened", "RouteDecided"} <= {e["type"] for e in events}
    blob = b"".join(p.read_bytes() for p in files)
    assert client_key.encode() not in blob and pasted.encode() not in blob
    assert b"[REDACTED]" in blob


def test_turns_are_paged_newest_first_with_a_cursor(live: tuple[httpx.Client, EventWriter]) -> None:
    client, writer = live
    for n in range(7):
        writer.emit("TurnOpened", {"ask": f"ask {n}"}, turn_id=f"p{n}")
    page = client.get("/api/context/turns", params={"limit": 3})
    assert [t["turn_id"] for t in page.json()] == ["p4", "p5", "p6"]
    assert page.headers["x-glider-next-before"] == "p4"
    older = client.get("/api/context/turns", params={"limit": 3, "before": "p4"})
    assert [t["turn_id"] for t in older.json()] == ["p1", "p2", "p3"]
    last = client.get(
        "/api/context/turns", params={"limit": 3, "before": older.headers["x-glider-next-before"]}
    )
    assert [t["turn_id"] for t in last.json()] == ["p0"] and "x-glider-next-before" not in last.headers
    assert client.get("/api/context/turns", params={"before": "a b"}).status_code == 400
    assert len(client.get("/api/context/turns").json()) == 7


def test_serve_prunes_old_day_files_by_itself_and_records_it(
    tmp_path: Path, glider_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_upstream import FakeUpstream
    from glider_cli.config.load import load_config
    from glider_cli.server import retention
    from glider_cli.server.app import create_app

    monkeypatch.setattr(retention, "FIRST_DELAY", 0.0)
    context = Paths(home=glider_env).context
    today = dt.datetime.now(dt.UTC).date()
    for back in (40, 20, 3):
        day = today - dt.timedelta(days=back)
        log.append_events(
            context, [make_event(f"{back:032x}", "Note", f"{day}T01:00:00.000Z", "t", {"text": "x"})]
        )
    with FakeUpstream() as fake:
        cfg = tmp_path / "glider.yaml"
        cfg.write_text(
            f"extends: default\ncontext: {{retain_days: 7}}\nbackends:\n"
            f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        )
        app = create_app(load_config(config=str(cfg), environ={}), environ={"GLIDER_HOME": str(glider_env)})
        with serve(app) as url, httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
            end = time.monotonic() + 10
            while time.monotonic() < end:
                recent = client.get("/api/context/recent").json()
                pruned = [e for e in recent if e["type"] == "EventsPruned"]
                if pruned:
                    break
                time.sleep(0.05)
    assert pruned, "no EventsPruned event within 10 s"
    data = pruned[0]["data"]
    assert data["retain_days"] == 7 and sorted(data["deleted"]) == [
        str(today - dt.timedelta(days=40)),
        str(today - dt.timedelta(days=20)),
    ]
    assert data["bytes_freed"] > 0
    assert [d for d, _ in log.list_day_files(context)] == [today - dt.timedelta(days=3), today]
