"""The pack (`turns.pack`): what a local model receives, on real captured client requests.

Figures for the captured Claude Code 2.1.332 first turn (defaults): 50,177 -> ~6,400 bytes, ~12,300 -> ~1,450
estimated prompt tokens; the assertions below hold the bounds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from glider_cli.config.settings import TransformSettings
from glider_cli.protocol.parse import parse_request
from glider_cli.protocol.translate import request_to
from glider_cli.turns.pack import BRIEF, EPISODES_HEADING, pack
from glider_cli.turns.pack_shapes import cut

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clients"
DEFAULTS = TransformSettings()


def _bodies(name: str) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return [r["body"] for r in data["requests"] if isinstance(r.get("body"), dict)]


CLAUDE_FIRST = _bodies("claude-code-01-first-turn")[0]
CLAUDE_TOOL = _bodies("claude-code-02-tool-use-followup")[1]
CODEX_TOOL = _bodies("codex-exec-01-tool-followup")[1]
CLAUDE_ENV = (
    "- Primary working directory: <CWD>",
    "- Is a git repository: true",
    "- Platform: linux",
    "- Shell: bash",
    "- OS Version: Linux <KERNEL>",
)


def _texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    return [content] if isinstance(content, str) else [b.get("text", "") for b in content]


def test_the_claude_code_first_turn_packs_under_1500_tokens() -> None:
    before = copy.deepcopy(CLAUDE_FIRST)
    p = pack("anthropic", CLAUDE_FIRST, DEFAULTS)
    r = p.report
    assert before == CLAUDE_FIRST  # pure: the client's body is not touched
    assert r.packed and r.tokens_before > 10_000 and r.tokens_after <= 1_500
    assert r.bytes_before > 45_000 and r.bytes_after < r.bytes_before / 6
    assert r.tokens_after == parse_request("anthropic", p.body).estimated_tokens
    assert r.tools_kept == ("Bash", "Edit", "Read", "Write")
    assert "Agent" in r.tools_dropped and "Workflow" in r.tools_dropped
    assert (r.messages_before, r.messages_kept, r.episodes) == (1, 1, 0)
    json.dumps(r.to_dict())


def test_a_request_parsed_already_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy sizes the pack from the request it parsed: only the pack itself is parsed."""
    from glider_cli.turns import pack as pack_mod

    parsed: list[dict[str, Any]] = []

    def counting(protocol: str, body: Any, *args: Any, **kwargs: Any) -> Any:
        parsed.append(body)
        return parse_request(protocol, body, *args, **kwargs)

    chat = parse_request("anthropic", CLAUDE_FIRST)
    monkeypatch.setattr(pack_mod, "parse_request", counting)
    with_request = pack("anthropic", CLAUDE_FIRST, DEFAULTS, request=chat)
    assert len(parsed) == 1 and parsed[0] is with_request.body
    parsed.clear()
    alone = pack("anthropic", CLAUDE_FIRST, DEFAULTS)
    assert len(parsed) == 2 and parsed[0] is CLAUDE_FIRST
    assert with_request.report == alone.report and with_request.body == alone.body
    assert with_request.report.tokens_before == chat.estimated_tokens


def test_the_system_prompt_is_the_brief_the_clients_start_and_its_environment_lines() -> None:
    p = pack("anthropic", CLAUDE_FIRST, DEFAULTS)
    system = p.body["system"]
    assert isinstance(system, str) and system.startswith(BRIEF)
    assert "You are a Claude agent, built on Anthropic's Claude Agent SDK." in system
    assert "x-anthropic-billing-header" not in system
    # The environment came in a `role: system` message after the user's; its lines are in the prompt.
    for line in CLAUDE_ENV:
        assert line in system
    assert "Today's date is" in system
    assert p.report.env_lines == 6
    client_part = system[len(BRIEF) :]
    assert p.report.system_chars <= DEFAULTS.local_system_chars < len(client_part) + 100
    assert all(m["role"] != "system" for m in p.body["messages"])


