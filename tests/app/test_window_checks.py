"""`glider lint` and `glider doctor` agree with the capability gate of `glider serve` (issue 39, point 5):
the README's llama.cpp example (window 8,192, no `max_tokens`) passes both, as the gate now takes Claude
Code's requests; a window that cannot hold the least output a local reply gets (1,024 tokens) is
reported by both, as the gate refuses that backend every request that asks for more."""

from __future__ import annotations

from pathlib import Path

from test_doctor import _config, _doctor

from cli_helpers import invoke_json
from fake_upstream import FakeUpstream


def _window(tmp_path: Path, url: str, window: int) -> str:
    backend = f"type: openai, side: local, base_url: '{url}/v1', model: fake-model, context_window: {window}"
    local = f"    {{{backend}}}"
    return _config(tmp_path, local)


def test_the_readme_window_passes_and_a_window_under_the_floor_is_reported(
    tmp_path: Path, fake: FakeUpstream
) -> None:
    env = {"GLIDER_TEST_DOCTOR_KEY": "sk-x", "GLIDER_HOME": str(tmp_path / "home")}
    fine = _window(tmp_path, fake.url, 8192)
    said = invoke_json("lint", "--json", "-c", fine)["warnings"]
    assert not [w for w in said if "context_window" in str(w)], said
    code, report = _doctor("-c", fine, env=env)
    assert code == 0 and {b["name"]: b["usable"] for b in report["backends"]}["local1"] is True, report
    small = _window(tmp_path, fake.url, 1024)
    warnings = invoke_json("lint", "--json", "-c", small)["warnings"]
    found = [w for w in warnings if w["key"] == "backends.local1.context_window"]
    assert found and "1,024 output tokens the gate gives a local reply at least" in found[0]["message"]
    code, report = _doctor("-c", small, env=env)
    local1 = {b["name"]: b for b in report["backends"]}["local1"]
    assert code == 1 and local1["usable"] is False
    assert "window 1,024 leaves no room for a request beside the 1,024 output tokens" in local1["problem"]
