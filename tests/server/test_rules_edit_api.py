"""The Rules page's editor API through a live Glider (server.rules_edit_api): preview, save with lint
first and the hot reload, a stale digest, the token and same-origin gates, a bundled profile never
edited and "save as my config"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from glider_cli.config.load import load_config
from glider_cli.server.app import create_app

pytestmark = pytest.mark.live

RULES = """\
routing:
  rules:
    # Tests stay local.
    - name: tests_local
      priority: 60
      trigger: {type: regex, pattern: "(?i)tests?"}
      action: {target: local}
"""


def _config() -> str:
    return backends_yaml("http://127.0.0.1:9") + RULES


def _rules(g: GliderServer, headers: dict[str, str] | None = None) -> dict[str, Any]:
    data = httpx.get(g.url + "/api/router/rules", headers=headers or {}, timeout=10).json()
    return {r["name"]: r for r in data["rules"]}


def test_preview_then_save_and_reload(tmp_path: Path) -> None:
    with GliderServer(_config(), tmp_path, reload_interval=None) as g:
        before = g.path.read_text()
        f = httpx.get(g.url + "/api/router/rules/file", timeout=10).json()
        assert f["editable"] and f["path"] == str(g.path) and f["text"] == before
        ops = [{"op": "set", "name": "tests_local", "fields": {"priority": 61}}]
        r = httpx.post(g.url + "/api/router/rules/edit", json={"ops": ops}, timeout=30)
        assert r.status_code == 200, r.text
        assert "-      priority: 60\n+      priority: 61\n" in r.json()["diff"] and r.json()["ok"]
        assert g.path.read_text() == before  # a preview writes nothing
        r = httpx.post(
            g.url + "/api/router/rules/edit",
            json={"ops": ops, "save": True, "digest": f["digest"]},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        assert r.json()["reload"]["ok"] is True
        assert g.path.read_text() == before.replace("priority: 60", "priority: 61")
        assert "# Tests stay local." in g.path.read_text()
        assert _rules(g)["tests_local"]["priority"] == 61  # in force: the hot reload applied it
        assert "ConfigReloaded" in g.types()
        # The same digest again: the file changed since, nothing is written.
        r = httpx.post(
            g.url + "/api/router/rules/edit",
            json={"ops": ops, "save": True, "digest": f["digest"]},
            timeout=30,
        )
        assert r.status_code == 409


def test_lint_errors_write_nothing(tmp_path: Path) -> None:
    with GliderServer(_config(), tmp_path, reload_interval=None) as g:
        before = g.path.read_text()
        digest = httpx.get(g.url + "/api/router/rules/file", timeout=10).json()["digest"]
        bad = [
            {"op": "set", "name": "tests_local", "fields": {"trigger": {"type": "regex", "pattern": "(open"}}}
        ]
        r = httpx.post(
            g.url + "/api/router/rules/edit", json={"ops": bad, "save": True, "digest": digest}, timeout=30
        )
        assert r.status_code == 422
        assert r.json()["lint"]["errors"][0]["rule"] == "tests_local"
        assert r.json()["lint"]["errors"][0]["file"] == str(g.path)
        assert g.path.read_text() == before
        r = httpx.post(
            g.url + "/api/router/rules/edit",
            json={"ops": [{"op": "set", "name": "x", "fields": {"enabled": False}}]},
            timeout=30,
        )
        assert r.status_code == 422 and "no rule named 'x'" in r.json()["error"]["message"]
        r = httpx.post(g.url + "/api/router/rules/edit", json={"ops": "nope"}, timeout=30)
        assert r.status_code == 422


def test_writes_need_the_token_and_the_same_origin(tmp_path: Path) -> None:
    env = {"GLIDER_HOME": str(tmp_path / "home"), "GLIDER_TOKEN": "t0ken-for-tests"}
    with GliderServer(_config(), tmp_path, environ=env, reload_interval=None) as g:
        ops = {"ops": [{"op": "set", "name": "tests_local", "fields": {"enabled": False}}], "save": True}
        assert httpx.post(g.url + "/api/router/rules/edit", json=ops, timeout=10).status_code == 401
        auth = {"authorization": "Bearer t0ken-for-tests"}
        cross = {**auth, "origin": "http://evil.example"}
        assert (
            httpx.post(g.url + "/api/router/rules/edit", json=ops, headers=cross, timeout=10).status_code
            == 403
        )
        digest = httpx.get(g.url + "/api/router/rules/file", headers=auth, timeout=10).json()["digest"]
        ok = httpx.post(
            g.url + "/api/router/rules/edit", json={**ops, "digest": digest}, headers=auth, timeout=30
        )
        assert ok.status_code == 200, ok.text
        assert _rules(g, auth)["tests_local"]["enabled"] is False


class _ProfileServer(GliderServer):
    """The real app serving a bundled profile (no config file of its own)."""

    def __init__(self, profile: str, tmp: Path) -> None:
        env = {"GLIDER_HOME": str(tmp / "home")}
        super().__init__(_config(), tmp, environ=env, reload_interval=None)
        self.config = load_config(profile=profile, environ=env)
        self.app = create_app(self.config, sink=self.sink, environ=env, reload_interval=None)


def test_a_bundled_profile_is_never_edited_but_can_be_saved_as_my_config(tmp_path: Path) -> None:
    with _ProfileServer("default", tmp_path) as g:
        f = httpx.get(g.url + "/api/router/rules/file", timeout=10).json()
        assert f["bundled"] and not f["editable"] and f["save_as"] == str(tmp_path / "home" / "config.yaml")
        name = next(iter(_rules(g)))
        ops = [{"op": "set", "name": name, "fields": {"enabled": False}}]
        r = httpx.post(g.url + "/api/router/rules/edit", json={"ops": ops, "save": True}, timeout=30)
        assert r.status_code == 409 and r.json()["error"]["save_as"] == f["save_as"]
        r = httpx.post(g.url + "/api/router/rules/save-as", json={"ops": ops}, timeout=30)
        assert r.status_code == 200, r.text
        mine = Path(f["save_as"]).read_text()
        assert "extends: default\n" in mine and f"- name: {name}\n" in mine and "enabled: false" in mine
        cfg = load_config(config=f["save_as"])
        assert next(rule for rule in cfg.rules if rule.name == name).enabled is False
        r = httpx.post(g.url + "/api/router/rules/save-as", json={"ops": ops}, timeout=30)
        assert r.status_code == 409  # never overwritten


def test_an_empty_rule_is_refused_with_the_field_named(tmp_path: Path) -> None:
    """What the editor's form sends for a rule given only a name (issue 39, point 7): no priority
    (`parseInt("")` is NaN, JSON null), an empty pattern (which would match every message), and no
    trigger at all: each is a lint error naming the file, the rule and the key, so nothing is saved."""
    with GliderServer(_config(), tmp_path, reload_interval=None) as g:
        before = g.path.read_text()
        digest = httpx.get(g.url + "/api/router/rules/file", timeout=10).json()["digest"]
        form = {"priority": None, "trigger": {"type": "regex", "pattern": ""}, "action": {"target": "local"}}
        ops = [
            {"op": "add", "rule": {"name": "only_a_name", **form}},
            {"op": "add", "rule": {"name": "no_trigger", "priority": 30, "action": {"target": "local"}}},
        ]
        preview = httpx.post(g.url + "/api/router/rules/edit", json={"ops": ops}, timeout=30).json()
        assert preview["ok"] is False
        found = {(e["rule"], e["key"], e["file"]) for e in preview["lint"]["errors"]}
        assert found == {
            ("only_a_name", "priority", str(g.path)),
            ("only_a_name", "trigger.pattern", str(g.path)),
            ("no_trigger", "trigger", str(g.path)),
        }
        saved = httpx.post(
            g.url + "/api/router/rules/edit", json={"ops": ops, "save": True, "digest": digest}, timeout=30
        )
        assert saved.status_code == 422
        assert g.path.read_text() == before
        assert "only_a_name" not in _rules(g)
