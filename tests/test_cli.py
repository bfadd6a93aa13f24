from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from glider_cli import __version__
from glider_cli.cli import COMMANDS, app, load_command

runner = CliRunner()


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "paths" in result.output


def test_paths_honours_glider_home(glider_env: Path) -> None:
    result = runner.invoke(app, ["paths", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["home"] == str(glider_env)
    assert data["context"] == str(glider_env / "context")


def test_home_option_overrides(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--home", str(tmp_path / "h"), "paths", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output)["home"] == str(tmp_path / "h")


def test_unknown_command_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "no-such-command"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "No such command" in proc.stderr
    assert "Traceback" not in proc.stderr


# The lazy root group: `glider --help` imports no command module, each command is built on lookup.


_COMMAND_MODULES = sorted(f"glider_cli.commands.{module}" for _name, module, _kind, _help in COMMANDS)


def _commands_imported(*args: str) -> list[str]:
    """The command modules (COMMANDS) a fresh interpreter has imported after `glider ARGS`."""
    code = (
        "import json, sys\n"
        "from glider_cli.cli import app\n"
        "try:\n"
        f"    app({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m in {_COMMAND_MODULES!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return imported


def test_root_help_imports_no_command_module() -> None:
    assert _commands_imported("--help") == []


def test_a_command_imports_only_its_own_module() -> None:
    assert _commands_imported("paths", "--json") == ["glider_cli.commands.paths"]
    assert _commands_imported("route", "--help") == ["glider_cli.commands.route"]


def test_every_command_is_reachable_with_its_own_help() -> None:
    for name, _module, kind, _help in COMMANDS:
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert result.output.startswith(f"Usage: glider {name} [OPTIONS]"), result.output
        assert ("Commands:" in result.output) == (kind == "group")


def test_the_table_help_is_each_command_s_own_help() -> None:
    for name, _module, _kind, text in COMMANDS:
        assert load_command(name).help == text, name


def test_root_help_lists_every_command_as_click_would() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    listed = result.output.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == [name for name, *_ in COMMANDS]
    # The listing equals TyperGroup's own, which builds every command to read its help.
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    ctx = typer.Context(group, info_name="glider")
    lazy, eager = ctx.make_formatter(), ctx.make_formatter()
    group.format_commands(ctx, lazy)
    TyperGroup.format_commands(group, ctx, eager)
    assert lazy.getvalue() == eager.getvalue()
    assert "Show where Glider keeps its state" in lazy.getvalue()


def test_unknown_command_suggests_a_close_name() -> None:
    result = runner.invoke(app, ["rout"])
    assert result.exit_code == 2
    assert "Error: No such command 'rout'. Did you mean 'route'?" in result.output
    result = runner.invoke(app, ["route", "explan"])
    assert result.exit_code == 2
    assert "No such command 'explan'. Did you mean 'explain', 'replay'?" in result.output


def test_no_arguments_shows_help_and_exits_2() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 2
    assert "Commands:" in result.output and "context" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"glider {__version__}\n"


def test_main_freezes_what_start_up_loaded() -> None:
    code = (
        "import gc, sys\n"
        "from glider_cli.cli import main\n"
        "sys.argv = ['glider', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.get_freeze_count())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(proc.stdout.splitlines()[-1]) > 1000


def test_no_module_imports_typer_or_click_internals() -> None:
    # Typer 0.26+ carries Click as the private `typer._click`; earlier ones use `click`. Only public
    # names work on every Typer pyproject.toml allows (CI runs `glider` on the lowest one).
    import ast

    src = Path(__file__).resolve().parents[1] / "src" / "glider_cli"
    private: list[str] = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                parts = name.split(".")
                if parts[0] in ("typer", "click") and any(p.startswith("_") for p in parts[1:]):
                    private.append(f"{path.relative_to(src)}: {name}")
    assert private == []
