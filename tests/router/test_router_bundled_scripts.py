"""The bundled profiles' scripts run in Glider's process; only a user's script starts the worker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from glider_cli.config.load import load_config
from glider_cli.config.profiles import profiles_dir
from glider_cli.router import Router
from glider_cli.sandbox.inprocess import InProcessSandbox
from routing_helpers import message

# Decides with a config and prints how many child processes this process has then.
PROBE = """
import os, sys
from pathlib import Path
from glider_cli.config.load import load_config
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router

config = load_config(profile="default") if sys.argv[1] == "default" else load_config(config=sys.argv[1])
body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "please refactor this"}]}
if len(sys.argv) > 2:  # what `glider serve` does first: lint the config (scripts checked)
    from glider_cli.app.lint import lint

    assert not lint(config).errors
d = Router(config).decide(parse_request("anthropic", body))
kids = sum(len(p.read_text().split()) for p in Path("/proc/self/task").glob("*/children"))
print(d.rule, kids)
"""


def probe(*args: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rule, kids = out.stdout.split()
    return rule, int(kids)


def test_the_default_profile_decides_with_its_scripts_without_a_worker_process() -> None:
    rule, kids = probe("default")
    assert rule == "refactor_local"  # the bundled refactor_local.star matched
    assert kids == 0


def test_linting_the_default_profile_starts_no_worker_process() -> None:
    # `glider serve` lints its config before it listens: the bundled scripts are checked in-process.
    assert probe("default", "lint") == ("refactor_local", 0)


def test_a_user_script_still_runs_in_the_supervised_worker(tmp_path: Path) -> None:
    # The very same text, but the user's file: it goes to the worker like any user script.
    src = (profiles_dir() / "scripts" / "refactor_local.star").read_text()
    (tmp_path / "mine.star").write_text(src)
    (tmp_path / "c.yaml").write_text(
        "routing:\n  rules:\n"
        "    - {name: mine, priority: 50, action: {target: cloud},\n"
        "       trigger: {type: script, file: mine.star}}\n"
        "    - {name: rest, priority: 0, trigger: {type: always}, action: {target: cloud}}\n"
    )
    rule, kids = probe(str(tmp_path / "c.yaml"))
    assert rule == "mine"
    assert kids == 1
    assert probe(str(tmp_path / "c.yaml"), "lint") == ("mine", 2)  # the checker's worker, and the router's


def test_bundled_scripts_are_marked_and_user_scripts_are_not(tmp_path: Path) -> None:
    config = load_config(profile="default")
    scripts = [r.trigger for r in config.rules if r.trigger.type == "script"]
    assert scripts and all(t.bundled for t in scripts)
    d = Router(config).decide(message("[fanout] do it"))
    assert d.rule == "swarm_fanout"


def test_in_process_scripts_keep_their_deadline_and_failures_are_outcomes() -> None:
    box = InProcessSandbox()
    endless = "def evaluate(request):\n    x = 0\n    for i in range(2000000000):\n        x += i\n"
    loop = box.load(endless, "l.star")
    boom = box.load("def evaluate(request):\n    fail('nope')\n", "b.star")
    ok = box.load("def evaluate(request):\n    return {'action': {'target': 'local'}}\n", "o.star")
    out = box.call([loop, boom, ok], '{"fields":{},"roles":[],"lens":[]}\n')
    assert out[0].error is not None and "stopped after 50 ms" in out[0].error
    assert out[1].error is not None and "nope" in out[1].error
    assert out[2].matched and out[2].action == {"target": "local"}


def test_route_explain_with_the_default_profile_starts_no_worker() -> None:
    code = (
        "from pathlib import Path\n"
        "from glider_cli.app.explain import ExplainInput, explain\n"
        "explain(ExplainInput(message='please refactor this', profile='default'), environ={})\n"
        "print(sum(len(p.read_text().split()) for p in Path('/proc/self/task').glob('*/children')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "0"
