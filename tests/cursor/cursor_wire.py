"""Cursor's wire shapes built byte by byte from the fact sheet's field numbers (not from Glider's
`.proto`), so the tests check Glider's decoder against the numbers, not against itself."""

from __future__ import annotations

import gzip
import json
import struct
import uuid


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(field: int, payload: bytes | str) -> bytes:
    """A length-delimited field (string, bytes, message)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(field << 3 | 2) + varint(len(data)) + data


def vi(field: int, value: int) -> bytes:
    """A varint field (int, bool, enum)."""
    return varint(field << 3) + varint(value)


def envelope(payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def user_message(
    text: str,
    *,
    rich: bool = True,
    simulated: bool = False,
    reason: int = 0,
    mode: int = 1,
    blob: bool = False,
) -> bytes:
    """UserMessage: 1 text, 2 message_id, 4 mode, 5 is_simulated_msg, 8 rich_text, 9 reason, 18 blob."""
    out = ld(1, text) + ld(2, str(uuid.uuid4())) + vi(4, mode)
    if simulated:
        out += vi(5, 1) + vi(9, reason)
    if rich:
        para = {"children": [{"text": text, "type": "text"}], "type": "paragraph"}
        out += ld(8, json.dumps({"root": {"children": [para], "type": "root"}}))
    if blob:
        out += ld(18, b"\x01" * 32)
    return out


def user_action(text: str, **kw: object) -> bytes:
    """ConversationAction.user_message_action(1) -> user_message(1), plus a request_context (2)."""
    uma = ld(1, user_message(text, **kw)) + ld(2, ld(1, "rules: be nice") + ld(7, "git status: clean"))
    return ld(1, uma)


def action(number: int, payload: bytes = b"") -> bytes:
    """A ConversationAction member by number (4 summarize, 7 execute_plan, 12 background_task...)."""
    return ld(number, payload)


def run_request(
    conversation_id: str,
    action_bytes: bytes | None,
    *,
    subagent_type: str | None = None,
    max_mode: bool | None = None,
    model_id: str = "default",
    unknown: bytes = b"",
) -> bytes:
    """AgentClientMessage.run_request(1): 2 action, 3 model_details, 5 conversation_id, 9 requested_model,
    11 subagent_type_name, 16 conversation_group_id."""
    details = ld(1, model_id) + (vi(7, 1 if max_mode else 0) if max_mode is not None else b"")
    state = ld(1, ld(1, b"\x00" * 8))  # conversation_state: a root prompt blob id
    run = state + ld(3, details) + ld(5, conversation_id)
    if action_bytes is not None:
        run += ld(2, action_bytes)
    run += ld(9, ld(1, model_id)) + ld(16, conversation_id)
    if subagent_type is not None:
        run += ld(11, subagent_type)
    run += unknown
    return ld(1, run)


def conversation_action(action_bytes: bytes) -> bytes:
    return ld(4, action_bytes)


def heartbeat() -> bytes:
    return bytes.fromhex("3a00")


def kv_ack(n: int) -> bytes:
    return ld(3, vi(1, n) + ld(3, b""))


def append_body(request_id: str, seqno: int, message: bytes, *, binary: bool = False) -> bytes:
    """BidiAppendRequest: 1 data (hex), 2 request_id{1}, 3 append_seqno (absent when 0), 4 data_binary."""
    out = ld(4, message) if binary else ld(1, message.hex())
    out += ld(2, ld(1, request_id))
    if seqno:
        out += vi(3, seqno)
    return out


def run_sse_body(request_id: str, *, compress: bool = False) -> bytes:
    payload = ld(1, request_id)
    if compress:
        return envelope(gzip.compress(payload), 1)
    return envelope(payload)


def name_agent(text: str) -> bytes:
    return ld(1, text)


def name_tab(*messages: tuple[str, int]) -> bytes:
    """NameTabRequest: 1 messages (ConversationMessage: 1 text, 2 type: HUMAN 1, AI 2), 2 is_project."""
    return b"".join(ld(1, ld(1, text) + vi(2, kind)) for text, kind in messages) + vi(2, 1)


# ---- server -> client, for the fake origin


def text_frame(text: str) -> bytes:
    return envelope(ld(1, ld(1, ld(1, text))))


def token_frame(n: int) -> bytes:
    return envelope(ld(1, ld(8, vi(1, n))))


def heartbeat_frame() -> bytes:
    return envelope(bytes.fromhex("0a026a00"))


def turn_ended_frame(input_tokens: int | None = None, output_tokens: int | None = None) -> bytes:
    """TurnEndedUpdate (InteractionUpdate 14), with the turn's counts when given (fields 1, 2)."""
    counts = (vi(1, input_tokens) if input_tokens is not None else b"") + (
        vi(2, output_tokens) if output_tokens is not None else b""
    )
    return envelope(ld(1, ld(14, counts)))


def end_frame(error: dict[str, str] | None = None) -> bytes:
    return envelope(json.dumps({} if error is None else {"error": error}).encode(), 2)
