"""The frames of a locally answered Cursor turn, in Cursor's own shapes (each one Connect envelope,
uncompressed): `heartbeat()`, `thinking(text)`, `text_delta(text)`, `token_delta(n)`,
`turn_ended(input_tokens, output_tokens)`, and `framing.end_stream()` to close the stream.
`name_agent(name)` a title (`NameAgentResponse`), `name_tab(name, reason)` one for the legacy
`NameTab` (`NameTabResponse`), `unary_error(code, message)` a Connect unary error
body (JSON), `EMPTY_APPEND_RESPONSE` the empty
`BidiAppendResponse` every held append is answered with when its turn stays on this machine."""

from __future__ import annotations

import json

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.framing import end_stream, frame

__all__ = [
    "EMPTY_APPEND_RESPONSE",
    "end_stream",
    "heartbeat",
    "name_agent",
    "name_tab",
    "text_delta",
    "thinking",
    "token_delta",
    "tokens_for",
    "turn_ended",
    "unary_error",
]

EMPTY_APPEND_RESPONSE = b""


def _update(u: pb.InteractionUpdate) -> bytes:
    msg = pb.AgentServerMessage()
    msg.interaction_update.CopyFrom(u)
    return frame(msg.SerializeToString())


def heartbeat() -> bytes:
    u = pb.InteractionUpdate()
    u.heartbeat.SetInParent()
    return _update(u)


def thinking(text: str) -> bytes:
    u = pb.InteractionUpdate()
    u.thinking_delta.text = text
    return _update(u)


def text_delta(text: str) -> bytes:
    u = pb.InteractionUpdate()
    u.text_delta.text = text
    return _update(u)


def tokens_for(text: str) -> int:
    """The token count a text delta is reported with (about four characters a token)."""
    return len(text) // 4 + 1


def token_delta(tokens: int) -> bytes:
    u = pb.InteractionUpdate()
    u.token_delta.tokens = tokens
    return _update(u)


def turn_ended(input_tokens: int | None = None, output_tokens: int | None = None) -> bytes:
    u = pb.InteractionUpdate()
    u.turn_ended.SetInParent()
    if input_tokens is not None:
        u.turn_ended.input_tokens = input_tokens
    if output_tokens is not None:
        u.turn_ended.output_tokens = output_tokens
    return _update(u)


def name_agent(name: str) -> bytes:
    """A NameAgentResponse (unary, bare message): the conversation's title."""
    return pb.NameAgentResponse(name=name).SerializeToString()


def name_tab(name: str, reason: str = "") -> bytes:
    """A NameTabResponse (the legacy `AiService/NameTab`, unary, bare message): the title and why."""
    return pb.NameTabResponse(name=name, reason=reason).SerializeToString()


def unary_error(code: str, message: str) -> bytes:
    return json.dumps({"code": code, "message": message}).encode()
