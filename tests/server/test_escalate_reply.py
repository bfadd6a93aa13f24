"""A local reply that cannot be used goes to the cloud before the client sees a byte of it (issue 42).

A live Glider between two strict fakes: a local OpenAI-compatible server (llama.cpp's wire) scripted to
answer each kind of unusable reply, and a cloud (`origin`) that answers as usual. A regex rule sends
"small task" local. For each client protocol (Anthropic, Chat, Responses, Gemini), streamed and not,
the client gets the cloud's answer, `x-glider-route` says why, and `Escalated` records the reason and
both backends; a usable local reply, an explicit `/local` and the pure-local profile stay local.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_upstream import FakeUpstream, ToolReply
from server.glider_harness import GliderServer

pytestmark = [pytest.mark.live]

SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
PROMPT = "small task: read the notes file"
GEMINI_CONTEXT = "<session_context>\nThis is the Gemini CLI.\n</session_context>"

# Each kind of unusable reply, as the local model sends it.
BAD = {
    "bad_tool_name": ToolReply("Delete", {"file_path": "notes.txt"}),
    "bad_tool_args": ToolReply("Read", {"path": "notes.txt"}),
    "bad_json": ToolReply("Read", '{"file_path": "notes.txt"'),
    "empty_reply": None,
}
REASON = {"bad_json": "bad_tool_args"}


def config(local_url: str, cloud_url: str, *, extra: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local_url}/v1', model: smol}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
        "routing:\n"
        "  local_backend: llama\n"
        "  cloud_backend: origin\n"
        "  rules:\n"
        "    - {name: small_local, priority: 90, trigger: {type: regex, pattern: 'small task'},"
        " action: {target: local}}\n" + extra
    )


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeUpstream, FakeUpstream]]:
    with (
        FakeUpstream(models=["smol"]) as local,
        FakeUpstream(models=["claude-x", "gpt-x", "gemini-x"]) as cloud,
    ):
        yield local, cloud


@pytest.fixture(scope="module")
def glider(
    fakes: tuple[FakeUpstream, FakeUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GliderServer]:
    local, cloud = fakes
    with GliderServer(config(local.url, cloud.url), tmp_path_factory.mktemp("esc")) as g:
        yield g


@pytest.fixture(autouse=True)
def _reset(fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    for fake in fakes:
        fake.reset()


def request(protocol: str, text: str, stream: bool) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(path, body, headers) of one client request offering the `Read` tool."""
    if protocol == "anthropic":
        body: dict[str, Any] = {
            "model": "claude-x",
            "max_tokens": 256,
            "stream": stream,
            "messages": [{"role": "user", "content": text}],
            "tools": [{"name": "Read", "description": "read a file", "input_schema": SCHEMA}],
        }
        return "/v1/messages", body, {"x-api-key": "sk-c", "anthropic-version": "2023-06-01"}
    auth = {"authorization": "Bearer sk-c"}
    if protocol == "openai_chat":
        tool = {"type": "function", "function": {"name": "Read", "parameters": SCHEMA}}
        body = {"model": "gpt-x", "stream": stream, "messages": [{"role": "user", "content": text}]}
        return "/v1/chat/completions", {**body, "tools": [tool]}, auth
    if protocol == "openai_responses":
        tool = {"type": "function", "name": "Read", "parameters": SCHEMA}
        body = {"model": "gpt-x", "stream": stream, "input": [{"role": "user", "content": text}]}
        return "/v1/responses", {**body, "tools": [tool]}, auth
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body = {
        "contents": [{"role": "user", "parts": [{"text": GEMINI_CONTEXT}, {"text": text}]}],
        "tools": [{"functionDeclarations": [{"name": "Read", "parametersJsonSchema": SCHEMA}]}],
    }
    return f"/v1beta/models/gemini-x:{method}", body, {"x-goog-api-key": "sk-g"}


def reply_text(protocol: str, r: httpx.Response, stream: bool) -> str:
    """The text the client got, whole or streamed, in its protocol."""
    if not stream:
        d = r.json()
        if protocol == "anthropic":
            return "".join(b.get("text", "") for b in d["content"])
        if protocol == "openai_chat":
            return str(d["choices"][0]["message"]["content"] or "")
        if protocol == "openai_responses":
            return "".join(c.get("text", "") for o in d["output"] for c in o.get("content") or [])
        return "".join(p.get("text", "") for p in d["candidates"][0]["content"]["parts"])
    out = []
    for block in r.text.replace("\r\n", "\n").split("\n\n"):
        data = [ln[6:] for ln in block.split("\n") if ln.startswith("data: ")]
        if not data or data[0] == "[DONE]":
            continue
        d = json.loads(data[0])
        if protocol == "anthropic" and d.get("type") == "content_block_delta":
            out.append(d["delta"].get("text", ""))
        elif protocol == "openai_chat" and d.get("choices"):
            out.append(d["choices"][0]["delta"].get("content") or "")
        elif protocol == "openai_responses" and d.get("type") == "response.output_text.delta":
            out.append(d["delta"])
        elif protocol == "gemini":
            out.extend(p.get("text", "") for p in d["candidates"][0]["content"]["parts"])
    return "".join(out)


def since(g: GliderServer, before: int, until: str) -> list[tuple[str, dict[str, Any]]]:
    """The events after the first `before`, once one of type `until` is among them (outcomes are
    written just after the reply is out)."""
    end = time.monotonic() + 10
    while True:
        new = [(t, d) for t, d, _ in g.events[before:]]
        if any(t == until for t, _ in new) or time.monotonic() > end:
            return new
        time.sleep(0.01)


