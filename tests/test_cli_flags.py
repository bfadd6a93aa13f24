"""The flags every command spells the same way (`-c/--config`, `-p/--profile`, `--json`, `--home`), the
home passed down from the root without touching `os.environ`, and the vendor switches."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_helpers import invoke_json
from glider_cli.cli import COMMANDS, app, load_command
from glider_cli.delegate import continuity
from glider_cli.delegate.entry import Entry
from glider_cli.paths import resolve

runner = CliRunner()


def _leaves() -> dict[str, Any]:
    """Every runnable command by its full name ("route explain"), built as `glider` builds it."""
    out: dict[str, Any] = {}
    for name, _module, kind, _help in COMMANDS:
        cmd = load_command(name)
        if kind == "group":
            out.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            out[name] = cmd
    return out


LEAVES = _leaves()


def _opts(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


# Which command takes which of the shared flags. A command that reads a config takes both ways of
# naming one; one that prints a result takes --json; one that touches disk takes --home.
CONFIGURED = {
    "delegate",
    "serve",
    "lint",
    "doctor",
    "prune",
    "continuity block",
    "route explain",
    "route replay",
    "route suggest",
    "context query",
    "context index-tree",
    "context index-symbols",
    "context turns",
    "context turn",
    "context egress",
    "context usage",
    "context episodes",
    "context recent",
    "context export",
    "mcp",
}
# serve prints no result; export always writes JSONL; mcp speaks MCP (JSON-RPC) on stdout
NO_JSON = {"serve", "context export", "mcp"}


def test_the_table_covers_every_command() -> None:
    assert set(LEAVES) == CONFIGURED | {"paths", "continuity show", "setup"}


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_shared_flags_are_spelled_the_same_everywhere(name: str) -> None:
    opts = _opts(LEAVES[name])
    assert "--home" in opts
    assert ("--json" in opts) == (name not in NO_JSON)
    if name in CONFIGURED:
        assert {"-c", "--config", "-p", "--profile"} <= opts
    else:
        assert not {"-c", "--config", "-p", "--profile"} & opts


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_each_shared_flag_has_one_help_text(name: str) -> None:
    helps = {o: p.help for p in LEAVES[name].params for o in p.opts}
    assert helps["--home"] == "State directory (default: $GLIDER_HOME or ~/.glider)."
    if "--config" in helps:
        assert helps["--config"] == "Config file (default: resolved as usual)."
        assert helps["--profile"].startswith("A bundled profile, e.g. ")


def test_home_from_the_root_or_the_command_and_the_command_s_wins(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert invoke_json("--home", str(a), "paths", "--json")["home"] == str(a)
    assert invoke_json("paths", "--home", str(b), "--json")["home"] == str(b)
    assert invoke_json("--home", str(a), "paths", "--home", str(b), "--json")["home"] == str(b)


def test_the_root_does_not_write_glider_home_into_the_environment(glider_env: Path, tmp_path: Path) -> None:
    before = dict(os.environ)
    other = str(tmp_path / "other")
    assert invoke_json("--home", other, "paths", "--json")["home"] == other
    assert dict(os.environ) == before
    assert os.environ["GLIDER_HOME"] == str(glider_env)
    # The next command, in the same process, is back on $GLIDER_HOME.
    assert invoke_json("paths", "--json")["home"] == str(glider_env)


def test_home_reaches_config_resolution(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.yaml").write_text("extends: default\n")
    report = invoke_json("--home", str(other), "lint", "--json")
    assert report["source"] == str(other / "config.yaml")
    assert invoke_json("lint", "--home", str(other), "--json")["source"] == str(other / "config.yaml")
    assert invoke_json("lint", "--json")["source"] == "<bundled:default>"


def test_home_reaches_the_continuity_record(tmp_path: Path) -> None:
    other = tmp_path / "other"
    ws = tmp_path / "ws"
    ws.mkdir()
    continuity.append(resolve(home=other), ws, Entry(kind="turn", text="only in other", source_cli="codex"))
    shown = invoke_json("--home", str(other), "continuity", "show", "--workspace", str(ws), "--json")
    assert [e["text"] for e in shown["entries"]] == ["only in other"]
    assert invoke_json("continuity", "show", "--workspace", str(ws), "--json")["entries"] == []
    block = invoke_json(
        "continuity", "block", "--home", str(other), "--workspace", str(ws), "--task", "other", "--json"
    )
    assert [i["text"] for i in block["items"]] == ["only in other"]


def test_home_reaches_the_context_store(tmp_path: Path) -> None:
    other = tmp_path / "other"
    from glider_cli.store.eventlog.writer import EventWriter

    with EventWriter(resolve(home=other)) as w:
        w.emit("TurnOpened", {"ask": "in the other home"}, turn_id="t9")
    assert [t["turn_id"] for t in invoke_json("--home", str(other), "context", "turns", "--json")] == ["t9"]
    assert [t["turn_id"] for t in invoke_json("context", "turns", "--home", str(other), "--json")] == ["t9"]
    assert invoke_json("context", "turns", "--json") == []
    kept = invoke_json("prune", "--json", "--home", str(other))["plan"]["keep"]
    assert [Path(k["path"]).parent for k in kept] == [other / "context"]
    assert invoke_json("prune", "--json")["plan"]["keep"] == []


def test_short_config_and_profile_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("extends: pure-local\n")
    assert invoke_json("route", "explain", "hi", "-c", str(cfg), "--json")["target"] == "local"
    assert invoke_json("context", "turns", "-p", "pure-local", "--json") == []
    r = runner.invoke(app, ["prune", "-p", "no-such-profile"])
    assert r.exit_code == 1 and "no bundled profile 'no-such-profile'" in str(r.exception)


def _block(*args: str, ws: Path) -> Any:
    return invoke_json("continuity", "block", "--workspace", str(ws), "--task", "parser", "--json", *args)


def test_continuity_block_names_the_vendor_as_delegate_does(tmp_path: Path) -> None:
    continuity.append(resolve(), tmp_path, Entry(kind="turn", text="the parser", source_cli="codex"))
    assert _block(ws=tmp_path)["vendor"] == "claude"
    for vendor in ("claude", "cursor-agent", "agy", "codex"):
        switched = _block(f"--{vendor}", ws=tmp_path)
        assert switched["vendor"] == vendor
        # The spelling of before (`--vendor NAME`) still works, and means the same.
        assert _block("--vendor", vendor, ws=tmp_path) == switched


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--codex", "--agy"], "choose exactly one of --claude, --cursor-agent, --agy, --codex"),
        (["--vendor", "codex", "--claude"], "choose exactly one of --claude, --cursor-agent, --agy, --codex"),
        (["--vendor", "gpt"], "unknown vendor 'gpt'; one of claude, cursor-agent, agy, codex"),
    ],
)
def test_continuity_block_vendor_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    r = runner.invoke(app, ["continuity", "block", "--workspace", str(tmp_path), "--task", "x", *args])
    assert r.exit_code == 2
    assert message in r.output


def test_the_old_vendor_spelling_is_hidden_from_help() -> None:
    r = runner.invoke(app, ["continuity", "block", "--help"])
    assert r.exit_code == 0
    assert "--codex" in r.output and "--cursor-agent" in r.output
    assert "--vendor" not in r.output


def test_delegate_help_lists_the_same_switches() -> None:
    opts = _opts(LEAVES["delegate"])
    assert {"--claude", "--cursor-agent", "--agy", "--codex"} <= opts
    assert {"--claude", "--cursor-agent", "--agy", "--codex"} <= _opts(LEAVES["continuity block"])


@pytest.mark.live
def test_serve_takes_its_config_from_the_home_it_is_given(tmp_path: Path) -> None:
    from serve_process import ServeProcess

    home = tmp_path / "served-home"
    home.mkdir()
    (home / "config.yaml").write_text("extends: default\n")
    with ServeProcess(before=["--home", str(home)]) as served:
        assert served.health["config"] == str(home / "config.yaml")
    assert served.returncode == 0