def test_the_current_turn_is_whole_and_its_tool_ids_are_the_clients() -> None:
    p = pack("anthropic", CLAUDE_TOOL, TransformSettings(local_tools=()))
    turn = p.body["messages"]
    assert [m["role"] for m in turn] == ["user", "assistant", "user"]
    assert _texts(turn[0])[-1] == "GLIDER_TOOL:Bash - run echo"
    assert turn[1] == CLAUDE_TOOL["messages"][2]  # the assistant's text + tool_use, as sent
    assert turn[2] == CLAUDE_TOOL["messages"][3]  # the tool_result, cache_control and all
    call_id = turn[1]["content"][1]["id"]
    assert call_id.startswith("toolu_") and turn[2]["content"][0]["tool_use_id"] == call_id
    # The tool the turn used stays even outside the core set; nothing else does.
    assert p.report.tools_kept == ("Bash",)
    # Claude Code's injected context keeps its start; the project instructions survive whole.
    reminders = [t for t in _texts(turn[0]) if t.startswith("<system-reminder>")]
    assert len(reminders) == 3 and all(len(t) <= DEFAULTS.local_system_chars // 4 for t in reminders)
    assert any("BLUE-HERON" in t for t in reminders)


def test_earlier_turns_are_not_sent() -> None:
    body = {
        "model": "m",
        "max_tokens": 64,
        "system": "Be helpful.",
        "messages": [
            {"role": "user", "content": "OLD-ASK: explain the parser"},
            {"role": "assistant", "content": "OLD-ANSWER: it parses"},
            {"role": "user", "content": "now rename parse to read"},
        ],
    }
    p = pack("anthropic", body, DEFAULTS)
    assert p.body["messages"] == [{"role": "user", "content": "now rename parse to read"}]
    assert "OLD-" not in json.dumps(p.body)
    assert (p.report.messages_before, p.report.messages_kept) == (3, 1)


def test_codex_responses_turn_environment_and_call_ids() -> None:
    p = pack("openai_responses", CODEX_TOOL, TransformSettings(local_tools=()))
    out = p.body
    assert out["instructions"].startswith(BRIEF)
    assert "You are a coding agent running in the Codex CLI" in out["instructions"]
    for element in ("<cwd><CWD></cwd>", "<shell>bash</shell>", "<current_date>2026-11-29</current_date>"):
        assert element in out["instructions"]
    kinds = [(i.get("type"), i.get("role")) for i in out["input"]]
    assert kinds == [("message", "user"), ("function_call", None), ("function_call_output", None)]
    assert out["input"][1]["call_id"] == out["input"][2]["call_id"] == CODEX_TOOL["input"][-2]["call_id"]
    assert "RED-FALCON" not in json.dumps(out["input"])  # AGENTS.md came before the turn
    assert p.report.tools_kept == ("exec_command",)
    assert out["tool_choice"] == "auto" and out["model"] == "gpt-5"
    assert p.report.tokens_after * 8 < p.report.tokens_before


def test_openai_chat_system_first_tool_ids_and_tool_choice() -> None:
    call = {
        "id": "call_abc",
        "type": "function",
        "function": {"name": "Bash", "arguments": '{"command":"ls"}'},
    }
    tools = [
        {"type": "function", "function": {"name": n, "description": "d" * 500, "parameters": {}}}
        for n in ("Bash", "Read", "Deploy")
    ]
    body = {
        "model": "m",
        "tools": tools,
        "tool_choice": {"type": "function", "function": {"name": "Deploy"}},
        "messages": [
            {"role": "system", "content": "You are an agent. Working directory: /src/app"},
            {"role": "user", "content": "old question"},
            {"role": "assistant", "content": "old answer"},
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "a.py"},
        ],
    }
    p = pack("openai_chat", body, DEFAULTS)
    out = p.body["messages"]
    assert out[0]["role"] == "system" and "Working directory: /src/app" in out[0]["content"]
    assert out[1:] == body["messages"][3:]
    assert [t["function"]["name"] for t in p.body["tools"]] == ["Bash", "Read"]
    assert all(len(t["function"]["description"]) <= DEFAULTS.local_tool_chars for t in p.body["tools"])
    assert "tool_choice" not in p.body  # it named a tool the diet dropped
    assert p.report.tools_dropped == ("Deploy",)


def test_a_backend_without_tools_gets_none() -> None:
    p = pack("anthropic", CLAUDE_FIRST, DEFAULTS, tools=False)
    assert "tools" not in p.body and "tool_choice" not in p.body
    assert p.report.tools_kept == () and "Bash" in p.report.tools_dropped
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [], "tool_choice": "auto"}
    out = pack("openai_chat", chat, DEFAULTS, tools=False).body
    assert "tools" not in out and "tool_choice" not in out


def test_tool_descriptions_and_schemas_are_shortened() -> None:
    p = pack("anthropic", CLAUDE_FIRST, DEFAULTS)
    for tool in p.body["tools"]:
        assert len(tool["description"]) <= DEFAULTS.local_tool_chars
        schema = json.dumps(tool["input_schema"])
        assert "$schema" not in schema
        for prop in tool["input_schema"]["properties"].values():
            assert len(prop.get("description", "")) <= DEFAULTS.local_tool_chars // 4
    bash = next(t for t in p.body["tools"] if t["name"] == "Bash")
    # A parameter named "description" is a parameter, not a description to cut away.
    assert set(bash["input_schema"]["properties"]) >= {"command", "description", "timeout"}
    assert bash["input_schema"]["required"] == ["command"]


