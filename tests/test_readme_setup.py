"""The README gives a new user exactly two set-up commands (issue 39, point 8h): one installs what
running needs and runs `glider serve` on the bundled default profile — not the `dev` extra (pytest, mypy,
Playwright: a 522 MB venv) — and one adds what the tests need and runs them; `.ci/run` runs that very
test command."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Set up\n") : text.index("\n## ", text.index("## Set up\n") + 1)]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_two_commands_one_to_run_one_to_test() -> None:
    run, test = _setup_commands()
    assert (
        run
        == "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/glider serve --profile default"
    )
    assert test == "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/python -m pytest"


def test_the_run_command_installs_no_test_tools() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert {"starlette", "uvicorn", "aiohttp"} <= names  # what `glider serve` runs on
    assert not names & {"pytest", "mypy", "playwright", "ruff", "hypothesis"}
    dev = " ".join(project["optional-dependencies"]["dev"])
    assert all(tool in dev for tool in ("pytest", "mypy", "playwright"))


def test_ci_runs_the_readmes_test_command() -> None:
    _, test = _setup_commands()
    assert test in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
