"""One count of the rules in force (`config.sequence.in_force`), the same in `glider doctor`, the
dashboard's rules API and the editor's reload (issue 39, point 8b: doctor said 8, the dashboard listed
12 and the editor "9 rules in force" for the same config)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml
from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.config.load import load_config
from glider_cli.config.sequence import in_force

pytestmark = pytest.mark.live

RULES = """\
routing:
  rules:
    - name: tests_local
      priority: 90
      trigger: {type: regex, pattern: "(?i)tests?"}
      action: {target: local}
"""


def test_doctor_the_dashboard_and_the_editor_count_the_same_rules(tmp_path: Path) -> None:
    text = backends_yaml("http://127.0.0.1:9") + RULES
    with GliderServer(text, tmp_path, reload_interval=None) as g:
        config = load_config(config=str(g.path))
        # The default profile's 8 rules, this file's 1, the task classifier's 3; complexity is off.
        assert len(in_force(config)) == 12
        rules = httpx.get(g.url + "/api/router/rules", timeout=10).json()
        assert rules["in_force"] == 12
        assert len([r for r in rules["rules"] if r["enabled"]]) == 12
        assert len(rules["rules"]) == 13  # the disabled complexity rule is listed too
        digest = httpx.get(g.url + "/api/router/rules/file", timeout=10).json()["digest"]
        ops = [{"op": "set", "name": "tests_local", "fields": {"priority": 91}}]
        saved = httpx.post(
            g.url + "/api/router/rules/edit", json={"ops": ops, "save": True, "digest": digest}, timeout=30
        ).json()
        assert saved["reload"]["rules"] == 12
        reloaded = g.wait_for("ConfigReloaded")[0]
        assert reloaded["rules"] == 12
    out = CliRunner().invoke(app, ["doctor", "-c", str(g.path), "--timeout", "0.5", "--json"])
    doctor = json.loads(out.stdout)
    assert len(doctor["rules"]) == 12
    assert {"task_classifier.tools", "tests_local"} <= {r["rule"] for r in doctor["rules"]}
    table = CliRunner().invoke(app, ["doctor", "-c", str(g.path), "--timeout", "0.5"], env={"COLUMNS": "250"})
    assert "Rules in force (12)" in table.stdout
