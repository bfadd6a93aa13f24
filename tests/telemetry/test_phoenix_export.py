"""A real `glider serve` exports its requests over OTLP/HTTP to a real receiver, Arize Phoenix (SQLite,
on 127.0.0.1), and the spans are read back through Phoenix's own REST API (issue 45):

- a local turn, a cloud turn and a fallback (local refused -> cloud) each make one trace: a root span
  with Glider's attributes and a span per attempt at a backend named and attributed as the GenAI
  conventions say (the fallback's two attempts, the first with `error.type`);
- `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` switches to the newer names;
- nothing of the prompt leaves unless `capture_content: true`, and then redacted;
- with the endpoint down, every request is answered as before and the drops are counted in `/healthz`
  and `glider doctor`.

The backends are the strict fake upstream (an Ollama-shaped local server and an Anthropic-shaped cloud),
`glider serve` a real process started with the standard OTEL_* variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import phoenix_server
from fake_upstream import FakeUpstream, closed_port_url
from serve_process import ServeProcess

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-client-key-never-exported", "anthropic-version": "2023-06-01"}
SECRET = "sk-ant-api03-" + "Z" * 40  # a key-shaped string in a prompt: redacted when content is captured


def _config(tmp_path: Path, fake_url: str, extra: str = "") -> Path:
    path = tmp_path / "glider.yaml"
    path.write_text(
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake_url}', model: qwen-local}}\n"
        f"  down: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local,"
        " fallback: origin}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake_url}'}}\n"
        "routing:\n"
        "  rules:\n"
        "    - {name: small_local, priority: 90, trigger: {type: regex, pattern: 'tiny question'},"
        " action: {target: local, backend: ollama}}\n"
        "    - {name: flaky_local, priority: 90, trigger: {type: regex, pattern: 'flaky question'},"
        " action: {target: local, backend: down}}\n"
        "    - {name: big_cloud, priority: 90, trigger: {type: regex, pattern: 'hard question'},"
        " action: {target: cloud, backend: origin}}\n" + extra,
        encoding="utf-8",
    )
    return path


def _env(endpoint: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_SERVICE_NAME="glider-test",
        OTEL_RESOURCE_ATTRIBUTES="team=platform,person=ana,project=checkout",
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_EXPORTER_OTLP_TIMEOUT="2",
    )
    env.update(more)
    return env


def _ask(url: str, text: str) -> httpx.Response:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    return httpx.post(url + "/v1/messages", json=body, headers=HEADERS, timeout=60)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[phoenix_server.PhoenixServer]:
    exe, why = phoenix_server.find()
    if exe is None:
        pytest.skip(why)
    with phoenix_server.PhoenixServer(exe, tmp_path_factory.mktemp("phoenix")) as px:
        yield px


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return dict(span.get("attributes") or {})


def _trace(spans: list[dict[str, Any]], rule: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The root span whose `glider.rule` is `rule`, and its children in start order."""
    [root] = [s for s in spans if s.get("parent_id") is None and _attrs(s).get("glider.rule") == rule]
    trace_id = root["context"]["trace_id"]
    kids = [s for s in spans if s["context"]["trace_id"] == trace_id and s.get("parent_id")]
    return root, sorted(kids, key=lambda s: s["start_time"])


