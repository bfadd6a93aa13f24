"""The router's JSON API on a live Glider: explain, lint and the Starlark playground."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from glider_cli.app.lint import lint
from glider_cli.config.load import load_config
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router

pytestmark = pytest.mark.live


def test_explain_is_the_same_decision_as_the_core(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        body = {"model": "m", "messages": [{"role": "user", "content": "please /local"}]}
        r = httpx.post(g.url + "/api/router/explain", json={"protocol": "anthropic", "request": body})
        assert r.status_code == 200
        core = Router(g.config).decide(parse_request("anthropic", body, {})).to_dict()
        got = r.json()
        assert got["target"] == "local" and got["rule"] == core["rule"] == "explicit_local"
        assert got["trace"] == core["trace"]
        # the bare request body works too (protocol guessed)
        r = httpx.post(g.url + "/api/router/explain", json={"model": "m", "input": "hi /cloud"})
        assert r.status_code == 200 and r.json()["target"] == "cloud"
        bad = httpx.post(g.url + "/api/router/explain", content=b"{")
        assert bad.status_code == 400
        bad = httpx.post(g.url + "/api/router/explain", json={"protocol": "cohere", "request": body})
        assert bad.status_code == 422


def test_lint_reports_the_loaded_config(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        r = httpx.get(g.url + "/api/router/lint")
        assert r.status_code == 200
        got = r.json()
        assert got["ok"] is True
        path = tmp_path / "glider-test-config.yaml"
        in_force = {"ok": True, **lint(load_config(config=str(path))).to_dict()}
        assert {k: got[k] for k in in_force} == in_force
        # The file on disk is linted too, and it is the one in force.
        assert got["disk"] == in_force and got["differs"] is False and got["reload"] is None


def test_playground_reports_line_and_column(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        ok = httpx.post(
            g.url + "/api/playground/parse", json={"source": "def evaluate(request):\n    return None\n"}
        )
        assert ok.json() == {"ok": True, "errors": []}
        source = "def evaluate(request):\n    x = 1\n    return y\n"
        broken = httpx.post(
            g.url + "/api/playground/parse", json={"source": source, "filename": "x.star"}
        ).json()
        assert broken["ok"] is False
        assert (broken["errors"][0]["line"], broken["errors"][0]["column"]) == (3, 12)
        assert "`y` not found" in broken["errors"][0]["message"]
        assert httpx.post(g.url + "/api/playground/parse", json={"source": 3}).status_code == 422


def test_explain_all_runs_the_rules_below_the_winner(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi /cloud"}]}
        r = httpx.post(g.url + "/api/router/explain", json={"request": body, "all": True})
        plain = httpx.post(g.url + "/api/router/explain", json={"request": body}).json()
    got = r.json()
    assert got["rule"] == plain["rule"] == "explicit_cloud"
    lines = {t["rule"]: t["reason"] for t in got["trace"]}
    assert lines["default"].startswith("would also match (explicit_cloud has control)")
    assert {t["rule"]: t["reason"] for t in plain["trace"]}["default"].startswith("not reached")
