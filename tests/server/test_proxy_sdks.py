"""The official `anthropic` and `openai` SDKs through a live Glider to every backend kind.

Glider and the fake upstream both run under uvicorn on 127.0.0.1. Rules route by explicit words:
`/local` -> ollama (local), `/to-oai` -> an OpenAI-compatible backend, `/to-claude` -> an Anthropic
backend, `/cloud` -> origin (the client's own upstream, passthrough).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(
        models=["claude-fake", "gpt-fake", "claude-sonnet-5-5", "gpt-5", "m"], ollama_models=["qwen-local"]
    ),
]

ROUTES = {
    "ollama": ("/local", "ollama", "local"),
    "openai": ("/to-oai", "openai_chat", "cloud"),
    "anthropic": ("/to-claude", "anthropic", "cloud"),
    "origin": ("/cloud", None, "cloud"),
}
RULES = """
routing:
  rules:
    - name: to_oai
      priority: 98
      trigger: {type: explicit, commands: ["/to-oai"]}
      action: {target: cloud, backend: oai, model: gpt-fake}
    - name: to_claude
      priority: 97
      trigger: {type: explicit, commands: ["/to-claude"]}
      action: {target: cloud, backend: claude, model: claude-fake}
    - name: count_by_claude
      priority: 96
      trigger: {type: regex, pattern: "count-by-claude"}
      action: {target: cloud, backend: claude, model: claude-fake}
