"""The Rules page edits the config file it shows, in a real Chromium: stage a change and a new rule,
preview the diff and the linter's findings, save, and the table follows through the hot reload; a lint
error saves nothing; a bundled profile offers "save as my config"."""

from __future__ import annotations

from pathlib import Path

import pytest
from glider_harness import GliderServer, backends_yaml
from ui_tab import Tab

from glider_cli.config.load import load_config
from glider_cli.server.app import create_app

pytestmark = [pytest.mark.live, pytest.mark.slow]

RULES = """\
routing:
  rules:
    # Tests stay local.
    - name: tests_local
      priority: 60
      trigger: {type: regex, pattern: "(?i)tests?"}
      action: {target: local}
"""


def _row(tab: Tab, name: str) -> str:
    return str(tab.page.locator("#rules tr", has_text=name).first.inner_text())


def test_edit_preview_save_and_the_table_follows(tmp_path: Path, tab: Tab) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9") + RULES, tmp_path, reload_interval=None) as g:
        tab.page.goto(g.url + "/ui/rules")
        tab.page.wait_for_selector("#rules table")
        tab.page.wait_for_selector("#stage-change")
        assert str(g.path) in tab.page.locator("#edit-where").inner_text()
        tab.page.select_option("#edit-rule", "tests_local")
        tab.page.select_option("#edit-action", "disable")
        tab.page.click("#stage-change")
        tab.page.fill("#new-name", "docs_cloud")
        tab.page.fill("#new-priority", "40")
        tab.page.select_option("#new-trigger", "regex")
        tab.page.fill("#new-trigger-value", "(?i)docs")
        tab.page.select_option("#new-target", "cloud")
        tab.page.click("#stage-add")
        assert tab.page.locator("#pending-ops li").count() == 2
        before = g.path.read_text()
        tab.page.click("#preview-edit")
        diff = tab.page.locator("#edit-diff")
        diff.wait_for()
        assert "+      enabled: false" in diff.inner_text() and "+    - name: docs_cloud" in diff.inner_text()
        assert g.path.read_text() == before
        tab.shot("rules-editor-preview")
        tab.page.click("#save-edit")
        tab.page.wait_for_selector("#edit-result:has-text('Saved and reloaded')")
        text = g.path.read_text()
        assert "# Tests stay local." in text and "enabled: false" in text and "name: docs_cloud" in text
        tab.page.wait_for_function("() => document.querySelector('#rules').innerText.includes('docs_cloud')")
        assert "disabled" in _row(tab, "tests_local")
        # A change the linter refuses is shown and not written.
        tab.page.select_option("#edit-rule", "docs_cloud")
        tab.page.select_option("#edit-action", "target")
        tab.page.fill("#edit-value", "elsewhere")
        tab.page.click("#stage-change")
        tab.page.click("#save-edit")
        tab.page.wait_for_selector("#edit-result:has-text('Not saved')")
        assert tab.page.locator("#edit-lint .badge.error").count() >= 1
        assert g.path.read_text() == text
        tab.shot("rules-editor-lint-error")
    assert [e for e in tab.errors if "422" not in e] == []


class _ProfileServer(GliderServer):
    def __init__(self, profile: str, tmp: Path) -> None:
        env = {"GLIDER_HOME": str(tmp / "home")}
        super().__init__(backends_yaml("http://127.0.0.1:9"), tmp, environ=env, reload_interval=None)
        self.config = load_config(profile=profile, environ=env)
        self.app = create_app(self.config, sink=None, environ=env, reload_interval=None)


def test_a_bundled_profile_offers_save_as_my_config(tmp_path: Path, tab: Tab) -> None:
    with _ProfileServer("default", tmp_path) as g:
        tab.page.goto(g.url + "/ui/rules")
        tab.page.wait_for_selector("#save-as")
        assert "never edited" in tab.page.locator("#edit-where").inner_text()
        assert tab.page.locator("#save-edit").count() == 0
        name = tab.page.locator("#edit-rule option").first.inner_text()
        tab.page.select_option("#edit-action", "disable")
        tab.page.click("#stage-change")
        tab.page.click("#save-as")
        tab.page.wait_for_selector("#edit-result:has-text('Saved')")
        mine = (tmp_path / "home" / "config.yaml").read_text()
        assert "extends: default" in mine and f"name: {name}" in mine and "enabled: false" in mine
        tab.shot("rules-editor-save-as")
    assert tab.errors == []


def test_a_rule_given_only_a_name_is_refused_with_its_fields_named(tmp_path: Path, tab: Tab) -> None:
    """Issue 39, point 7: the form sent `priority: null` and `pattern: ''` for a rule given only a name,
    and the preview said the linter found nothing. Point 8b: the page's count of the rules in force is
    the one the save reports."""
    with GliderServer(backends_yaml("http://127.0.0.1:9") + RULES, tmp_path, reload_interval=None) as g:
        tab.page.goto(g.url + "/ui/rules")
        tab.page.wait_for_selector("#stage-add")
        in_force = tab.page.locator("#rules-in-force")
        in_force.wait_for()
        assert in_force.inner_text() == "12 rules in force"
        before = g.path.read_text()
        tab.page.fill("#new-name", "only_a_name")
        tab.page.click("#stage-add")
        tab.page.click("#preview-edit")
        tab.page.locator("#edit-lint").wait_for()
        findings = tab.page.locator("#edit-lint").inner_text()
        assert "The linter finds nothing" not in findings
        assert "only_a_name · priority: needs a priority" in findings
        assert "only_a_name · trigger.pattern: an empty pattern matches every message" in findings
        tab.page.click("#save-edit")
        tab.page.wait_for_selector("#edit-result:has-text('Not saved')")
        assert g.path.read_text() == before
        tab.shot("rules-editor-empty-rule")
    assert [e for e in tab.errors if "422" not in e] == []
