"""`glider route explain --client claude-code|codex|gemini`: a message decided as that client sends it
(its captured system prompt and tools), and a note wherever the answer differs (issue 39, point 6:
`route explain "hello there"`, a request without tools, said a rule would match that no agent request
ever reached)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_helpers import invoke_json
from glider_cli.app.explain import ExplainInput, build_request
from glider_cli.cli import app

SQL_LOCAL = """extends: default
routing:
  rules:
    - name: sql_local
      priority: 60
      trigger: {type: regex, pattern: '(?i)\\bselect\\b.+\\bfrom\\b'}
      action: {target: local}
"""
MESSAGE = "select id from users where name = 'x'"


def _config(tmp_path: Path, text: str = SQL_LOCAL) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("client", "protocol", "tool"),
    [
        ("claude-code", "anthropic", "Bash"),
        ("codex", "openai_responses", "exec_command"),
        ("gemini", "gemini", "read_file"),
    ],
)
def test_the_message_is_the_prompt_of_the_clients_own_request(client: str, protocol: str, tool: str) -> None:
    request = build_request(ExplainInput(MESSAGE, client=client))
    assert request.protocol == protocol
    assert request.last_user_text == MESSAGE
    assert tool in request.tool_names
    assert request.estimated_tokens > 5_000  # the client's system prompt and tools, not the bare message


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini"])
def test_as_the_client_sends_it_the_tools_rule_decides_and_the_difference_is_said(
    tmp_path: Path, client: str
) -> None:
    d = invoke_json("route", "explain", MESSAGE, "--client", client, "-c", _config(tmp_path), "--json")
    assert (d["rule"], d["target"], d["request"]["has_tools"]) == ("task_classifier.tools", "cloud", True)
    (other,) = d["differs"]
    assert (other["as"], other["rule"], other["target"], other["tools"]) == (
        "message",
        "sql_local",
        "local",
        0,
    )
    text = CliRunner().invoke(app, ["route", "explain", MESSAGE, "--client", client, "-c", _config(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "note     differs from the message alone (no tools" in text.stdout
    assert "local via rule sql_local" in text.stdout


def test_a_bare_message_names_each_client_that_would_be_decided_otherwise(tmp_path: Path) -> None:
    d = invoke_json("route", "explain", MESSAGE, "-c", _config(tmp_path), "--json")
    assert (d["rule"], d["target"]) == ("sql_local", "local")
    assert [(x["as"], x["rule"], x["target"]) for x in d["differs"]] == [
        ("claude-code", "task_classifier.tools", "cloud"),
        ("codex", "task_classifier.tools", "cloud"),
        ("gemini", "task_classifier.tools", "cloud"),
    ]
    text = CliRunner().invoke(app, ["route", "explain", MESSAGE, "-c", _config(tmp_path)]).stdout
    assert "note     as Claude Code sends it (12 tools" in text and "see --client claude-code" in text


def test_no_note_when_every_client_is_decided_the_same(tmp_path: Path) -> None:
    above = SQL_LOCAL.replace("priority: 60", "priority: 90")
    d = invoke_json("route", "explain", MESSAGE, "-c", _config(tmp_path, above), "--json")
    assert d["rule"] == "sql_local" and "differs" not in d
    d = invoke_json(
        "route", "explain", MESSAGE, "--client", "claude-code", "-c", _config(tmp_path, above), "--json"
    )
    assert d["rule"] == "sql_local" and "differs" not in d


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["hi", "--client", "cursor"], "unknown client 'cursor'; expected one of claude-code, codex, gemini"),
        (["--client", "codex"], "--client explains a MESSAGE"),
    ],
)
def test_a_bad_client_option_is_a_clear_error(args: list[str], said: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "route", "explain", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stderr.startswith("Error: ") and said in proc.stderr
    assert "Traceback" not in proc.stderr
