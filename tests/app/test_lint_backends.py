"""A backend no request can reach is a lint warning naming the key that fixes it (issue 24 §7), and that
key, `routing.local_backend`, really sends the local rules to the new backend through the real app.

The case a new user hit: `extends: default` plus a `llama` backend. Every local rule of the profile names
no backend, so they use the first local one — the profile's `ollama` — and `llama` is never asked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from fake_upstream import FakeUpstream
from glider_cli.app.lint import lint

LLAMA = "  llama: {type: openai, side: local, base_url: 'http://127.0.0.1:8080/v1', model: smollm2}\n"
README_FIX = "routing:\n  local_backend: llama\n"


def _warnings(tmp_path: Path, text: str) -> list[dict[str, object]]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    report = lint(config_path=str(path), known={})
    assert report.ok, report.to_dict()
    return list(report.to_dict()["warnings"])


def test_a_local_backend_no_rule_reaches_is_a_warning_naming_routing_local_backend(tmp_path: Path) -> None:
    (w,) = _warnings(tmp_path, "extends: default\nbackends:\n" + LLAMA)
    assert w["key"] == "routing.local_backend" and w["file"] == str(tmp_path / "c.yaml")
    message = str(w["message"])
    assert "'llama'" in message and "use 'ollama'" in message
    assert "`routing.local_backend: llama`" in message


def test_the_readme_fix_silences_it_and_the_profiles_ollama_is_not_reported(tmp_path: Path) -> None:
    assert _warnings(tmp_path, "extends: default\nbackends:\n" + LLAMA + README_FIX) == []


def test_the_readmes_example_lints_clean_and_warns_without_its_routing_lines(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**A local server of your own under `extends: default`.**") :]
    example = section[section.index("```yaml\n") + 8 : section.index("```\n", 10)]
    assert "local_backend: llama" in example
    assert _warnings(tmp_path, example) == []
    without = example[: example.index("routing:")]
    assert [w["key"] for w in _warnings(tmp_path, without)] == ["routing.local_backend"]


@pytest.mark.parametrize(
    "routing",
    [
        # named by a rule's action
        "routing:\n  rules:\n    - {name: sql, priority: 60, trigger: {type: regex, pattern: select},"
        " action: {target: local, backend: llama}}\n",
        # a rule's fallback
        "routing:\n  rules:\n    - {name: explicit_local, fallback: llama}\n",
        # a strategy's member
        "orchestration:\n  fan_out: {members: [{backend: llama}, {backend: ollama}]}\n",
    ],
)
def test_a_backend_a_rule_fallback_or_strategy_names_is_reached(tmp_path: Path, routing: str) -> None:
    found = _warnings(tmp_path, "extends: default\nbackends:\n" + LLAMA + routing)
    assert [w for w in found if str(w["key"]).startswith("routing.")] == []


def test_a_backend_reached_only_through_a_backends_fallback_is_reached(tmp_path: Path) -> None:
    text = "extends: default\nbackends:\n  ollama: {fallback: llama}\n" + LLAMA.replace(
        "smollm2}", "smollm2, fallback: none}"
    )
    assert _warnings(tmp_path, text) == []


def test_a_cloud_backend_nothing_reaches_names_routing_cloud_backend(tmp_path: Path) -> None:
    claude = "  claude: {type: anthropic, side: cloud, api_key_env: ANTHROPIC_API_KEY}\n"
    text = "extends: default\nbackends:\n" + claude
    (w,) = _warnings(tmp_path, text)
    assert w["key"] == "routing.cloud_backend" and "use 'origin'" in str(w["message"])


def test_glider_lint_prints_the_warning_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("extends: default\nbackends:\n" + LLAMA)
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "lint", "--config", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: routing.local_backend: backend 'llama' (local) is never used" in proc.stderr
    assert "(0 errors, 1 warning)" in proc.stdout


@pytest.mark.live
def test_routing_local_backend_sends_the_local_rules_to_the_new_backend(tmp_path: Path) -> None:
    from server.glider_harness import GliderServer

    with (
        FakeUpstream(models=["smollm2"]) as llama,
        FakeUpstream(ollama_models=["qwen2.5-coder:14b"]) as ollama,
    ):
        cfg = (
            "extends: default\nbackends:\n"
            f"  ollama: {{base_url: '{ollama.url}'}}\n"
            f"  llama: {{type: openai, side: local, base_url: '{llama.url}/v1', model: smollm2}}\n"
            "  origin: {base_url: 'http://127.0.0.1:9'}\n" + README_FIX
        )
        with GliderServer(cfg, tmp_path) as g:
            msgs = [{"role": "user", "content": "say hi /local"}]
            body = {"model": "claude-x", "max_tokens": 32, "messages": msgs}
            headers = {"anthropic-version": "2023-06-01"}
            r = httpx.post(g.url + "/v1/messages", json=body, headers=headers, timeout=30)
            assert r.status_code == 200, r.text
            assert r.headers["x-glider-route"].startswith("local; rule=explicit_local; backend=llama")
        assert [(q.path, q.body["model"]) for q in llama.requests if q.method == "POST"] == [
            ("/v1/chat/completions", "smollm2")
        ]
        assert [q for q in ollama.requests if q.path == "/api/chat"] == []
