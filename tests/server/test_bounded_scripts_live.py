"""Scripts cannot take a live Glider down: a rule script that bombs is a no-match in the trace and the
request is served; the playground parses and loads in the sandbox, off the event loop, so a script
that never ends or eats memory leaves `/healthz` and the proxy answering."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-sonnet-4"], ollama_models=["qwen-local", "qwen2.5-coder:14b"]),
]

BOMB_RULE = """routing:
  rules:
    - name: bomb
      priority: 60
      trigger: {type: script, file: bomb.star}
      action: {target: cloud}
"""
N = "len(request.messages)"
BOMBS = {
    "list-bomb": f"def evaluate(request):\n    return [0] * (2147483646 + {N})\n",
    "string-bomb": (
        f'def evaluate(request):\n    x = "x" * (2000000000 + {N})\n    return {{"matched": True}}\n'
    ),
    "range-panic": f"def evaluate(request):\n    return list(range(2000000000 + {N}))\n",
    "endless-comprehension": "def evaluate(request):\n    return [i for i in range(2000000000)]\n",
}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def ask(g: GliderServer, text: str) -> httpx.Response:
    body = {"model": "claude-sonnet-4", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}
    return httpx.post(g.url + "/v1/messages", json=body, timeout=30)


@pytest.mark.parametrize("case", sorted(BOMBS))
def test_a_bombing_rule_script_is_a_no_match_and_the_request_is_served(
    fake: FakeUpstream, tmp_path: Path, case: str
) -> None:
    (tmp_path / "bomb.star").write_text(BOMBS[case])
    with GliderServer(backends_yaml(fake.url, extra=BOMB_RULE), tmp_path) as g:
        for i in range(3):
            t = time.monotonic()
            r = ask(g, f"tell me about the cache, take {i}")
            assert r.status_code == 200, r.text
            assert time.monotonic() - t < 5
        decisions = g.wait_for("RouteDecided", 3)
        for d in decisions:
            (bomb,) = [t for t in d["trace"] if t["rule"] == "bomb"]
            assert not bomb["matched"] and "counted as no match" in bomb["reason"]
            assert d["rule"] != "bomb" and d["target"] == "local"
        assert httpx.get(g.url + "/healthz", timeout=5).status_code == 200


def test_the_playground_bounds_parse_and_load(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        for source, fragment in (
            ("x = [0] * 2147483647\n", "out of memory"),
            ("x = list(range(2000000000))\n", "crashed the Starlark interpreter"),
            ('x = "x" * 300000000\n', "out of memory"),
            ("x = [i for i in range(2000000000)]\n", "out of memory"),
        ):
            r = httpx.post(g.url + "/api/playground/parse", json={"source": source}, timeout=10)
            assert r.status_code == 200
            got = r.json()
            assert got["ok"] is False and fragment in got["errors"][0]["message"], (source, got)
        fine = {"source": "def evaluate(r):\n    return None\n"}
        ok = httpx.post(g.url + "/api/playground/parse", json=fine)
        assert ok.json() == {"ok": True, "errors": []}


def test_an_endless_playground_script_does_not_block_other_requests(tmp_path: Path) -> None:
    endless = "def f():\n    for i in range(2000000000):\n        pass\n\nx = f()\n"
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        answer: dict[str, object] = {}

        def parse() -> None:
            r = httpx.post(g.url + "/api/playground/parse", json={"source": endless}, timeout=30)
            answer["body"] = r.json()

        worker = threading.Thread(target=parse)
        worker.start()
        time.sleep(0.2)  # the parse is running in the sandbox now
        slowest = 0.0
        while worker.is_alive():
            t = time.monotonic()
            assert httpx.get(g.url + "/healthz", timeout=5).status_code == 200
            slowest = max(slowest, time.monotonic() - t)
            time.sleep(0.05)
        worker.join()
        assert slowest < 0.5
        body = answer["body"]
        assert isinstance(body, dict) and body["ok"] is False
        assert "loading took longer than 1000 ms" in body["errors"][0]["message"]
