"""The Gemini API on a live Glider: routed like every client, translated for a local backend, passed
through unchanged to the (strict, Gemini-shaped) origin fake, countTokens, errors in Google's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_upstream import FakeUpstream
from server.glider_harness import GliderServer, backends_yaml

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

CONTEXT = "<session_context>\nThis is the Gemini CLI.\n</session_context>"
SHELL = {
    "functionDeclarations": [
        {
            "name": "run_shell_command",
            "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
}
KEY = {"x-goog-api-key": "sk-test-gemini"}


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GliderServer]:
    tmp = tmp_path_factory.mktemp("gemini")
    with GliderServer(backends_yaml(fake.url), tmp) as g:
        yield g


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def post(
    g: GliderServer, model: str, method: str, body: dict[str, Any], query: str = "", **kw: Any
) -> httpx.Response:
    url = f"{g.url}/v1beta/models/{model}:{method}" + (f"?{query}" if query else "")
    return httpx.post(
        url, content=json.dumps(body), headers={**KEY, **kw.pop("headers", {})}, timeout=20, **kw
    )


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": t} for t in texts]}


def sse(r: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(b[len("data: ") :]) for b in r.text.replace("\r\n", "\n").split("\n\n") if b.strip()]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(p.get("text", "") for e in events for p in e["candidates"][0]["content"]["parts"])


def test_a_local_turn_is_translated_for_ollama(glider: GliderServer, fake: FakeUpstream) -> None:
    r = post(
        glider,
        "gemini-3.8-flash",
        "streamGenerateContent",
        {"contents": [user(CONTEXT, "say hi /local")], "tools": [SHELL]},
        "alt=sse",
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse(r)
    assert text_of(events) == "hello from fake ollama qwen-local"
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"
    # the client sees the model it asked for; the route header names the one that answered
    assert {e["modelVersion"] for e in events} == {"gemini-3.8-flash"}
    assert r.headers["x-glider-route"] == "local; rule=explicit_local; backend=ollama; model=qwen-local"
    (sent,) = fake.requests
    assert sent.path == "/api/chat" and "x-goog-api-key" not in sent.headers  # the client's key stays here
    assert sent.body["messages"][-1]["content"].endswith("say hi /local")
    decided = glider.wait_for("FulfilledLocal")
    assert decided and decided[-1]["input_tokens"] == 21


def test_a_cloud_turn_goes_to_google_unchanged(glider: GliderServer, fake: FakeUpstream) -> None:
    body = {
        "contents": [user(CONTEXT, "design the system /cloud")],
        "tools": [SHELL],
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "HIGH"}},
    }
    raw = json.dumps(body)
    r = post(glider, "gemini-3.8-flash", "streamGenerateContent", body, "alt=sse&key=sk-q")
    assert r.status_code == 200, r.text
    assert text_of(sse(r)) == "hello from fake gemini gemini-3.8-flash"
    (sent,) = fake.requests
    assert sent.path == "/v1beta/models/gemini-3.8-flash:streamGenerateContent"
    assert sent.raw.decode() == raw  # byte for byte: no model or stream field added
    assert sent.query == {"alt": "sse", "key": "sk-q"} and sent.headers["x-goog-api-key"] == "sk-test-gemini"
    assert r.headers["x-glider-route"].startswith(
        "cloud; rule=explicit_cloud; backend=origin; model=gemini-3.8-flash"
    )
    out = glider.wait_for("OriginPassthrough")[-1]
    assert (out["input_tokens"], out["output_tokens"]) == (21, 9)


def test_the_classifier_is_answered_locally_with_json_and_joins_no_new_turn(
    glider: GliderServer, fake: FakeUpstream
) -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
    }
    config = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    before = glider.types().count("TurnOpened")
    r = post(
        glider,
        "gemini-3.5-flash-lite",
        "generateContent",
        {"contents": [user(CONTEXT), user("fix the typo")], "generationConfig": config},
    )
    assert r.status_code == 200, r.text
    answer = json.loads(r.json()["candidates"][0]["content"]["parts"][0]["text"])
    assert answer == {"complexity_reasoning": "simple", "complexity_score": 10}
    (sent,) = fake.requests
    assert sent.path == "/api/chat" and sent.body["format"]["properties"]["complexity_score"] == {
        "type": "integer"
    }
    assert glider.types().count("TurnOpened") == before
    decided = [d for t, d, _ in glider.events if t == "RouteDecided"][-1]
    assert decided["family"]["kind"] == "utility" and decided["target"] == "local"


@pytest.mark.parametrize("word", ["/local", "/cloud"])
def test_a_tool_result_goes_back_to_the_side_that_issued_the_call(
    glider: GliderServer, fake: FakeUpstream, word: str
) -> None:
    first = [user(CONTEXT, f"run GLIDER_TOOL:run_shell_command {word}")]
    r = post(
        glider, "gemini-3.8-flash", "streamGenerateContent", {"contents": first, "tools": [SHELL]}, "alt=sse"
    )
    calls = [
        p["functionCall"]
        for e in sse(r)
        for p in e["candidates"][0]["content"]["parts"]
        if "functionCall" in p
    ]
    assert [c["name"] for c in calls] == ["run_shell_command"]
    # Gemini CLI echoes the call (adding an id when the reply had none) and answers it
    cid = calls[0].get("id") or "run_shell_command_1796115680969_0"
    echoed = {"functionCall": {**calls[0], "id": cid}, "thoughtSignature": "skip_thought_signature_validator"}
    answer = {
        "functionResponse": {"id": cid, "name": "run_shell_command", "response": {"output": "glider-tool-ok"}}
    }
    # the person's word is in the first message only; the rules alone would send this elsewhere
    follow = [
        user(CONTEXT, "run it"),
        {"role": "model", "parts": [echoed]},
        {"role": "user", "parts": [answer]},
    ]
    follow[0] = first[0]
    glider.wait_for("ToolCallsIssued", 1)
    r2 = post(
        glider, "gemini-3.8-flash", "streamGenerateContent", {"contents": follow, "tools": [SHELL]}, "alt=sse"
    )
    assert r2.status_code == 200, r2.text
    side = "local" if word == "/local" else "cloud"
    assert r2.headers["x-glider-route"].startswith(f"{side};")
    issued, issued_turn = [(d, t) for k, d, t in glider.events if k == "ToolCallsIssued"][-1]
    decided, turn = [(d, t) for k, d, t in glider.events if k == "RouteDecided"][-1]
    cid_issued = issued["calls"][0]["id"]
    assert decided["family"]["kind"] == "tool_result" and turn == issued_turn
    assert decided["family"]["link"] == f"answers tool call {cid_issued} issued in this family"
    assert decided["family"]["answered"] == [cid_issued]
    paths = [q.path for q in fake.requests]
    assert len(set(paths)) == 1 and len(paths) == 2
    if word == "/local":
        assert json.dumps(
            {"role": "tool", "tool_name": "run_shell_command", "content": "glider-tool-ok"}
        ) in json.dumps(fake.requests[-1].body)


def test_count_tokens_is_asked_of_google_or_estimated(glider: GliderServer, fake: FakeUpstream) -> None:
    fake.set_reply(count_tokens=77)
    # A count carries no command (the client counts text it did not type): its size routes it.
    big = "how many " + "word " * 9000
    r = post(glider, "gemini-3.8-flash", "countTokens", {"contents": [user(big)]})
    assert r.json() == {"totalTokens": 77} and "x-glider-estimate" not in r.headers
    assert fake.requests[-1].path == "/v1beta/models/gemini-3.8-flash:countTokens"
    wrapped = {
        "generateContentRequest": {
            "model": "models/gemini-3.8-flash",
            "contents": [user("how many /local " + "x" * 400)],
        }
    }
    r = post(glider, "gemini-3.8-flash", "countTokens", wrapped)
    assert r.headers["x-glider-estimate"] == "1" and r.json()["totalTokens"] > 0
    assert len(fake.requests) == 1


def test_errors_are_in_googles_shape(glider: GliderServer, fake: FakeUpstream) -> None:
    r = post(glider, "gemini-3.8-flash", "embedContent", {"contents": [user("x")]})
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"
    r = post(glider, "gemini-3.8-flash", "generateContent", {"contents": "nope"})
    assert r.status_code == 400 and r.json()["error"] == {
        "code": 400,
        "message": r.json()["error"]["message"],
        "status": "INVALID_ARGUMENT",
    }
    # the strict fake refuses an unknown field; its 400 reaches the client as it was
    r = post(glider, "gemini-3.8-flash", "generateContent", {"contents": [user("hi /cloud")], "bogus": 1})
    assert r.status_code == 400 and "Unknown name" in r.json()["error"]["message"]
    fake.set_fault(status=503, message="overloaded", paths=("/api/chat",))
    r = post(glider, "gemini-3.8-flash", "generateContent", {"contents": [user("hi")]})
    # the local failure (of a turn no `/local` holds on the machine) fell back to the origin (Google),
    # asked for the client's model, not the local one
    assert r.status_code == 200, r.text
    assert "fallback-from=ollama" in r.headers["x-glider-route"]
    assert fake.requests[-1].path == "/v1beta/models/gemini-3.8-flash:generateContent"


def test_a_stream_without_alt_sse_is_a_json_array(glider: GliderServer, fake: FakeUpstream) -> None:
    r = post(glider, "gemini-3.8-flash", "streamGenerateContent", {"contents": [user("hi /local")]})
    assert r.headers["content-type"].startswith("application/json")
    assert text_of(r.json()) == "hello from fake ollama qwen-local"


def test_the_real_key_never_reaches_the_event_log(tmp_path: Path, fake: FakeUpstream) -> None:
    with GliderServer(
        backends_yaml(fake.url), tmp_path, record=False, environ={"GLIDER_HOME": str(tmp_path / "h")}
    ) as g:
        post(g, "gemini-3.8-flash", "generateContent", {"contents": [user("hi /cloud")]}, "key=sk-secret-q")
    logged = "".join(p.read_text() for p in (tmp_path / "h").rglob("*.jsonl"))
    assert "RouteDecided" in logged and "sk-secret-q" not in logged and "sk-test-gemini" not in logged
