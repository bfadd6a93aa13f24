"""What `glider serve` leaves for later (issue 29's cold start): an app built as `glider serve` builds it
(`server.serve.prepare`: the config, its lint, `create_app`) answers its first model request without
loading these, each loaded on its first use and working then. Each check runs in a fresh interpreter,
so what an earlier test imported does not count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fake_upstream import FakeUpstream

# Serve the prepared app with uvicorn on 127.0.0.1 (the options `glider serve` runs it with) and
# send it requests; print which of the watched modules were loaded after each.
SERVE = r"""
import http.client, json, socket, sys, threading, time
import uvicorn
from glider_cli.server.serve import prepare, uvicorn_options

env = {"GLIDER_HOME": sys.argv[2]}
watch, calls = json.loads(sys.argv[3]), json.loads(sys.argv[4])
prepared = prepare(config=sys.argv[1], environ=env)
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
server = uvicorn.Server(uvicorn.Config(prepared.app, **uvicorn_options(prepared.app)))
out = []

def client():
    try:
        while not server.started:
            time.sleep(0.01)
        for method, path, body in calls:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            headers = {"content-type": "application/json", "x-api-key": "sk-test"}
            c.request(method, path, json.dumps(body) if body is not None else None, headers)
            r = c.getresponse()
            text = r.read().decode()
            c.close()
            loaded = sorted(m for m in watch if m in sys.modules)
            out.append({"status": r.status, "body": text, "loaded": loaded})
    finally:
        server.should_exit = True

threading.Thread(target=client).start()
server.run(sockets=[sock])
print(json.dumps(out))
"""

MODEL = (
    "POST",
    "/v1/messages",
    {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "/cloud hi"}]},
)


def serve(tmp_path: Path, url: str, watch: list[str], calls: list[tuple[str, str, object]]) -> list[dict]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"extends: default\nbackends:\n  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n",
        encoding="utf-8",
    )
    args = [
        sys.executable,
        "-c",
        SERVE,
        str(cfg),
        str(tmp_path / "home"),
        json.dumps(watch),
        json.dumps(calls),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_model_request_does_not_start_the_starlark_interpreter(tmp_path: Path) -> None:
    # The default profile's scripts run as Python (`sandbox.native`); its lint at start checks them by
    # that subset, not by loading them in the interpreter. (Nor is the bundled price table's reader
    # loaded: `config.pricing.bundled`, for the usage views.)
    watch = [
        "importlib.resources",
        "starlark",
        "glider_cli.sandbox.starlark_eval",
        "glider_cli.sandbox.inprocess",
    ]
    with FakeUpstream(models=("claude-x",)) as fake:
        (first,) = serve(tmp_path, fake.url, watch, [MODEL])
    assert first["status"] == 200, first["body"]
    assert first["loaded"] == []


def test_a_config_without_a_user_script_never_loads_the_script_worker(tmp_path: Path) -> None:
    # Its lint, the router's rules (grouping runs of Starlark scripts) and the requests: the bundled
    # scripts run as Python, so the script worker's supervisor (`sandbox.supervisor`, under
    # `router.scripts`) is never imported.
    watch = ["glider_cli.router.scripts", "glider_cli.sandbox.process", "glider_cli.sandbox.supervisor"]
    tools = {
        "model": "claude-x",
        "max_tokens": 8,
        "tools": [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "please refactor the parser"}],
    }
    with FakeUpstream(models=("claude-x",)) as fake:
        first, second = serve(tmp_path, fake.url, watch, [MODEL, ("POST", "/v1/messages", tools)])
    assert first["status"] == 200, first["body"]
    assert second["status"] == 200, second["body"]
    assert first["loaded"] == second["loaded"] == []


def test_the_event_feed_is_loaded_by_the_first_dashboard_request_for_it(tmp_path: Path) -> None:
    watch = ["glider_cli.store.views.feed", "glider_cli.store.views.feed_views"]
    calls = [MODEL, ("GET", "/api/events/requests?limit=5", None), ("GET", "/api/events/stats", None)]
    with FakeUpstream(models=("claude-x",)) as fake:
        first, requests, stats = serve(tmp_path, fake.url, watch, calls)
    assert first["status"] == 200, first["body"]
    assert first["loaded"] == []
    # First use: loaded then, and the request just served is in the feed.
    assert requests["status"] == 200, requests["body"]
    assert requests["loaded"] == watch
    (row,) = json.loads(requests["body"])["requests"]
    assert row["backend"] == "origin"
    assert stats["status"] == 200, stats["body"]
    assert "origin" in json.loads(stats["body"])["backends"]


def test_starlette_and_its_routes_are_built_by_the_first_request_that_is_not_a_model_call(
    tmp_path: Path,
) -> None:
    # The model endpoints are served by `server.app.GliderApp` without Starlette; the lifespan ran
    # (the request was routed and answered by the upstream client it opens).
    watch = [
        "anyio",
        "glider_cli.server.info_routes",
        "glider_cli.server.model_routes",
        "glider_cli.server.router_api",
        "starlette.applications",
        "starlette.routing",
    ]
    calls = [MODEL, MODEL, ("GET", "/healthz", None), ("GET", "/v1/models", None), MODEL]
    with FakeUpstream(models=("claude-x",)) as fake:
        first, second, health, models, third = serve(tmp_path, fake.url, watch, calls)
    assert first["status"] == second["status"] == 200, first["body"]
    assert json.loads(first["body"])["type"] == "message"
    assert first["loaded"] == second["loaded"] == []
    # First use: built then, and it answers as ever (the app's state is its `request.app.state`).
    assert health["status"] == 200, health["body"]
    assert health["loaded"] == watch
    assert json.loads(health["body"])["connections"]["open"] >= 1
    assert models["status"] == 200 and "glider-auto" in models["body"]
    assert third["status"] == 200, third["body"]


def _lifespan_messages(app: object) -> tuple[list[dict], BaseException | None]:
    """Drive the app's lifespan as an ASGI server does: startup, then shutdown."""
    import asyncio

    sent: list[dict] = []
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> dict:
        return incoming.pop(0)

    async def send(message: dict) -> None:
        sent.append(dict(message))

    async def run() -> BaseException | None:
        try:
            await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)  # type: ignore[operator]
        except BaseException as exc:
            return exc
        return None

    return sent, asyncio.run(run())


