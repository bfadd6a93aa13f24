"""`routing.escalate` (issue 42, point 5): both keys on by default; the loader and `glider lint` know them
(an unknown key or a value that is not a boolean is an error naming it); a hot reload switches them for
the next request."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from fake_upstream import FakeUpstream, ToolReply
from glider_cli.app.lint import lint
from glider_cli.config.load import load_config
from glider_cli.config.model import EscalateSettings
from server.glider_harness import GliderServer
from server.test_escalate_reply import PROMPT, config, post


def test_defaults_and_the_loader(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(config("http://127.0.0.1:9", "http://127.0.0.1:9"))
    assert load_config(config=str(path)).routing.escalate == EscalateSettings(True, True)
    path.write_text(
        config("http://127.0.0.1:9", "http://127.0.0.1:9", extra="  escalate: {on_client_failure: false}\n")
    )
    assert load_config(config=str(path)).routing.escalate == EscalateSettings(True, False)


@pytest.mark.parametrize(
    ("section", "key", "message"),
    [
        (
            "{on_invalid_replies: false}",
            "routing.escalate.on_invalid_replies",
            "did you mean 'on_invalid_reply'",
        ),
        ("{on_client_failure: sometimes}", "routing.escalate.on_client_failure", "must be true or false"),
        ("yes", "routing.escalate", "must be a mapping"),
    ],
)
def test_lint_names_a_wrong_key_or_value(tmp_path: Path, section: str, key: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(config("http://127.0.0.1:9", "http://127.0.0.1:9", extra=f"  escalate: {section}\n"))
    errors = lint(config_path=str(path)).to_dict()["errors"]
    assert [(e["key"], message in e["message"] or message in (e.get("hint") or "")) for e in errors] == [
        (key, True)
    ]


def test_a_reload_switches_escalation(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["smol"]) as local,
        FakeUpstream(models=["gpt-x"]) as cloud,
        GliderServer(config(local.url, cloud.url), tmp_path, reload_interval=None) as g,
    ):
        local.set_reply(text="", tool=ToolReply("Read", {}))
        r = post(g, "openai_chat", PROMPT, False)
        assert "escalated=bad_tool_args" in r.headers["x-glider-route"]
        g.path.write_text(config(local.url, cloud.url, extra="  escalate: {on_invalid_reply: false}\n"))
        assert httpx.post(g.url + "/api/router/reload").json()["ok"] is True
        r = post(g, "openai_chat", PROMPT, False)
        assert r.headers["x-glider-route"].startswith("local; rule=small_local; backend=llama")
        assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "Read"
