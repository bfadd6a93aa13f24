"""`glider lint` warns when a local rule sends its backend a model that backend did not serve when it
was last probed (the probe cache `glider serve` and `glider doctor` keep under GLIDER_HOME/run)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_upstream import FakeUpstream
from glider_cli.app.lint import lint
from glider_cli.backends import probe_cache
from glider_cli.backends.probe import Capability
from glider_cli.backends.probe_cache import Known

pytestmark = pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen2.5-coder:7b"])

URL = "http://127.0.0.1:11434"


def _config(
    tmp_path: Path, rules: str, base_url: str = URL, backend_model: str = "qwen2.5-coder:14b"
) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{base_url}', model: {backend_model}}}\n"
        "  cloud: {type: anthropic, side: cloud}\n"
        "routing:\n  task_classifier: {enabled: false}\n  rules:\n"
        f"{rules}"
        "    - {name: default, priority: 0, trigger: {type: always}, action: {target: cloud}}\n",
        encoding="utf-8",
    )
    return path


LOCAL_NAMED = (
    "    - {name: small, priority: 5, trigger: {type: context_size, operator: '<=', value: 2000},"
    " action: {target: local, model: 'llama3:8b'}}\n"
)
LOCAL_OWN = (
    "    - {name: small, priority: 5, trigger: {type: context_size, operator: '<=', value: 2000},"
    " action: {target: local}}\n"
)


def _served(*models: str, base_url: str = URL) -> dict[str, Known]:
    return {"ollama": Known("ollama", base_url, models, 8192, True, time.time() - 7200)}


def _warnings(path: Path, known: dict[str, Known]) -> list[dict[str, object]]:
    return [w for w in lint(config_path=str(path), known=known).to_dict()["warnings"] if "serve" in str(w)]


def test_a_rule_naming_a_model_the_backend_did_not_serve_is_a_warning(tmp_path: Path) -> None:
    (w,) = _warnings(_config(tmp_path, LOCAL_NAMED), _served("qwen2.5-coder:14b"))
    assert w["rule"] == "small" and w["key"] == "action.model" and w["severity"] == "warning"
    msg = str(w["message"])
    assert "'llama3:8b'" in msg and "qwen2.5-coder:14b" in msg and "ollama pull llama3:8b" in msg
    assert "2 h ago" in msg


def test_the_backends_own_model_is_checked_and_keyed_to_the_backend(tmp_path: Path) -> None:
    (w,) = _warnings(_config(tmp_path, LOCAL_OWN), _served("qwen2.5-coder:7b"))
    assert w["key"] == "backends.ollama.model" and "'qwen2.5-coder:14b'" in str(w["message"])


def test_served_unknown_or_probed_elsewhere_says_nothing(tmp_path: Path) -> None:
    path = _config(tmp_path, LOCAL_NAMED)
    assert _warnings(path, _served("llama3:8b", "qwen2.5-coder:14b")) == []
    assert _warnings(path, {}) == []
    assert _warnings(path, _served("qwen2.5-coder:14b", base_url="http://127.0.0.1:9999")) == []
    # A bare name is an Ollama model's latest tag.
    bare = LOCAL_NAMED.replace("'llama3:8b'", "llama3")
    assert _warnings(_config(tmp_path, bare), _served("llama3:latest", "qwen2.5-coder:14b")) == []


def test_a_local_fallback_backend_is_checked_with_its_own_model(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{URL}', model: qwen2.5-coder:14b}}\n"
        "  spare: {type: ollama, side: local, base_url: 'http://127.0.0.1:11435', model: 'phi4:14b'}\n"
        "  cloud: {type: anthropic, side: cloud}\n"
        "routing:\n  task_classifier: {enabled: false}\n  local_backend: ollama\n  rules:\n"
        "    - {name: small, priority: 5, trigger: {type: context_size, operator: '<=', value: 2000},"
        " action: {target: local, model: 'qwen2.5-coder:14b'}, fallback: spare}\n"
        "    - {name: default, priority: 0, trigger: {type: always}, action: {target: cloud}}\n",
        encoding="utf-8",
    )
    known = {
        **_served("qwen2.5-coder:14b"),
        "spare": Known("spare", "http://127.0.0.1:11435", ("llama3:8b",), None, None, time.time()),
    }
    (w,) = _warnings(path, known)
    assert (
        w["key"] == "fallback"
        and "backend 'spare'" in str(w["message"])
        and "'phi4:14b'" in str(w["message"])
    )


def test_an_error_free_config_stays_ok_with_the_warning(tmp_path: Path) -> None:
    report = lint(config_path=str(_config(tmp_path, LOCAL_NAMED)), known=_served("qwen2.5-coder:14b"))
    assert report.ok and len(report.warnings) == 1


def test_the_cache_keeps_the_last_good_probe_privately(tmp_path: Path) -> None:
    path = tmp_path / "run" / probe_cache.FILENAME
    good = Capability("ollama", True, None, ("a:1", "b:2"), 4096, True, "probe", 100.0)
    other = Capability("vllm", True, None, ("m",), None, None, "probe", 101.0)
    assert probe_cache.save(path, [(URL, good), ("http://127.0.0.1:8000/v1", other)]) == 2
    # A failed probe of one backend leaves its last good record, and the other's.
    down = Capability("ollama", False, "connection refused", source="probe", probed_at=200.0)
    assert probe_cache.save(path, [(URL, down)]) == 0
    known = probe_cache.load(path)
    assert known["ollama"] == Known("ollama", URL, ("a:1", "b:2"), 4096, True, 100.0)
    assert known["vllm"].models == ("m",) and known["vllm"].applies("http://127.0.0.1:8000/v1/")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "text", ["", "{", "[]", '{"v": 2, "backends": {}}', '{"v": 1, "backends": {"x": 3}}']
)
def test_an_unreadable_cache_is_no_knowledge(tmp_path: Path, text: str) -> None:
    path = tmp_path / probe_cache.FILENAME
    path.write_text(text)
    assert probe_cache.load(path) == {}
    assert probe_cache.load(tmp_path / "missing.json") == {}


def _glider(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GLIDER_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "glider_cli", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_doctor_remembers_what_ollama_served_and_lint_warns_from_it(
    tmp_path: Path, fake: FakeUpstream
) -> None:
    home = tmp_path / "home"
    path = _config(tmp_path, LOCAL_OWN, base_url=fake.url)
    assert _glider("lint", "-c", str(path), home=home).stderr.count("did not serve") == 0
    doctor = _glider("doctor", "-c", str(path), "--json", home=home)
    assert doctor.returncode == 1, doctor.stdout  # the backend's model is not pulled
    cached = json.loads((home / "run" / probe_cache.FILENAME).read_text())
    assert cached["backends"]["ollama"]["models"] == ["qwen2.5-coder:7b"]
    out = _glider("lint", "-c", str(path), home=home)
    assert out.returncode == 0, out.stderr
    assert (
        "rule 'small', backends.ollama.model: backend 'ollama' did not serve model 'qwen2.5-coder:14b'"
        in (out.stderr)
    )
    assert "(0 errors, 1 warning)" in out.stdout