def test_a_local_a_cloud_and_a_fallback_turn_reach_phoenix_as_traces(
    phoenix: phoenix_server.PhoenixServer, fake: FakeUpstream, tmp_path: Path
) -> None:
    cfg = _config(tmp_path, fake.url)
    project = "glider-three-turns"
    env = _env(
        phoenix.url, OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project},team=platform,person=ana"
    )
    with ServeProcess("--config", str(cfg), env=env) as served:
        assert served.health["telemetry"]["enabled"] is True
        local = _ask(served.url, f"a tiny question, my key is {SECRET}")
        cloud = _ask(served.url, "a hard question")
        fallback = _ask(served.url, "a flaky question")
        for r in (local, cloud, fallback):
            assert r.status_code == 200, r.text
        assert "fallback-from=down" in fallback.headers["x-glider-route"]
        spans = phoenix.wait_for_spans(5, project=project)
        health = httpx.get(served.url + "/healthz", timeout=10).json()["telemetry"]
    # One span for each turn served by its first backend; the fallback: its operation and two attempts.
    assert len(spans) == 5, [s["name"] for s in spans]
    assert health["exported"] >= 5 and health["dropped"] == 0, health

    span, kids = _trace(spans, "small_local")
    a = _attrs(span)
    assert kids == [] and span["name"] == "chat qwen-local"
    assert span["span_kind"] == "LLM"  # Phoenix reads the GenAI attributes: an LLM call to it
    assert a["glider.side"] == "local" and a["glider.decision.source"] == "rule"
    assert a["glider.client"] == "anthropic"
    assert a["glider.savings.estimated_usd"] > 0  # what claude-sonnet-4-5 would have cost
    assert a["glider.turn_id"] and a["glider.requested_model"] == "claude-sonnet-4-5"
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.system"] == "ollama"
    assert a["gen_ai.request.model"] == "qwen-local" and a["gen_ai.response.model"] == "qwen-local"
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    assert a["gen_ai.response.finish_reasons"] == ["stop"] and a["gen_ai.request.max_tokens"] == 64
    assert a["server.address"] == "127.0.0.1" and a["server.port"] == int(fake.url.rsplit(":", 1)[1])
    assert "error.type" not in a and "gen_ai.provider.name" not in a

    span, kids = _trace(spans, "big_cloud")
    a = _attrs(span)
    assert kids == [] and span["name"] == "chat claude-sonnet-4-5" and a["gen_ai.system"] == "anthropic"
    assert a["glider.side"] == "cloud" and "glider.savings.estimated_usd" not in a
    assert a["glider.cost.estimated_usd"] > 0

    root, (first, second) = _trace(spans, "flaky_local")
    r = _attrs(root)
    assert root["name"] == "chat claude-sonnet-4-5"  # the client's model: the logical operation
    assert r["glider.fallback_from"] == "down" and r["glider.side"] == "cloud"
    assert "gen_ai.usage.output_tokens" not in r  # the tokens are the attempt's, counted once
    assert _attrs(first)["error.type"] == "unreachable" and _attrs(first)["glider.backend"] == "down"
    assert first["status_code"] == "ERROR" and "refused" in first["status_message"]
    assert second["status_code"] != "ERROR" and _attrs(second)["gen_ai.usage.output_tokens"] > 0
    assert _attrs(second)["glider.backend"] == "origin" and "error.type" not in _attrs(second)
    assert first["end_time"] <= second["start_time"]
    assert root["start_time"] <= first["start_time"] and second["end_time"] <= root["end_time"]

    everything = repr(spans)
    assert "tiny question" not in everything and SECRET not in everything  # no content by default
    assert "sk-client-key-never-exported" not in everything  # never a header value


def test_newer_conventions_content_and_a_regret_span(
    phoenix: phoenix_server.PhoenixServer, fake: FakeUpstream, tmp_path: Path
) -> None:
    cfg = _config(tmp_path, fake.url, "telemetry: {capture_content: true}\n")
    project = "glider-latest"
    env = _env(
        phoenix.url,
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}",
        OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental",
    )
    with ServeProcess("--config", str(cfg), env=env) as served:
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": f"a tiny question, my key is {SECRET}"}],
        }
        session = {**HEADERS, "x-claude-code-session-id": "s-regret"}
        with httpx.stream("POST", served.url + "/v1/messages", json=body, headers=session, timeout=60) as r:
            assert r.status_code == 200
            r.read()
        # The person asks the same again with /cloud: the local turn's regret, recorded on this request.
        again = {
            **body,
            "stream": False,
            "messages": [{"role": "user", "content": "/cloud " + str(body["messages"][0]["content"])}],
        }
        assert (
            httpx.post(served.url + "/v1/messages", json=again, headers=session, timeout=60).status_code
            == 200
        )
        spans = phoenix.wait_for_spans(3, project=project)
    span, kids = _trace(spans, "small_local")
    [regret] = kids
    assert regret["name"] == "glider.regret"
    assert regret["parent_id"] == span["context"]["span_id"]  # in the regretted turn's trace
    assert _attrs(regret)["glider.regret.kind"] == "repeat_cloud"
    assert _attrs(regret)["glider.rule"] == "small_local"
    assert [e["name"] for e in regret.get("events") or []] == ["glider.regret"]
    a = _attrs(span)
    assert a["gen_ai.provider.name"] == "ollama" and "gen_ai.system" not in a
    assert a["gen_ai.response.time_to_first_chunk"] >= 0 and a["glider.time_to_first_chunk"] >= 0
    captured = a["gen_ai.input.messages"]
    assert "tiny question" in captured and SECRET not in captured  # redacted as the store redacts


