"""`glider doctor`: each backend probed over real HTTP on 127.0.0.1; exit 1 when a routed backend is
unusable."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fake_upstream import FakeUpstream, closed_port_url
from glider_cli.cli import app


def _config(tmp_path: Path, local: str) -> str:
    path = tmp_path / "doctor.yaml"
    path.write_text(
        f"""
backends:
  local1:
{local}
  cloud1: {{type: anthropic, api_key_env: GLIDER_TEST_DOCTOR_KEY}}
routing:
  task_classifier: {{enabled: false}}
  rules:
    - name: small_local
      priority: 5
      trigger: {{type: context_size, operator: "<=", value: 2000}}
      action: {{target: local}}
    - name: default
      priority: 0
      trigger: {{type: always}}
      action: {{target: cloud}}
""",
        encoding="utf-8",
    )
    return str(path)


def _doctor(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, ["doctor", *args, "--json"], env=env)
    return result.exit_code, json.loads(result.stdout)


def test_a_reachable_openai_compatible_server_its_models_and_the_configured_window(
    tmp_path: Path, fake: FakeUpstream
) -> None:
    local = (
        f"    {{type: openai, side: local, base_url: '{fake.url}/v1', model: fake-model,"
        " context_window: 8192}"
    )
    code, report = _doctor(
        "-c", _config(tmp_path, local), env={"GLIDER_TEST_DOCTOR_KEY": "sk-doctor-secret-123"}
    )
    assert code == 0, report
    b = {x["name"]: x for x in report["backends"]}
    assert b["local1"]["reachable"] is True and b["local1"]["usable"] is True
    assert b["local1"]["models"] == ["fake-model", "fake-model-2"]
    assert b["local1"]["context_window"] == 8192 and b["local1"]["source"] == "probe+config"
    assert b["cloud1"]["usable"] is True and "sk-doctor-secret-123" not in json.dumps(report)
    rules = {r["rule"]: r for r in report["rules"]}
    assert rules["small_local"] == {
        "rule": "small_local",
        "priority": 5,
        "target": "local",
        "backend": "local1",
        "model": "fake-model",
    }
    assert rules["default"]["model"] == "(the client's)"


def test_a_model_the_server_does_not_serve_is_unusable(tmp_path: Path, fake: FakeUpstream) -> None:
    local = f"    {{type: ollama, base_url: '{fake.url}', model: qwen2.5-coder:14b}}"
    code, report = _doctor(
        "-c", _config(tmp_path, local), env={"GLIDER_TEST_DOCTOR_KEY": "sk-doctor-secret-123"}
    )
    assert code == 1
    local1 = next(x for x in report["backends"] if x["name"] == "local1")
    assert local1["usable"] is False and "qwen2.5-coder:14b" in local1["problem"]


def test_a_refused_backend_and_a_missing_key_are_named_and_exit_1(tmp_path: Path) -> None:
    local = f"    {{type: ollama, base_url: '{closed_port_url()}', model: m}}"
    code, report = _doctor("-c", _config(tmp_path, local), env={})
    assert code == 1
    b = {x["name"]: x for x in report["backends"]}
    assert b["local1"]["reachable"] is False and b["local1"]["problem"] == "connection refused"
    assert b["cloud1"]["problem"] == "$GLIDER_TEST_DOCTOR_KEY is not set"


def test_the_table_names_each_backend_and_rule(tmp_path: Path) -> None:
    local = f"    {{type: ollama, base_url: '{closed_port_url()}', model: m}}"
    result = CliRunner().invoke(app, ["doctor", "-c", _config(tmp_path, local)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert (
        "local1" in result.stdout and "small_local" in result.stdout and "connection refused" in result.stdout
    )
