"""Hot reload through a live Glider: edit the config (or a script it names) and the next request follows
the new rule; break it and the old rule still answers, the error is logged as `ConfigRejected` and
shown by `/api/router/lint`; `POST /api/router/reload` and SIGHUP reload too; turn families and sticky
bindings survive a reload, and a request in flight finishes on the rules it started with."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, ToolReply
from llama_server import free_port
from serve_process import ServeProcess

pytestmark = pytest.mark.live


def config(fake_url: str, target: str = "cloud", extra_rules: str = "") -> str:
    return f"""
backends:
  ollama: {{type: ollama, side: local, base_url: '{fake_url}', model: qwen-local}}
  origin: {{type: origin, side: cloud, base_url: '{fake_url}'}}
routing:
  task_classifier: {{enabled: false}}
  rules:
    - name: explicit_cloud
      priority: 99
      trigger: {{type: explicit, commands: ["/cloud"]}}
      action: {{target: cloud, backend: origin}}
    - name: pick
      priority: 50
      trigger: {{type: regex, pattern: "deploy"}}
      action: {{target: {target}}}
{extra_rules}    - name: default
      priority: 0
      trigger: {{type: always}}
      action: {{target: local, backend: ollama}}
"""


def ask(g: GliderServer, text: str, **extra: Any) -> httpx.Response:
    body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": text}], **extra}
    r = httpx.post(g.url + "/v1/messages", json=body, headers={"x-api-key": "sk-test"}, timeout=30)
    assert r.status_code == 200, r.text
    return r


def route(r: httpx.Response) -> str:
    return r.headers["x-glider-route"]


def wait_events(g: GliderServer, kind: str, count: int) -> list[dict[str, Any]]:
    found = g.wait_for(kind, count, timeout=15)
    assert len(found) >= count, (kind, g.types())
    return found


def test_an_edit_is_followed_and_a_broken_edit_keeps_the_rules_in_force(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(config(fake.url), tmp_path, reload_interval=0.1) as g,
    ):
        assert route(ask(g, "deploy it")).startswith("cloud; rule=pick")
        g.path.write_text(config(fake.url, target="local"))
        (done,) = wait_events(g, "ConfigReloaded", 1)
        assert (done["trigger"], done["rules"], done["restart_needed"]) == ("watch", 3, [])
        assert str(g.path) in done["files"]
        assert route(ask(g, "deploy it")).startswith("local; rule=pick")
        # Broken: an unknown trigger type. The rules in force answer; the error is visible.
        g.path.write_text(config(fake.url).replace("type: regex", "type: regexp"))
        (rejected,) = wait_events(g, "ConfigRejected", 1)
        assert rejected["trigger"] == "watch"
        assert "unknown trigger type 'regexp'" in rejected["errors"][0]["message"]
        assert rejected["errors"][0]["rule"] == "pick"
        assert route(ask(g, "deploy it")).startswith("local; rule=pick")
        lint = httpx.get(g.url + "/api/router/lint").json()
        assert lint["ok"] is True and lint["differs"] is True
        assert lint["disk"]["ok"] is False and lint["disk"]["errors"][0]["key"] == "trigger.type"
        assert lint["reload"]["ok"] is False and "regexp" in lint["reload"]["errors"][0]["message"]
        # A config lint rejects (no catch-all) is refused too, not only one that does not load.
        no_catch_all = config(fake.url).split("    - name: default")[0]
        g.path.write_text(no_catch_all)
        second = wait_events(g, "ConfigRejected", 2)[1]
        assert "no rule covers every request" in second["errors"][0]["message"]
        assert route(ask(g, "hello")).startswith("local; rule=default")


def test_a_script_edit_reloads_and_the_api_reloads_on_demand(tmp_path: Path) -> None:
    script = tmp_path / "pick.star"
    script.write_text('def evaluate(request):\n    return {"matched": True, "action": {"target": "cloud"}}\n')
    rule = (
        "    - name: scripted\n      priority: 60\n"
        f"      trigger: {{type: script, file: '{script}'}}\n      action: {{target: cloud}}\n"
    )
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(config(fake.url, extra_rules=rule), tmp_path, reload_interval=0.1) as g,
    ):
        assert route(ask(g, "hello")).startswith("cloud; rule=scripted")
        script.write_text("def evaluate(request):\n    return None\n")
        wait_events(g, "ConfigReloaded", 1)
        assert route(ask(g, "hello")).startswith("local; rule=default")
        r = httpx.post(g.url + "/api/router/reload")
        assert r.status_code == 200 and r.json()["ok"] is True and r.json()["trigger"] == "api"
        script.write_text("def evaluate():\n    return None\n")  # the wrong arity: lint refuses it
        bad = httpx.post(g.url + "/api/router/reload")
        assert bad.status_code == 422 and bad.json()["ok"] is False
        assert "takes 0 arguments" in bad.json()["errors"][0]["message"]
        assert route(ask(g, "hello")).startswith("local; rule=default")


def test_families_and_bindings_survive_and_a_request_in_flight_keeps_its_rules(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(config(fake.url), tmp_path, reload_interval=None) as g,
    ):
        tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
        fake.set_reply(tool=ToolReply("Bash", {"command": "ls"}))
        first = ask(g, "list the files /cloud", tools=tools, stream=True)
        fake.reset()
        call_id = next(
            json.loads(line[6:])["content_block"]["id"]
            for line in first.text.splitlines()
            if line.startswith("data: ") and '"tool_use"' in line and "content_block_start" in line
        )
        # A slow local reply is in flight while the config changes.
        fake.set_reply(text="slow-local-answer", event_delay=0.3)
        out: dict[str, httpx.Response] = {}
        slow = threading.Thread(target=lambda: out.update(r=ask(g, "hello there", stream=True)))
        slow.start()
        time.sleep(0.3)
        g.path.write_text(config(fake.url).replace("target: local, backend: ollama", "target: cloud"))
        assert httpx.post(g.url + "/api/router/reload").json()["ok"] is True
        slow.join(timeout=30)
        assert route(out["r"]).startswith("local; rule=default") and "slow-local-answer" in out["r"].text
        fake.reset()
        assert route(ask(g, "hello again")).startswith("cloud; rule=default")
        # The tool result of the /cloud turn still goes home, in its family, bound.
        result = {
            "model": "m",
            "max_tokens": 16,
            "tools": tools,
            "messages": [
                {"role": "user", "content": "list the files /cloud"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a.py"}],
                },
            ],
        }
        r = httpx.post(g.url + "/v1/messages", json=result, headers={"x-api-key": "k"}, timeout=30)
        assert route(r).startswith("cloud;")
    decided = [(d, turn) for t, d, turn in g.events if t == "RouteDecided"]
    assert decided[-1][0]["family"]["kind"] == "tool_result" and decided[-1][1] == decided[0][1]
    assert decided[-1][0]["family"]["link"] == f"answers tool call {call_id} issued in this family"
    assert decided[-1][0]["sticky"]["bound"] is True


def test_glider_serve_reloads_on_sighup_and_refuses_a_config_lint_rejects(tmp_path: Path) -> None:
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    bad = tmp_path / "bad.yaml"
    bad.write_text(config("http://127.0.0.1:9").split("    - name: default")[0])
    refused = subprocess.run(
        [sys.executable, "-m", "glider_cli", "serve", "--config", str(bad), "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode == 1 and "no rule covers every request" in refused.stderr
    path = tmp_path / "c.yaml"
    path.write_text(config("http://127.0.0.1:9"))
    with ServeProcess("--config", str(path), env=env) as served:
        proc, url = served.proc, served.url
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 15
        while True:
            last = httpx.get(url + "/api/router/lint", timeout=5).json()["reload"]
            if last is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "SIGHUP ended the server"
        assert last is not None and (last["ok"], last["trigger"]) == (True, "sighup")
        path.write_text(config("http://127.0.0.1:9").replace("type: regex", "type: regexp"))
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 15
        while httpx.get(url + "/api/router/lint", timeout=5).json()["reload"]["ok"] is not False:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
    assert served.returncode == 0
    err = served.err
    assert "rejected" in err and "the rules in force stay" in err and "regexp" in err