def test_the_lifespan_is_run_as_starlette_runs_one(tmp_path: Path) -> None:
    from glider_harness import RecordingSink

    from glider_cli.config.load import load_config
    from glider_cli.server.app import create_app

    cfg = tmp_path / "c.yaml"
    cfg.write_text("extends: default\n", encoding="utf-8")
    env = {"GLIDER_HOME": str(tmp_path / "home")}

    app = create_app(load_config(config=str(cfg), environ=env), sink=RecordingSink(), environ=env)
    sent, raised = _lifespan_messages(app)
    assert raised is None
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]

    # A start that fails: `lifespan.startup.failed` with the traceback, and the error raised to the server.
    app = create_app(load_config(config=str(cfg), environ=env), sink=RecordingSink(), environ=env)

    def broken() -> None:
        raise RuntimeError("the delegation cannot start")

    app.state.proxy.delegation.start = broken
    sent, raised = _lifespan_messages(app)
    assert isinstance(raised, RuntimeError)
    (failed,) = sent
    assert failed["type"] == "lifespan.startup.failed"
    assert "RuntimeError: the delegation cannot start" in failed["message"]
    assert "Traceback" in failed["message"]


# `SERVE`, with the thread that imports each watched module recorded (a meta path finder that only
# looks): `{"out": [...], "threads": {module: thread name}}`.
SERVE_THREADS = r"""
import json, sys, threading

THREADS = {}
WATCHED = set(json.loads(sys.argv[3]))

class _Seen:
    def find_spec(self, name, path=None, target=None):
        if name in WATCHED:
            THREADS.setdefault(name, threading.current_thread().name)
        return None

sys.meta_path.insert(0, _Seen())
""" + SERVE.replace("print(json.dumps(out))", 'print(json.dumps({"out": out, "threads": THREADS}))')


def test_a_new_turn_naming_its_workspace_is_recorded_off_the_event_loop(tmp_path: Path) -> None:
    # Claude Code names its working directory in the system prompt: the turn goes into that
    # workspace's continuity record, and `delegate.operations` (~25 ms to import) is loaded on a worker
    # thread, not on the event loop's (uvicorn runs it on the main thread here) while requests wait.
    from glider_cli.delegate import continuity
    from glider_cli.paths import Paths

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    system = f"You are Claude Code.\n\n# Environment\n - Primary working directory: {project}\n"
    turn = {
        "model": "claude-x",
        "max_tokens": 8,
        "system": system,
        "messages": [{"role": "user", "content": "/cloud rename the parser module"}],
    }
    cfg = tmp_path / "c.yaml"
    watch = ["glider_cli.delegate.operations"]
    with FakeUpstream(models=("claude-x",)) as fake:
        cfg.write_text(
            f"extends: default\nbackends:\n  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
            encoding="utf-8",
        )
        args = [sys.executable, "-c", SERVE_THREADS, str(cfg), str(tmp_path / "home"), json.dumps(watch)]
        done = subprocess.run(
            [*args, json.dumps([("POST", "/v1/messages", turn)])], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    (first,) = result["out"]
    assert first["status"] == 200, first["body"]
    imported_on = result["threads"].get("glider_cli.delegate.operations")
    assert imported_on is not None and imported_on != "MainThread", result["threads"]
    # The lifespan's shutdown waited for the write: the turn is in the project's record.
    record = continuity.read(Paths(tmp_path / "home"), project)
    assert [e.text for e in record.entries if e.kind == "turn"] == ["/cloud rename the parser module"]