def post(g: GliderServer, protocol: str, text: str, stream: bool) -> httpx.Response:
    path, body, headers = request(protocol, text, stream)
    return httpx.post(g.url + path, json=body, headers=headers, timeout=30)


PROTOCOLS = ["anthropic", "openai_chat", "openai_responses", "gemini"]
CLOUD_TEXT = {
    "anthropic": "hello from fake anthropic claude-x",
    "openai_chat": "hello from fake openai_chat gpt-x",
    "openai_responses": "hello from fake openai_responses gpt-x",
    "gemini": "hello from fake gemini gemini-x",
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", list(BAD))
def test_an_unusable_local_reply_is_answered_by_the_cloud(
    glider: GliderServer, fakes: tuple[FakeUpstream, FakeUpstream], kind: str, protocol: str, stream: bool
) -> None:
    local, cloud = fakes
    local.set_reply(text="", tool=BAD[kind])
    before = len(glider.events)
    r = post(glider, protocol, PROMPT, stream)
    assert r.status_code == 200, r.text
    reason = REASON.get(kind, kind)
    assert reply_text(protocol, r, stream) == CLOUD_TEXT[protocol]
    route = r.headers["x-glider-route"]
    assert route.startswith("cloud; rule=small_local; backend=origin")
    assert f"fallback-from=llama; escalated={reason}" in route
    assert [q.path for q in local.requests] == ["/v1/chat/completions"]  # asked once, not again
    assert len(cloud.requests) == 1
    new = since(glider, before, "OriginPassthrough")
    (esc,) = [d for t, d in new if t == "Escalated"]
    assert (esc["reason"], esc["from"], esc["to"], esc["rule"]) == (reason, "llama", "origin", "small_local")
    # The local attempt's tokens are spent: as reported, or (a stream left before its usage) estimated.
    spent = (esc["input_tokens"], esc["output_tokens"])
    assert spent == (21, 9) if "estimated" not in esc else min(spent) > 0
    assert {"from": "llama", "to": "origin", "reason": f"escalated: {reason}"} in [
        d for t, d in new if t == "FallbackUsed"
    ]
    (outcome,) = [d for t, d in new if t == "OriginPassthrough"]
    assert outcome["escalated"] == reason and outcome["fallback_from"] == "llama"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_usable_local_reply_stays_local(
    glider: GliderServer, fakes: tuple[FakeUpstream, FakeUpstream], protocol: str, stream: bool
) -> None:
    local, cloud = fakes
    local.set_reply(text="", tool=ToolReply("Read", {"file_path": "notes.txt"}))
    before = len(glider.events)
    r = post(glider, protocol, PROMPT, stream)
    assert r.status_code == 200, r.text
    assert r.headers["x-glider-route"].startswith("local; rule=small_local; backend=llama")
    assert "notes.txt" in r.text and not cloud.requests
    assert "Escalated" not in [t for t, _, _ in glider.events[before:]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_text_streams_as_before_and_is_not_checked_further(
    glider: GliderServer, fakes: tuple[FakeUpstream, FakeUpstream], protocol: str
) -> None:
    local, cloud = fakes
    # Text first, then a call to a tool that was never offered: the text has gone out, so it is passed on.
    local.set_reply(text="Let me look.", tool=ToolReply("Delete", {"file_path": "x"}))
    r = post(glider, protocol, PROMPT, True)
    assert r.status_code == 200 and reply_text(protocol, r, True) == "Let me look."
    assert r.headers["x-glider-route"].startswith("local;") and not cloud.requests


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_an_explicit_local_is_never_escalated(
    glider: GliderServer, fakes: tuple[FakeUpstream, FakeUpstream], stream: bool
) -> None:
    local, cloud = fakes
    local.set_reply(text="", tool=BAD["bad_tool_name"])
    before = len(glider.events)
    r = post(glider, "anthropic", "read the notes file /local", stream)
    assert r.status_code == 200
    assert r.headers["x-glider-route"].startswith("local; rule=explicit_local; backend=llama")
    assert "Delete" in r.text and not cloud.requests and len(local.requests) == 1
    assert "Escalated" not in [t for t, _, _ in glider.events[before:]]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_pure_local_retries_once_with_the_reason_then_passes_it_on(
    fakes: tuple[FakeUpstream, FakeUpstream], tmp_path: Path, stream: bool
) -> None:
    local, cloud = fakes
    local.set_reply(text="", tool=BAD["bad_tool_args"])
    with GliderServer(config(local.url, cloud.url, extra="  local_only: true\n"), tmp_path) as g:
        r = post(g, "anthropic", PROMPT, stream)
        assert r.status_code == 200
        assert r.headers["x-glider-route"].startswith("local; rule=small_local; backend=llama")
        assert "escalated" not in r.headers["x-glider-route"]
        assert not cloud.requests
        first, second = local.requests  # once more, not again and again
        stated = second.body["messages"][-1]
        assert stated["role"] == "user" and "could not be used" in stated["content"]
        assert "'Read' lacks its required file_path" in stated["content"]
        assert second.body["messages"][:-1] == first.body["messages"]
        (esc,) = g.wait_for("Escalated")
        assert (esc["reason"], esc["from"], esc["to"]) == ("bad_tool_args", "llama", "llama")


def test_escalate_off_passes_the_reply_on(fakes: tuple[FakeUpstream, FakeUpstream], tmp_path: Path) -> None:
    local, cloud = fakes
    local.set_reply(text="")
    extra = "  escalate: {on_invalid_reply: false}\n"
    with GliderServer(config(local.url, cloud.url, extra=extra), tmp_path) as g:
        r = post(g, "openai_chat", PROMPT, False)
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == ""
        assert r.headers["x-glider-route"].startswith("local;") and not cloud.requests
