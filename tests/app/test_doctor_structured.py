"""`glider doctor --json` says which structured-output dialect each local backend takes, and that a
backend configured with `structured_output: false` takes none."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fake_upstream import FakeUpstream
from glider_cli.cli import app


def test_doctor_reports_the_structured_output_dialect(tmp_path: Path, fake: FakeUpstream) -> None:
    for extra, expected in (("", None), (", structured_output: false", "none")):
        path = tmp_path / "doctor.yaml"
        path.write_text(
            "backends:\n"
            f"  local1: {{type: openai, side: local, base_url: '{fake.url}/v1', model: fake-model{extra}}}\n"
            "routing:\n  task_classifier: {enabled: false}\n"
            "  rules:\n    - {name: default, priority: 0, trigger: {type: always},"
            " action: {target: local}}\n",
            encoding="utf-8",
        )
        result = CliRunner().invoke(app, ["doctor", "-c", str(path), "--json"])
        local1 = next(b for b in json.loads(result.stdout)["backends"] if b["name"] == "local1")
        # The fake lists its models as owned by "fake": a server the probe does not know (unknown).
        assert local1["structured_output"] == expected, local1
