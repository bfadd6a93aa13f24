"""Gemini requests as Glider reads them: the URL target, the framed body, the ChatRequest and the
linking of functionResponse parts to the calls they answer (by name and order)."""

from __future__ import annotations

from typing import Any

import pytest

from glider_cli.errors import RequestError
from glider_cli.protocol import gemini_request as gr
from glider_cli.protocol.parse import guess_protocol, parse_request, protocol_for_path
from glider_cli.protocol.reply_tap import ReplyTap, whole_reply_calls
from glider_cli.turns.request_kinds import answered_calls, is_utility_request

CONTEXT = "<session_context>\nThis is the Gemini CLI. Today's date is ... /local/tree ...\n</session_context>"
SHELL = {"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {"type": "object"}}]}


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": t} for t in texts]}


def call(name: str, **extra: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": {"command": "echo hi"}, **extra}}


def answer(name: str, **extra: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"output": "hi"}, **extra}}


def chat(contents: list[Any], **body: Any) -> Any:
    framed = gr.frame({"contents": contents, **body}, "gemini-3.8-flash", "streamGenerateContent", "alt=sse")
    return parse_request("gemini", framed, {"x-goog-api-key": "k"})


def test_the_target_is_read_from_the_path() -> None:
    assert gr.parse_target("/v1beta/models/gemini-3.8-flash:streamGenerateContent") == (
        "v1beta",
        "gemini-3.8-flash",
        "streamGenerateContent",
    )
    assert gr.parse_target("/v1/models/m:countTokens") == ("v1", "m", "countTokens")
    assert gr.parse_target("/v1beta/models/m:embedContent") is None
    assert gr.parse_target("/v1/messages") is None
    assert gr.with_model("/v1beta/models/a:generateContent", "b") == "/v1beta/models/b:generateContent"
    assert protocol_for_path("/v1beta/models/a:streamGenerateContent?alt=sse") == "gemini"
    assert guess_protocol({"contents": []}) == "gemini"


def test_the_framed_body_carries_model_stream_and_alt() -> None:
    body = {"contents": [user("hi")]}
    framed = gr.frame_request(body, "/v1beta/models/gemini-x:streamGenerateContent", "alt=sse&key=k")
    assert framed == {**body, "model": "gemini-x", "stream": True, "alt": "sse"}
    assert gr.frame_request(body, "/v1beta/models/g:generateContent", "")["stream"] is False
    assert gr.frame_request(body, "/v1beta/models/g:streamGenerateContent", "")["alt"] == "json"
    wrapped = {"generateContentRequest": {"model": "models/g", "contents": [user("count me")]}}
    counted = gr.frame(wrapped, "g", "countTokens")
    assert counted["contents"] == [user("count me")] and counted["model"] == "g"
    assert body == {"contents": [user("hi")]}  # the client's body is not modified


def test_the_chat_request_of_a_gemini_cli_turn() -> None:
    req = chat(
        [user(CONTEXT, "say hi /local")],
        systemInstruction={"parts": [{"text": "You are Gemini CLI"}]},
        tools=[SHELL, {"googleSearch": {}}],
        generationConfig={
            "temperature": 1,
            "maxOutputTokens": 512,
            "thinkingConfig": {"thinkingLevel": "HIGH"},
        },
    )
    assert (req.protocol, req.model, req.stream) == ("gemini", "gemini-3.8-flash", True)
    assert req.system == "You are Gemini CLI"
    # the session context is not what the person wrote (it lists directories: `/local/tree`)
    assert req.last_user_text == "say hi /local" and req.is_new_user_message
    assert req.tool_names == ("run_shell_command", "googleSearch")
    assert (req.temperature, req.max_tokens) == (1.0, 512)
    assert req.estimated_tokens > len(CONTEXT) // 4
    assert req.session_id is not None and req.session_id.startswith("gemini-")
    assert req.headers["x-goog-api-key"] == "k"


def test_the_router_classifier_shares_the_session_of_its_main_request() -> None:
    main = chat([user(CONTEXT, "say hi")], tools=[SHELL])
    schema = {"type": "OBJECT", "properties": {"complexity_score": {"type": "INTEGER"}}}
    body = {"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
    classifier = chat([user(CONTEXT), user("say hi")], **body)
    assert classifier.session_id == main.session_id
    assert is_utility_request(classifier, body) and not is_utility_request(main, {})
    other = chat([user(CONTEXT, "something else")], tools=[SHELL])
    assert other.session_id != main.session_id


def test_function_responses_answer_calls_by_name_and_order() -> None:
    contents = [
        user(CONTEXT, "run two"),
        {"role": "model", "parts": [call("read_file"), call("run_shell_command"), call("read_file")]},
        {"role": "user", "parts": [answer("run_shell_command"), answer("read_file"), answer("read_file")]},
    ]
    req = chat(contents, tools=[SHELL])
    issued = [c.id for c in req.messages[1].tool_calls]
    assert len(set(issued)) == 3
    assert req.messages[-1].tool_results == (issued[1], issued[0], issued[2])
    assert sorted(answered_calls(req)) == sorted(issued)
    assert req.messages[-1].role == "user" and req.messages[-1].content == ""
    # the ids do not depend on the ids Gemini CLI adds to echoed calls
    echoed = [
        contents[0],
        {
            "role": "model",
            "parts": [
                call(n, id=f"{n}_1796115680969_{i}")
                for i, n in enumerate(["read_file", "run_shell_command", "read_file"])
            ],
        },
        contents[2],
    ]
    assert [c.id for c in chat(echoed, tools=[SHELL]).messages[1].tool_calls] == issued


def test_the_reply_tap_numbers_a_replys_calls_as_the_next_request_will() -> None:
    first = [user(CONTEXT, "run it")]
    req = chat(first, tools=[SHELL])
    reply = {"candidates": [{"content": {"role": "model", "parts": [call("run_shell_command")]}}]}
    tap = ReplyTap("gemini", True, request=req)
    tap.feed(b"data: " + __import__("json").dumps(reply).encode() + b"\r\n\r\n")
    (issued,) = tap.close()
    assert issued.name == "run_shell_command" and issued.arguments == {"command": "echo hi"}
    follow = chat(
        [
            *first,
            {"role": "model", "parts": [call("run_shell_command", id="x")]},
            {"role": "user", "parts": [answer("run_shell_command", id="x")]},
        ],
        tools=[SHELL],
    )
    assert answered_calls(follow) == (issued.id,)
    assert [c.id for c in whole_reply_calls("gemini", reply, request=req)] == [issued.id]


@pytest.mark.parametrize(
    "body",
    [
        {"contents": "hi"},
        {"contents": [["not an object"]]},
        {"contents": [{"role": "user", "parts": "hi"}]},
        {"contents": [{"role": "user", "parts": [{"text": 3}]}]},
        {"contents": [user("hi")], "generationConfig": {"temperature": "hot"}},
        {"contents": [user("hi")], "tools": {"functionDeclarations": []}},
    ],
)
def test_a_malformed_known_field_is_a_request_error(body: dict[str, Any]) -> None:
    with pytest.raises(RequestError):
        parse_request("gemini", gr.frame(body, "g", "generateContent"), {})


def test_unknown_fields_and_parts_are_skipped() -> None:
    req = chat(
        [{"role": "user", "parts": [{"executableCode": {"code": "1"}}, {"text": "go"}]}], cachedContent="c"
    )
    assert req.last_user_text == "go"
