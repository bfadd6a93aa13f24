"""`glider route explain --json` shows, for a local decision, the pack its backend would receive and
what is known (offline: configured, else unknown) of the backend's capabilities."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cli_helpers import invoke_json
from glider_cli.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def test_a_local_message_shows_its_pack_and_unknown_capabilities() -> None:
    d = invoke_json("route", "explain", "--json", "/local say hi")
    assert d["target"] == "local" and d["pack"]["packed"] is True
    assert d["pack"]["messages_kept"] == 1 and d["pack"]["tokens_after"] > d["pack"]["tokens_before"]
    assert d["capabilities"]["context_window"] is None and "not probed" in d["capabilities"]["source"]


def test_claude_code_s_first_turn_packs_small_for_a_backend_without_tools(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "backends:\n"
        "  llama: {type: openai, side: local, base_url: 'http://127.0.0.1:9/v1', context_window: 8192,"
        " tools: false}\n"
        "routing:\n  task_classifier: {enabled: false}\n  rules:\n"
        "    - {name: all_local, priority: 1, trigger: {type: always}, action: {target: local}}\n",
        encoding="utf-8",
    )
    fixture = str(FIXTURES / "claude-code-01-first-turn.json")
    d = invoke_json("route", "explain", "--json", "--request", fixture, "-c", str(cfg))
    pack = d["pack"]
    assert d["target"] == "local" and pack["bytes_before"] > 40_000
    assert pack["tokens_after"] <= 1500 and pack["tools_kept"] == [] and len(pack["tools_dropped"]) >= 10
    output = d["capabilities"].pop("output")
    assert d["capabilities"] == {
        "backend": "llama",
        "model": None,
        "context_window": 8192,
        "tools": False,
        "source": "config",
    }
    # Claude Code's 128,000 is a ceiling: the request gets what the window leaves after the pack (issue 39).
    room = 8192 - pack["tokens_after"] - pack["tokens_after"] // 10
    assert (output["ceiling"], output["given"], output["refused"]) == (128000, room, None)
    assert output["floor"] == 1024
    assert output["note"] == (
        f"max_tokens 128,000 cut to {room:,}: what window 8,192 leaves after the pack "
        f"{pack['tokens_after']:,} tokens (+10% margin)"
    )
    result = CliRunner().invoke(app, ["route", "explain", "--request", fixture, "-c", str(cfg)])
    text = result.stdout
    assert result.exit_code == 0, text
    assert f"output   max_tokens 128,000 cut to {room:,}: what window 8,192" in text, text


def test_a_cloud_decision_has_no_pack() -> None:
    d = invoke_json("route", "explain", "--json", "/cloud say hi")
    assert d["target"] == "cloud" and "pack" not in d and "capabilities" not in d
