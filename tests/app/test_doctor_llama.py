"""`glider doctor` and `glider lint` against the real llama-cpp-python server (issue 24 §8).

The server lists one id (the .gguf path) but answers every model name with the model it loaded, so a
backend whose `model` is `smollm2` is usable: the probe learns that from the server's own identity, not
from an assumption. The strict fakes (an Ollama that has not pulled the model, an OpenAI-compatible
server that serves only its list) must still fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fake_upstream import FakeUpstream
from glider_cli.cli import app
from llama_server import LlamaServer

pytestmark = [pytest.mark.live]


def _config(tmp_path: Path, local: str) -> str:
    path = tmp_path / "doctor.yaml"
    path.write_text(
        "backends:\n"
        f"  llama: {local}\n"
        "  origin: {type: origin, side: cloud}\n"
        "routing:\n  task_classifier: {enabled: false}\n  rules:\n"
        "    - {name: small_local, priority: 5, trigger: {type: context_size, operator: '<=', value: 2000},"
        " action: {target: local}}\n"
        "    - {name: default, priority: 0, trigger: {type: always}, action: {target: cloud}}\n",
        encoding="utf-8",
    )
    return str(path)


def _run(*args: str, home: Path) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, [*args, "--json"], env={"GLIDER_HOME": str(home)})
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.slow
def test_doctor_and_lint_accept_any_model_name_on_llama_cpp_python(
    llama: LlamaServer, tmp_path: Path
) -> None:
    listed = [m["id"] for m in httpx.get(llama.url + "/v1/models", timeout=10).json()["data"]]
    assert listed and "smollm2" not in listed  # the server lists its .gguf path, not the name we use
    cfg = _config(tmp_path, f"{{type: openai, side: local, base_url: '{llama.url}/v1', model: smollm2}}")
    home = tmp_path / "home"
    code, report = _run("doctor", "-c", cfg, home=home)
    assert code == 0, report
    b = next(x for x in report["backends"] if x["name"] == "llama")
    assert b["usable"] is True and b["any_model"] is True and b["models"] == listed
    # lint reads the probe doctor kept: no "did not serve model 'smollm2'" warning either.
    code, lint = _run("lint", "-c", cfg, home=home)
    assert code == 0 and lint["warnings"] == [], lint
    # And the name really is answered.
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert httpx.post(llama.url + "/v1/chat/completions", json=body, timeout=120).status_code == 200


@pytest.mark.fake_serves(ollama_models=["llama3:8b"], models=["served-model"])
@pytest.mark.parametrize(
    "local",
    [
        "{type: ollama, side: local, base_url: 'URL', model: 'qwen2.5-coder:14b'}",
        "{type: openai, side: local, base_url: 'URL/v1', model: smollm2}",
    ],
)
def test_a_strict_server_still_fails_a_model_it_does_not_serve(
    fake: FakeUpstream, tmp_path: Path, local: str
) -> None:
    cfg = _config(tmp_path, local.replace("URL", fake.url))
    code, report = _run("doctor", "-c", cfg, home=tmp_path / "home")
    assert code == 1, report
    b = next(x for x in report["backends"] if x["name"] == "llama")
    assert b["usable"] is False and b["any_model"] is False
    assert "qwen2.5-coder:14b" in b["problem"] or "smollm2" in b["problem"]
