"""`glider route explain --request` with the raw bytes of a Cursor request."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import cursor_wire as wire
from typer.testing import CliRunner

from glider_cli.cli import app


def explain(path: Path, *extra: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["route", "explain", "--profile", "default", "--request", str(path), *extra])
    return r.exit_code, r.stdout + str(r.exception or "")


def test_explains_a_bidi_append_and_a_run_request(tmp_path: Path) -> None:
    append = tmp_path / "append.bin"
    msg = wire.run_request("conv-x", wire.user_action("/local fix the typo", mode=2))
    append.write_bytes(wire.append_body("rid-1", 0, msg))
    code, out = explain(append, "--json")
    assert code == 0, out
    d = json.loads(out)
    assert d["target"] == "local" and d["rule"] == "explicit_local"
    assert d["client"] == "cursor" and d["cursor"]["kind"] == "new_turn"
    assert d["request"]["complexity_source"] == "cursor"
    summary = tmp_path / "summary.bin"
    summary.write_bytes(gzip.compress(wire.run_request("conv-x", wire.action(4))))
    code, out = explain(summary, "--json")
    assert code == 0 and json.loads(out)["rule"] == "composer_wrapup_origin"


def test_a_heartbeat_is_not_a_routed_request(tmp_path: Path) -> None:
    hb = tmp_path / "hb.bin"
    hb.write_bytes(wire.append_body("rid-1", 3, wire.heartbeat()))
    code, out = explain(hb, "--protocol", "cursor")
    assert code != 0 and "passes through" in out
