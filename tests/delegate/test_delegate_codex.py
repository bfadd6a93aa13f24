"""Real Codex (npm @openai/codex) as a delegate, pointed at the fake OpenAI Responses upstream that makes
it ask for an escalated command: `codex exec` (approval policy never) rejects it, and the delegate's
reply names the refusal in Codex's own words, with no token (Codex has no switch that allows exactly
that command for one run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import npm_cli
from fake_upstream import FakeUpstream
from fake_wire import ToolReply
from glider_cli.config.settings import DelegateSettings, Settings
from glider_cli.delegate import operations, permissions
from glider_cli.paths import resolve

pytestmark = [pytest.mark.live, pytest.mark.slow]
MODEL = "gpt-5"


def test_real_codex_rejection_is_relayed(git_workspace: Path, tmp_path: Path) -> None:
    codex, why = npm_cli.find_or_install("codex", "@openai/codex", "Codex")
    if codex is None:
        pytest.skip(why)
    home = tmp_path / "codex-home"
    (home / ".codex").mkdir(parents=True)
    call = {"cmd": "touch escalated.txt", "sandbox_permissions": "require_escalated", "justification": "t"}
    grants = permissions.Grants()
    with FakeUpstream(models=[MODEL]) as fake:
        (home / ".codex" / "config.toml").write_text(
            f'model = "{MODEL}"\nmodel_provider = "fake"\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{fake.url}/v1"\nwire_api = "responses"\n'
            'env_key = "OPENAI_API_KEY"\n[analytics]\nenabled = false\n'
        )
        fake.set_reply(text="could not do it", tool=ToolReply("exec_command", call, once=True))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "OPENAI_API_KEY": "sk-test",
            "NO_COLOR": "1",
        }
        s = Settings(delegate={"codex": DelegateSettings(vendor="codex", command=codex, timeout=180)})
        res = operations.delegate(
            resolve(), s, "codex", "make the file", git_workspace, "claude-code", environ=env, grants=grants
        )
        asked = [q for q in fake.requests if q.path == "/v1/responses"]
    assert asked, "Codex sent no request to the fake upstream"
    assert len(res.refused) == 1, res
    assert res.refused[0].tool == "command" and "escalated permissions" in res.refused[0].target
    assert res.refused[0].grant is None and res.token is None
    reply = res.reply_text()
    assert "codex was refused permission for:" in reply and "no switch that allows exactly this" in reply
    assert not (git_workspace / "escalated.txt").exists()
