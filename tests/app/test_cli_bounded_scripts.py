"""`glider lint` and `glider route explain` on scripts that bomb, panic or never end, as a user runs
them (the real CLI in a subprocess): one line of error and exit 1 for a script that cannot load, a
no-match with its reason for one that fails when it runs; never a traceback, a Rust backtrace or a hang."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """extends: default
routing:
  rules:
    - name: bomb
      priority: 60
      trigger: {type: script, file: bomb.star}
      action: {target: local}
"""
EVALUATE = "\ndef evaluate(request):\n    return None\n"
# Top levels that cannot load: a memory bomb, a panic, an endless comprehension, an endless loop.
TOP_LEVEL = {
    "list-bomb": ("x = [0] * 2147483647" + EVALUATE, "out of memory"),
    "range-panic": ("x = list(range(2000000000))" + EVALUATE, "crashed the Starlark interpreter"),
    "endless-comprehension": ("x = [i for i in range(2000000000)]" + EVALUATE, "out of memory"),
    "endless-loop": (
        "def f():\n    for i in range(2000000000):\n        pass\n\nx = f()" + EVALUATE,
        "loading took longer than",
    ),
}
N = "len(request.messages)"
IN_EVALUATE = {
    "list-bomb": (f"def evaluate(request):\n    return [0] * (2147483646 + {N})\n", "out of memory"),
    "string-bomb": (
        f'def evaluate(request):\n    x = "x" * (2000000000 + {N})\n    return {{"matched": True}}\n',
        "out of memory",
    ),
    "range-panic": (
        f"def evaluate(request):\n    return list(range(2000000000 + {N}))\n",
        "crashed the Starlark interpreter",
    ),
    # It reaches the memory cap at about its 50 ms deadline: either limit may stop it (both are said
    # as they happened); it is stopped, counted as no match, and the rules after it run.
    "endless-comprehension": (
        "def evaluate(request):\n    return [i for i in range(2000000000)]\n",
        ("stopped after 50 ms", "crashed the Starlark interpreter (out of memory)"),
    ),
}


def glider(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "glider_cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def setup(tmp_path: Path, script: str) -> Path:
    (tmp_path / "bomb.star").write_text(script)
    cfg = tmp_path / "glider.yaml"
    cfg.write_text(CONFIG)
    return cfg


def assert_clean(proc: subprocess.CompletedProcess[str]) -> None:
    for text in (proc.stdout, proc.stderr):
        assert "Traceback" not in text and "panicked" not in text and "stack backtrace" not in text, text


@pytest.mark.parametrize("case", sorted(TOP_LEVEL))
def test_lint_reports_a_script_that_cannot_load_in_one_line(tmp_path: Path, case: str) -> None:
    source, fragment = TOP_LEVEL[case]
    cfg = setup(tmp_path, source)
    proc = glider(tmp_path, "lint", "--config", str(cfg))
    assert proc.returncode == 1, proc.stderr
    assert_clean(proc)
    findings = [line for line in proc.stderr.splitlines() if "bomb.star" in line]
    assert len(findings) == 1 and fragment in findings[0], proc.stderr
    as_json = glider(tmp_path, "lint", "--config", str(cfg), "--json")
    assert as_json.returncode == 1
    (error,) = json.loads(as_json.stdout)["errors"]
    assert error["rule"] == "bomb" and fragment in error["message"]


@pytest.mark.parametrize("case", sorted(TOP_LEVEL))
def test_explain_stops_on_a_script_that_cannot_load_with_one_line(tmp_path: Path, case: str) -> None:
    source, fragment = TOP_LEVEL[case]
    cfg = setup(tmp_path, source)
    proc = glider(tmp_path, "route", "explain", "tell me about caching", "--config", str(cfg))
    assert proc.returncode == 1
    assert_clean(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], proc.stderr
    assert "rule 'bomb'" in lines[0] and "bomb.star" in lines[0]


@pytest.mark.parametrize("case", sorted(IN_EVALUATE))
def test_explain_counts_a_script_that_fails_when_it_runs_as_no_match(tmp_path: Path, case: str) -> None:
    source, fragment = IN_EVALUATE[case]
    fragments = (fragment,) if isinstance(fragment, str) else fragment
    cfg = setup(tmp_path, source)
    assert glider(tmp_path, "lint", "--config", str(cfg)).returncode == 0
    proc = glider(tmp_path, "route", "explain", "please refactor the cache", "--config", str(cfg), "--json")
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    decision = json.loads(proc.stdout)
    (bomb,) = [t for t in decision["trace"] if t["rule"] == "bomb"]
    assert not bomb["matched"] and any(f in bomb["reason"] for f in fragments), bomb["reason"]
    assert "counted as no match" in bomb["reason"]
    # The script rules after it still run, in a restarted worker when the bomb took the worker down;
    # a worker still starting when the deadline comes is said so (a loaded machine starts slowly).
    (refactor,) = [t for t in decision["trace"] if t["rule"] == "refactor_local"]
    assert decision["rule"] == "refactor_local" or "the script worker is restarting" in refactor["reason"]