"""
SHELL_TOOL = {
    "name": "Bash",
    "description": "run a shell command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
SHELL_FN = {
    "type": "function",
    "function": {
        "name": "Bash",
        "description": "run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
SHELL_RESP_FN = {
    "type": "function",
    "name": "Bash",
    "description": "run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GliderServer]:
    extra = (
        f"  oai: {{type: openai, side: cloud, base_url: '{fake.url}/v1', api_key_env: OAI_KEY}}\n"
        f"  claude: {{type: anthropic, side: cloud, base_url: '{fake.url}', api_key_env: CLAUDE_KEY}}\n"
        + RULES
    )
    tmp = tmp_path_factory.mktemp("glider")
    env = {"OAI_KEY": "sk-glider-oai", "CLAUDE_KEY": "sk-glider-claude", "GLIDER_HOME": str(tmp / "home")}
    with GliderServer(backends_yaml(fake.url, extra=extra), tmp, environ=env) as g:
        yield g


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _anthropic(glider: GliderServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=glider.url, api_key="sk-client-key", max_retries=0)


def _openai(glider: GliderServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=glider.url + "/v1", api_key="sk-client-key", max_retries=0)


def _upstream_protocol(kind: str, client: str) -> str:
    proto = ROUTES[kind][1]
    return client if proto is None else proto


def _check_upstream(fake: FakeUpstream, kind: str, client: str) -> None:
    rec = fake.requests[-1]
    proto = _upstream_protocol(kind, client)
    assert (
        rec.path
        == {
            "anthropic": "/v1/messages",
            "openai_chat": "/v1/chat/completions",
            "openai_responses": "/v1/responses",
            "ollama": "/api/chat",
        }[proto]
    )
    auth = rec.headers.get("authorization", "") + rec.headers.get("x-api-key", "")
    if kind == "origin":
        assert "sk-client-key" in auth  # the client's own credentials, untouched
    else:
        assert "sk-client-key" not in auth
        if kind == "openai":
            assert rec.headers["authorization"] == "Bearer sk-glider-oai"
        if kind == "anthropic":
            assert rec.headers["x-api-key"] == "sk-glider-claude"


@pytest.mark.parametrize("kind", list(ROUTES))
def test_anthropic_sdk_non_streaming(glider: GliderServer, fake: FakeUpstream, kind: str) -> None:
    word = ROUTES[kind][0]
    raw = _anthropic(glider).messages.with_raw_response.create(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": f"say hi {word}"}]
    )
    msg = raw.parse()
    assert msg.content[0].type == "text"
    assert "hello from fake" in msg.content[0].text
    assert msg.stop_reason == "end_turn"
    assert msg.usage.input_tokens > 0
    assert raw.headers["x-glider-route"].startswith(ROUTES[kind][2] + "; rule=")
    _check_upstream(fake, kind, "anthropic")


@pytest.mark.parametrize("kind", list(ROUTES))
def test_anthropic_sdk_streaming(glider: GliderServer, fake: FakeUpstream, kind: str) -> None:
    word = ROUTES[kind][0]
    with _anthropic(glider).messages.stream(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": f"say hi {word}"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert "hello from fake" in text
    assert final.stop_reason == "end_turn"
    _check_upstream(fake, kind, "anthropic")


@pytest.mark.parametrize("kind", list(ROUTES))
def test_anthropic_sdk_tool_round_trip(glider: GliderServer, fake: FakeUpstream, kind: str) -> None:
    word = ROUTES[kind][0]
    client = _anthropic(glider)
    messages: list[dict[str, object]] = [{"role": "user", "content": f"run it GLIDER_TOOL:Bash {word}"}]
    with client.messages.stream(model="m", max_tokens=64, messages=messages, tools=[SHELL_TOOL]) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    call = next(b for b in first.content if b.type == "tool_use")
    assert call.name == "Bash"
    assert call.input == {"command": "echo glider-tool-ok"}
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "glider-tool-ok"}],
        },
    ]
    second = client.messages.create(model="m", max_tokens=64, messages=messages, tools=[SHELL_TOOL])
    assert second.stop_reason == "end_turn"
    # The tool result went back to the same side (Ollama has no call ids; the others get their own
    # back: the client saw a toolu_-shaped id, `toolu_g_<backend id>` for a backend of another protocol).
    assert call.id.startswith("toolu_")
    sent = fake.requests[-1].raw.decode()
    assert "glider-tool-ok" in sent
    if kind != "ollama":
        assert json.dumps(call.id.removeprefix("toolu_g_")) in sent
    _check_upstream(fake, kind, "anthropic")


@pytest.mark.parametrize("kind", list(ROUTES))
def test_openai_chat_sdk(glider: GliderServer, fake: FakeUpstream, kind: str) -> None:
    word = ROUTES[kind][0]
    client = _openai(glider)
    out = client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": f"hi {word}"}])
    assert "hello from fake" in (out.choices[0].message.content or "")
    assert out.choices[0].finish_reason == "stop"
    _check_upstream(fake, kind, "openai_chat")
    chunks = list(
        client.chat.completions.create(
            model="gpt-5",
            messages=[{"role": "user", "content": f"hi {word}"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "hello from fake" in text
    assert any(c.usage is not None for c in chunks)


@pytest.mark.parametrize("kind", list(ROUTES))
def test_openai_chat_sdk_tools(glider: GliderServer, fake: FakeUpstream, kind: str) -> None:
    word = ROUTES[kind][0]
    client = _openai(glider)
    stream = client.chat.completions.create(
        model="gpt-5",
        messages=[{"role": "user", "content": f"GLIDER_TOOL:Bash {word}"}],
        tools=[SHELL_FN],  # type: ignore[list-item]
        stream=True,
    )
    args = ""
    name = None
    call_id = None
    finish = None
    for c in stream:
        if not c.choices:
            continue
        for tc in c.choices[0].delta.tool_calls or []:
            name = tc.function.name if tc.function and tc.function.name else name
            call_id = tc.id or call_id
            args += (tc.function.arguments if tc.function else None) or ""
        finish = c.choices[0].finish_reason or finish
    assert name == "Bash" and finish == "tool_calls"
    assert json.loads(args) == {"command": "echo glider-tool-ok"}
    _check_upstream(fake, kind, "openai_chat")


@pytest.mark.parametrize("kind", ["ollama", "openai", "anthropic", "origin"])
def test_openai_responses_sdk(glider: GliderServer, fake: FakeUpstream, kind: str) -> None:
    word = ROUTES[kind][0]
    client = _openai(glider)
    out = client.responses.create(model="gpt-5", input=f"hi {word}")
    assert "hello from fake" in out.output_text
    _check_upstream(fake, kind, "openai_responses")
    with client.responses.stream(model="gpt-5", input=f"hi {word}") as stream:
        final = stream.get_final_response()
    assert "hello from fake" in final.output_text
    with client.responses.stream(
        model="gpt-5",
        input=f"GLIDER_TOOL:Bash {word}",
        tools=[SHELL_RESP_FN],  # type: ignore[list-item]
    ) as stream:
        final = stream.get_final_response()
    calls = [o for o in final.output if o.type == "function_call"]
    assert calls and calls[0].name == "Bash"
    assert json.loads(calls[0].arguments) == {"command": "echo glider-tool-ok"}


def test_count_tokens_asks_an_anthropic_backend_and_estimates_otherwise(
    glider: GliderServer, fake: FakeUpstream
) -> None:
    client = _anthropic(glider)
    # A count carries no command (a client counts text it did not type): a pattern routes this one.
    asked = client.messages.count_tokens(
        model="m", messages=[{"role": "user", "content": "count count-by-claude"}]
    )
    assert asked.input_tokens == 42  # the fake's answer
    assert fake.requests[-1].path == "/v1/messages/count_tokens"
    n_before = len(fake.requests)
    estimated = client.messages.count_tokens(
        model="m", messages=[{"role": "user", "content": "count /local"}]
    )
    assert estimated.input_tokens >= 1
    assert len(fake.requests) == n_before  # ollama cannot count: estimated locally


def test_models_list_in_both_shapes(glider: GliderServer) -> None:
    a = _anthropic(glider).models.list()
    assert any(m.id == "glider-auto" for m in a.data)
    o = _openai(glider).models.list()
    assert any(m.id == "glider-auto" for m in o.data)
