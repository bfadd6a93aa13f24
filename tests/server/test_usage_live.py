"""Usage accounting end to end: requests of every protocol through a live Glider (the real EventWriter,
strict fakes) record the tokens each backend reported (cache tokens included), or an estimate marked
`estimated` where the backend said nothing; then the installed `glider context usage` and
`/api/context/usage` (behind the dashboard token) price them: cloud cost at the bundled or configured
price, local cost 0 unless priced, savings at the requested model's price."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(
        models=["claude-sonnet-4-5", "gpt-4.1", "gemini-2.5-flash", "priced-cloud"],
        ollama_models=["qwen-local"],
    ),
]

ANTHROPIC = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
OPENAI = {"authorization": "Bearer sk-client"}
GLIDER = Path(sys.executable).with_name("glider")


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _config(fake: FakeUpstream, pricing: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        f"  gone: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local,"
        " fallback: origin}\n"
        "routing:\n  task_classifier: {enabled: false}\n  rules:\n"
        "    - {name: far_local, priority: 96, trigger: {type: explicit, commands: ['/gone']},"
        " action: {target: local, backend: gone}, fallback: origin}\n" + pricing
    )


def _glider(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GLIDER_HOME": str(home)}
    proc = subprocess.run([str(GLIDER), *args], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _events(home: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def _outcomes(home: Path) -> list[dict[str, Any]]:
    return [e["data"] for e in _events(home) if e["type"] in ("FulfilledLocal", "OriginPassthrough")]


def _anthropic(g: GliderServer, text: str, *, stream: bool = False, model: str = "claude-sonnet-4-5") -> None:
    body = {
        "model": model,
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
    }
    r = httpx.post(g.url + "/v1/messages", json=body, headers=ANTHROPIC, timeout=30)
    assert r.status_code == 200, r.text


def test_every_protocol_records_reported_usage_and_cache_tokens(fake: FakeUpstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        fake.set_reply(usage=(1200, 80))
        _anthropic(g, "/cloud explain the parser", stream=True)
        _anthropic(g, "/local explain the lexer", stream=True)  # Ollama's counts, translated
        body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "/cloud hi"}]}
        r = httpx.post(g.url + "/v1/chat/completions", json=body, headers=OPENAI, timeout=30)
        assert r.status_code == 200, r.text
        body = {"model": "gpt-4.1", "input": "/cloud hello", "stream": True}
        r = httpx.post(g.url + "/v1/responses", json=body, headers=OPENAI, timeout=30)
        assert r.status_code == 200, r.text
        gem = {"contents": [{"role": "user", "parts": [{"text": "/cloud hey"}]}]}
        r = httpx.post(
            g.url + "/v1beta/models/gemini-2.5-flash:generateContent",
            json=gem,
            headers={"x-goog-api-key": "k"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        # An Anthropic reply with prompt-cache counts (the fake's reply body, given whole).
        cached = {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "cached answer"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 12,
                "output_tokens": 30,
                "cache_read_input_tokens": 9000,
                "cache_creation_input_tokens": 400,
            },
        }
        fake.set_fault(status=200, body=cached, times=1)
        _anthropic(g, "/cloud use the cache")
        # An OpenAI Chat reply whose prompt count includes its cached tokens.
        chat = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4.1",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": 5000,
                "completion_tokens": 7,
                "total_tokens": 5007,
                "prompt_tokens_details": {"cached_tokens": 4096},
            },
        }
        fake.set_fault(status=200, body=chat, times=1)
        body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "/cloud cached hi"}]}
        r = httpx.post(g.url + "/v1/chat/completions", json=body, headers=OPENAI, timeout=30)
        assert r.status_code == 200, r.text
    outs = _outcomes(home)
    assert len(outs) == 7
    for o in outs[:5]:
        assert (o["input_tokens"], o["output_tokens"]) == (1200, 80), o
        assert "estimated" not in o and o["rule"] in ("explicit_cloud", "explicit_local")
    assert outs[1]["model"] == "qwen-local" and outs[1]["requested_model"] == "claude-sonnet-4-5"
    assert outs[4]["requested_model"] == "gemini-2.5-flash"
    a, c = outs[5], outs[6]
    assert (a["input_tokens"], a["cache_read_tokens"], a["cache_write_tokens"]) == (12, 9000, 400)
    assert "cache_in_input" not in a
    assert (c["input_tokens"], c["cache_read_tokens"], c["cache_in_input"]) == (5000, 4096, True)

    report = json.loads(_glider(home, "context", "usage", "--by", "model", "--json").stdout)
    rows = {r["key"]: r for r in report["rows"]}
    sonnet = rows["claude-sonnet-4-5"]
    # 1200 in + 80 out at $3/$15; 12 in, 30 out, 9000 cache reads at $0.30, 400 writes at $3.75.
    want = (1200 * 3 + 80 * 15 + 12 * 3 + 30 * 15 + 9000 * 0.3 + 400 * 3.75) / 1e6
    assert sonnet["cloud_cost"] == pytest.approx(want)
    gpt = rows["gpt-4.1"]  # the cached 4096 are taken out of the 5000 and priced at $0.50
    want = (1200 * 2 + 80 * 8 + 1200 * 2 + 80 * 8 + (5000 - 4096) * 2 + 7 * 8 + 4096 * 0.5) / 1e6
    assert gpt["cloud_cost"] == pytest.approx(want)
    local = rows["qwen-local"]
    assert local["local_cost"] == 0 and local["local_calls"] == 1
    # At the requested Sonnet's price, on the client's request (what the cloud would have read), not on
    # the 1200 tokens the local backend said it read.
    client_in = outs[1]["client_input_tokens"]
    assert 0 < client_in < 1200
    assert local["savings"] == pytest.approx((client_in * 3 + 80 * 15) / 1e6)
    assert local["tokens"]["local"] == 1200 + 80 and local["avoided_cloud_tokens"] == client_in + 80
    t = report["totals"]
    assert t["savings"] == pytest.approx(local["savings"]) and report["savings_are_estimates"] is True
    assert (
        t["local_turns"] == 1 and t["turns"] == 7 and t["local_turn_share"] == pytest.approx(1 / 7, abs=1e-4)
    )
    human = _glider(home, "context", "usage", "--by", "rule").stdout
    assert (
        "explicit_local" in human and "estimated savings" in human and "bundled table of 2025-11-20" in human
    )
    env = {**os.environ, "GLIDER_HOME": str(home)}
    bad = subprocess.run(
        [str(GLIDER), "context", "usage", "--by", "week"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and "--by" in bad.stderr


def test_streams_without_usage_fallbacks_cuts_and_errors_are_accounted(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        fake.set_reply(usage=(500, 40))
        # A Chat stream passed through without `stream_options.include_usage`: nothing reported.
        body = {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": "/cloud count"}]}
        r = httpx.post(g.url + "/v1/chat/completions", json=body, headers=OPENAI, timeout=30)
        assert r.status_code == 200 and "[DONE]" in r.text
        r_chat = r.text
        # A local backend that refuses: its fallback (the cloud) answers and reports.
        _anthropic(g, "/gone add one")
        # A cloud error status: an UpstreamFailed and a failed outcome; nothing billed, nothing estimated.
        fake.set_fault(status=529, message="overloaded", times=1)
        body2 = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "/cloud x"}],
        }
        r = httpx.post(g.url + "/v1/messages", json=body2, headers=ANTHROPIC, timeout=30)
        assert r.status_code == 529
        # A stream cut after two events: the input was reported (message_start), the output not.
        fake.set_fault(cut_after=2, times=1)
        body3 = {**body2, "stream": True}
        with httpx.stream("POST", g.url + "/v1/messages", json=body3, headers=ANTHROPIC, timeout=30) as resp:
            resp.read()
    outs = _outcomes(home)
    assert len(outs) == 4, outs
    chat, fallback, error, cut = outs
    # The error's outcome says it failed and carries no usage, reported or estimated.
    assert error["status"] == 529 and error.get("outcome") == "failed"
    assert not error.get("input_tokens") and not error.get("output_tokens") and "estimated" not in error
    failed = [e["data"] for e in _events(home) if e["type"] == "UpstreamFailed"]
    assert [(f.get("status"), f["stage"]) for f in failed] == [
        (None, "before_first_byte"),
        (529, "before_first_byte"),
        (None, "mid_stream"),
    ]
    assert chat["estimated"] == ["input_tokens", "output_tokens"]
    assert chat["input_tokens"] > 0 and chat["output_tokens"] > 0
    assert fallback["fallback_from"] == "gone" and (fallback["input_tokens"], fallback["output_tokens"]) == (
        500,
        40,
    )
    assert "estimated" not in fallback and fallback["rule"] == "far_local"
    # Cut before any text: the output is what message_start reported (its framing is not text).
    assert cut["input_tokens"] == 500 and cut["output_tokens"] == 1 and cut["complete"] is False
    assert "estimated" not in cut
    # The Chat stream's estimate is its text's bytes/4, not its framing's.
    text = "".join(
        json.loads(line[5:])["choices"][0]["delta"].get("content") or ""
        for line in r_chat.splitlines()
        if line.startswith("data: {")
    )
    assert text and chat["output_tokens"] == (len(text.encode()) + 3) // 4
    report = json.loads(_glider(home, "context", "usage", "--by", "rule", "--json").stdout)
    assert report["totals"]["estimated_calls"] == 1
    rules = {r["key"]: r for r in report["rows"]}
    assert rules["far_local"]["cloud_calls"] == 1 and rules["far_local"]["local_turns"] == 0


def test_pricing_overrides_and_the_api_behind_the_token(fake: FakeUpstream, tmp_path: Path) -> None:
    pricing = (
        "pricing:\n"
        "  'claude-sonnet-4*': {input: 10, output: 100}\n"  # overrides the bundled entry
        "  'qwen-*': {input: 1, output: 2}\n"  # a local model, priced
    )
    environ = {"GLIDER_HOME": str(tmp_path / "home"), "GLIDER_TOKEN": "tok-usage"}
    with GliderServer(_config(fake, pricing), tmp_path, record=False, environ=environ) as g:
        fake.set_reply(usage=(1000, 100))
        _anthropic(g, "/cloud a")
        _anthropic(g, "/local b")
        url = g.url + "/api/context/usage"
        assert httpx.get(url, timeout=30).status_code == 401
        auth = {"authorization": "Bearer tok-usage"}
        r = httpx.get(url, params={"by": "model", "days": "3"}, headers=auth, timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        bad = httpx.get(url, params={"by": "week"}, headers=auth, timeout=30)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "by"
    rows = {x["key"]: x for x in body["rows"]}
    assert body["days"] == 3 and body["prices"]["configured"] == ["claude-sonnet-4*", "qwen-*"]
    assert rows["claude-sonnet-4-5"]["cloud_cost"] == pytest.approx((1000 * 10 + 100 * 100) / 1e6)
    local_cost = (1000 * 1 + 100 * 2) / 1e6
    assert rows["qwen-local"]["local_cost"] == pytest.approx(local_cost)
    # Saved: the client's request (what the cloud would have read) and the answer, at Sonnet's price.
    client_in = rows["qwen-local"]["avoided_cloud_tokens"] - 100
    assert 0 < client_in < 1000
    assert rows["qwen-local"]["savings"] == pytest.approx((client_in * 10 + 100 * 100) / 1e6 - local_cost)
    assert [d["day"] for d in body["daily"]] and body["daily"][0]["cloud_cost"] == pytest.approx(0.02)


def test_strategy_members_count_once_each(fake: FakeUpstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = _config(fake).replace(
        "  rules:\n",
        "  rules:\n    - {name: together, priority: 97, trigger: {type: explicit, commands: ['/ens']},"
        " action: {target: local, strategy: ensemble}}\n",
    ) + ("orchestration:\n  ensemble: {enabled: true, members: [{backend: origin}, {backend: ollama}]}\n")
    with GliderServer(config, tmp_path, record=False) as g:
        fake.set_reply(usage=(300, 30))
        _anthropic(g, "/ens 2+2")
    evs = _events(home)
    members = [e["data"] for e in evs if e["type"] == "StrategyMember"]
    # The members run at once: their records come in the order they finished.
    assert sorted((m["side"], m["input_tokens"], m["requested_model"]) for m in members) == [
        ("cloud", 300, "claude-sonnet-4-5"),
        ("local", 300, "claude-sonnet-4-5"),
    ]
    assert all("cache_read_tokens" in m for m in members)
    report = json.loads(_glider(home, "context", "usage", "--json").stdout)
    t = report["totals"]
    # Two member calls; the chosen one's outcome event is the same call and is not counted again.
    assert (t["calls"], t["cloud_calls"], t["local_calls"]) == (2, 1, 1)
    assert t["input_tokens"] == 600