def test_grpc_where_the_user_asks(
    phoenix: phoenix_server.PhoenixServer, fake: FakeUpstream, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc", reason="the telemetry-grpc extra")
    cfg = _config(tmp_path, fake.url, "telemetry: {protocol: grpc}\n")
    project = "glider-grpc"
    env = _env(
        f"http://127.0.0.1:{phoenix.grpc_port}",
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}",
    )
    with ServeProcess("--config", str(cfg), env=env) as served:
        assert served.health["telemetry"]["protocol"] == "grpc"
        assert _ask(served.url, "a hard question").status_code == 200
        spans = phoenix.wait_for_spans(1, project=project)
    span, _ = _trace(spans, "big_cloud")
    assert _attrs(span)["gen_ai.usage.output_tokens"] > 0 and _attrs(span)["glider.side"] == "cloud"


def test_a_collector_that_is_down_costs_only_the_drops(fake: FakeUpstream, tmp_path: Path) -> None:
    cfg = _config(tmp_path, fake.url)
    env = _env(closed_port_url(), OTEL_BSP_SCHEDULE_DELAY="50", OTEL_EXPORTER_OTLP_TIMEOUT="1")
    with ServeProcess("--config", str(cfg), env=env) as served:
        started = time.monotonic()
        answers = [_ask(served.url, "a tiny question") for _ in range(5)]
        took = time.monotonic() - started
        assert [r.status_code for r in answers] == [200] * 5
        assert took < 20, took  # nothing waits on the collector
        deadline = time.monotonic() + 30
        while True:
            tel = httpx.get(served.url + "/healthz", timeout=10).json()["telemetry"]
            if tel["dropped"] >= 5 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        # One span a request, each dropped (counted) when its export failed; none exported.
        assert tel["dropped"] == tel["dropped_export_failed"] == 5 and tel["exported"] == 0, tel
        assert tel["failed_exports"] >= 1 and tel["last_error"]
        doctor = subprocess.run(
            [sys.executable, "-m", "glider_cli", "doctor", "--config", str(cfg), "--json"],
            env={**env, "GLIDER_HOME": str(tmp_path / "doctor-home")},
            capture_output=True,
            text=True,
            timeout=120,
        )
    stopped = served.returncode
    assert stopped == 0, served.err
    import json

    report = json.loads(doctor.stdout)["telemetry"]
    assert report["enabled"] is True and report["answers"] is False and report["why"]
    assert report["served"] is None or report["served"]["dropped"] >= 5


def test_traces_exporter_none_builds_no_span(fake: FakeUpstream, tmp_path: Path) -> None:
    """OTEL_TRACES_EXPORTER=none (and OTEL_METRICS_EXPORTER=none): export on, nothing built or sent —
    not even attempted against a collector that is down."""
    cfg = _config(tmp_path, fake.url)
    env = _env(closed_port_url(), OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none")
    with ServeProcess("--config", str(cfg), env=env) as served:
        assert [_ask(served.url, "a tiny question").status_code for _ in range(3)] == [200] * 3
        time.sleep(1.0)  # past OTEL_BSP_SCHEDULE_DELAY: a span would have been exported (and dropped)
        tel = httpx.get(served.url + "/healthz", timeout=10).json()["telemetry"]
    assert tel["enabled"] is True and (tel["traces"], tel["metrics"]) == (False, False)
    assert (tel["exported"], tel["dropped"], tel["queued"], tel["failed_exports"]) == (0, 0, 0, 0), tel