def test_episodes_are_one_block_and_at_most_the_configured_count() -> None:
    episodes = [f"asked: task {i}; routed local; outcome ok; files: f{i}.py" for i in range(5)]
    episodes.append("x" * 2000)
    p = pack("anthropic", CLAUDE_FIRST, DEFAULTS, episodes=episodes)
    system = p.body["system"]
    assert system.count(EPISODES_HEADING) == 1 and p.report.episodes == 3
    block = system.split(EPISODES_HEADING, 1)[1]
    assert "task 2" not in block and "task 3" in block and "task 4" in block
    assert "x" * 401 not in block and "x" * 300 in block
    none = pack("anthropic", CLAUDE_FIRST, TransformSettings(local_episode_count=0), episodes=episodes)
    assert EPISODES_HEADING not in none.body["system"] and none.report.episodes == 0


def test_local_context_false_sends_the_request_as_it_is() -> None:
    p = pack("anthropic", CLAUDE_FIRST, TransformSettings(local_context=False), episodes=["e"])
    assert p.body == CLAUDE_FIRST and p.body is not CLAUDE_FIRST
    assert not p.report.packed and p.report.bytes_after == p.report.bytes_before
    assert p.report.tools_dropped == ()


def test_a_small_system_budget_still_keeps_the_environment() -> None:
    p = pack("anthropic", CLAUDE_FIRST, TransformSettings(local_system_chars=400))
    system = p.body["system"]
    assert "- Primary working directory: <CWD>" in system and "- Platform: linux" in system
    assert p.report.system_chars <= 400
    bare = pack("anthropic", CLAUDE_FIRST, TransformSettings(local_system_chars=0)).body["system"]
    assert bare == BRIEF


def test_no_real_user_message_keeps_the_whole_conversation() -> None:
    body = {
        "model": "m",
        "input": [
            {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ],
    }
    p = pack("openai_responses", body, DEFAULTS)
    assert p.body["input"] == body["input"]
    text = pack("openai_responses", {"model": "m", "input": "say hi"}, DEFAULTS).body
    assert text["input"] == [{"type": "message", "role": "user", "content": "say hi"}]


def test_a_responses_namespace_keeps_only_the_tools_in_the_diet() -> None:
    inner = [{"type": "function", "name": n, "description": "d", "parameters": {}} for n in ("spawn", "wait")]
    body = {
        "model": "m",
        "input": "hi",
        "tools": [{"type": "namespace", "name": "agents", "description": "multi-agent", "tools": inner}],
    }
    kept = pack("openai_responses", body, TransformSettings(local_tools=("spawn",))).body
    assert [t["name"] for t in kept["tools"][0]["tools"]] == ["spawn"]
    whole = pack("openai_responses", body, TransformSettings(local_tools=("agents",))).body
    assert [t["name"] for t in whole["tools"][0]["tools"]] == ["spawn", "wait"]
    assert "tools" not in pack("openai_responses", body, TransformSettings(local_tools=())).body


@pytest.mark.parametrize("backend", ["ollama", "openai_chat", "anthropic"])
def test_a_pack_translates_to_every_backend_with_its_ids(backend: str) -> None:
    p = pack("anthropic", CLAUDE_TOOL, DEFAULTS)
    out = request_to(backend, "anthropic", p.body, model="qwen-local")
    text = json.dumps(out)
    assert "GLIDER_TOOL:Bash - run echo" in text and "Primary working directory" in text
    if backend != "ollama":  # Ollama has no call ids
        assert "toolu_3e2506b031aa4bcba34bc6b0" in text
    assert len(text) < 10_000


def test_cut() -> None:
    assert cut("short", 10) == "short"
    assert cut("one two three four five", 12) == "one two…"
    assert cut("First sentence. Second one is long", 22) == "First sentence.…"
    assert len(cut("x" * 50, 10)) == 10 and cut("x" * 50, 0) == ""


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(ValueError, match="no pack for protocol 'ollama'"):
        pack("ollama", {"model": "m"}, DEFAULTS)


def _at(clock: str, prompt: str) -> dict[str, Any]:
    """The Claude Code first turn with a clock time on its date line and another prompt."""
    text = json.dumps(CLAUDE_FIRST).replace(
        "Today's date is 2026-11-29.", f"Today's date is 2026-11-29 {clock}."
    )
    body: dict[str, Any] = json.loads(text.replace('"say hi"', json.dumps(prompt)))
    return body


def test_what_changes_per_session_or_turn_comes_after_the_stable_part_of_the_system_prompt() -> None:
    # Two sessions of one project: another time of day, another prompt, the second with episodes.
    a = pack("anthropic", _at("9:05", "say hi"), DEFAULTS).body["system"]
    b = pack("anthropic", _at("10:41", "list the files"), DEFAULTS, episodes=["asked: x; routed local"]).body[
        "system"
    ]
    assert a.endswith("Time of this turn:\nToday's date is 2026-11-29 9:05.")
    assert b.index(EPISODES_HEADING) < b.index("Time of this turn:")
    # Everything before the episodes and the clock line is byte-identical: the server's cache covers it.
    stable = a[: a.index("\n\nTime of this turn:")]
    assert b.startswith(stable + "\n\n" + EPISODES_HEADING)
    for line in CLAUDE_ENV:
        assert line in stable
    assert "9:05" not in stable
