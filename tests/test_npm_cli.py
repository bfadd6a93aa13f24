"""The agent CLIs' npm install says what it installs and how big it is before it starts, and how it
ended (issue 39, point 8f: the test command installed 758 MB of npm CLIs without a word)."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import npm_cli


@pytest.fixture
def told() -> Iterator[list[str]]:
    before = list(npm_cli._told)
    lines: list[str] = []
    npm_cli.tell_to(lines.append)
    yield lines
    npm_cli._told[:] = before


def _fake_npm(bin_dir: Path, creates: bool) -> None:
    """An `npm` that, for `install --prefix P PKG`, makes P/node_modules/.bin/glider-fake-agent (or not)."""
    bin_dir.mkdir()
    script = bin_dir / "npm"
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""\
            import os, sys
            prefix = sys.argv[sys.argv.index("--prefix") + 1]
            if {creates!r}:
                path = os.path.join(prefix, "node_modules", ".bin", "glider-fake-agent")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write("#!/bin/sh\\n")
                os.chmod(path, 0o755)
            else:
                sys.stderr.write("npm ERR! 404 Not Found\\n")
                sys.exit(1)
            """
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("creates", [True, False])
def test_an_install_says_what_and_how_big_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: list[str], creates: bool
) -> None:
    _fake_npm(tmp_path / "bin", creates)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    prefix = tmp_path / "node"
    found, why = npm_cli.find_or_install("glider-fake-agent", "@openai/codex", "Codex", prefix)
    assert told[0] == (
        f"installing Codex (@openai/codex, ~420 MB) with npm into {prefix} for the tests that drive it; "
        "once, it can take a few minutes"
    )
    if creates:
        assert found == str(prefix / "node_modules" / ".bin" / "glider-fake-agent") and why == ""
        assert told[1].startswith("installed Codex in ") and told[1].endswith(" s")
    else:
        assert found is None and "npm ERR! 404" in why
        assert told[1].startswith("npm could not install @openai/codex (") and "skip" in told[1]
    assert len(told) == 2


def test_nothing_is_said_when_the_cli_is_there(tmp_path: Path, told: list[str]) -> None:
    local = tmp_path / "node" / "node_modules" / ".bin" / "glider-fake-agent"
    local.parent.mkdir(parents=True)
    local.write_text("#!/bin/sh\n")
    local.chmod(0o755)
    assert npm_cli.find_or_install("glider-fake-agent", "x", "X", tmp_path / "node") == (str(local), "")
    assert told == []
