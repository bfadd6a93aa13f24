"""protocol.cursor: Connect framing, the messages, classification by field, the answer's frames."""

from __future__ import annotations

import gzip
import json

import cursor_wire as wire
import pytest

from glider_cli.protocol.cursor import classify as c
from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.cursor.framing import FrameReader, end_stream, frame, split

CID = "5d0c0d3e-1111-4a4a-9b9b-000000000001"


# ------------------------------------------------------------------ framing


def test_reader_splits_envelopes_across_reads_and_within_one_read() -> None:
    a, b, c3 = wire.text_frame("hel"), wire.text_frame("lo"), wire.end_frame()
    stream = a + b + c3
    reader = FrameReader()
    got = []
    # One byte at a time: each envelope comes out exactly when its last byte is in.
    for i in range(len(stream)):
        out = reader.feed(stream[i : i + 1])
        got += out
        if i + 1 in (len(a), len(a + b), len(stream)):
            assert len(out) == 1
        else:
            assert out == []
    assert [e.raw for e in got] == [a, b, c3]
    assert got[2].end_stream and got[2].trailer() == {}
    # All at once: three envelopes from one read.
    assert [e.raw for e in FrameReader().feed(stream)] == [a, b, c3]


def test_truncated_frame_is_kept_not_dropped() -> None:
    whole = wire.text_frame("hello")
    frames, rest = split(whole + whole[:7])
    assert [f.raw for f in frames] == [whole]
    assert rest == whole[:7]


def test_gzip_flag_and_bad_gzip() -> None:
    payload = bytes.fromhex("0a026a00")
    good = FrameReader().feed(frame(gzip.compress(payload), 1))[0]
    assert good.compressed and good.message() == payload
    bad = FrameReader().feed(frame(b"not gzip at all", 1))[0]
    assert bad.message() is None


def test_end_stream_trailer() -> None:
    env = FrameReader().feed(end_stream({"code": "unavailable", "message": "x"}))[0]
    assert env.end_stream
    assert env.trailer() == {"error": {"code": "unavailable", "message": "x"}}
    assert FrameReader().feed(frame(b"{nope", 2))[0].trailer() is None


# ------------------------------------------------------------------ writers: the fact sheet's bytes


def test_writer_bytes_match_observed_shapes() -> None:
    assert w.heartbeat() == frame(bytes.fromhex("0a026a00"))
    assert w.turn_ended() == frame(bytes.fromhex("0a027200"))
    assert w.text_delta("hi") == wire.text_frame("hi")
    assert w.token_delta(3) == wire.token_frame(3)
    ended = pb.AgentServerMessage.FromString(FrameReader().feed(w.turn_ended(12, 5))[0].payload)
    assert ended.interaction_update.turn_ended.input_tokens == 12
    assert ended.interaction_update.turn_ended.output_tokens == 5
    assert json.loads(w.unary_error("unavailable", "down")) == {"code": "unavailable", "message": "down"}


# ------------------------------------------------------------------ appends and RunSSE ids


@pytest.mark.parametrize("binary", [False, True])
def test_decode_append_hex_and_binary(binary: bool) -> None:
    msg = wire.run_request(CID, wire.user_action("hello"))
    body = wire.append_body("rid-1", 0, msg, binary=binary)
    app = c.decode_append(body)
    assert app is not None and app.request_id == "rid-1" and app.seqno == 0 and app.message == msg
    app2 = c.decode_append(gzip.compress(wire.append_body("rid-1", 7, msg)), "gzip")
    assert app2 is not None and app2.seqno == 7


def test_decode_append_rejects_garbage() -> None:
    assert c.decode_append(b"\xff\xff\xff") is None
    assert c.decode_append(b"not gzip", "gzip") is None
    assert c.decode_append(wire.ld(1, "00")) is None  # no request id
    odd = c.decode_append(wire.ld(1, "zz") + wire.ld(2, wire.ld(1, "r")))
    assert odd is not None and odd.message is None


def test_run_sse_id_plain_and_gzip() -> None:
    assert c.run_sse_id(wire.run_sse_body("rid-9")) == "rid-9"
    assert c.run_sse_id(wire.run_sse_body("rid-9", compress=True)) == "rid-9"
    assert c.run_sse_id(b"\x00\x00") is None


# ------------------------------------------------------------------ classification by field


def test_new_user_turn_with_rich_text_and_hints() -> None:
    got = c.classify(wire.run_request(CID, wire.user_action("fix the bug", mode=2), max_mode=True))
    assert got.kind == "new_turn" and got.text == "fix the bug" and got.rich_text
    assert got.conversation_id == CID and got.mode == "ask" and got.max_mode is True
    assert got.hint == {"max_mode": True, "mode": "ask"}


def test_cli_turn_without_rich_text_is_a_new_turn() -> None:
    got = c.classify(wire.run_request(CID, wire.user_action("hi", rich=False)))
    assert got.kind == "new_turn" and not got.rich_text


def test_simulated_message_is_a_follow_on_whatever_its_words() -> None:
    msg = wire.run_request(CID, wire.user_action("/local please", simulated=True, reason=1))
    assert c.classify(msg).kind == "follow_on"


@pytest.mark.parametrize("number", [2, 7, 8, 12, 13, 14])
def test_follow_on_actions(number: int) -> None:
    assert c.classify(wire.run_request(CID, wire.action(number))).kind == "follow_on"


def test_summary_is_by_field_not_wording() -> None:
    assert c.classify(wire.run_request(CID, wire.action(4))).kind == "summary"
    # "summarize the conversation" typed by a person is a new turn.
    worded = c.classify(wire.run_request(CID, wire.user_action("summarize the conversation so far")))
    assert worded.kind == "new_turn"


def test_subagent_by_field_or_header() -> None:
    sub = c.classify(wire.run_request("child", wire.user_action("look"), subagent_type="explore"))
    assert sub.kind == "subagent" and sub.subagent_type == "explore"
    by_header = c.classify(wire.run_request("child", wire.user_action("look")), {"x-parent-request-id": "p"})
    assert by_header.kind == "subagent"


def test_run_traffic_and_in_run_messages() -> None:
    assert c.classify(wire.heartbeat()).kind == "run_traffic"
    assert c.classify(wire.kv_ack(3)).kind == "run_traffic"
    inrun = c.classify(wire.conversation_action(wire.user_action("and also this")))
    assert inrun.kind == "new_turn" and inrun.in_run


def test_unknown_and_undecodable_pass_through() -> None:
    assert c.classify(bytes.fromhex("0a03666f6f")).kind == "passthrough"  # seen at session start
    assert c.classify(None).kind == "passthrough"
    assert c.classify(bytes.fromhex("42021234")).kind == "passthrough"  # prewarm with fields
    blob = c.classify(wire.run_request(CID, wire.user_action("", blob=True)))
    assert blob.kind == "passthrough" and "blob" in blob.why


def test_unknown_fields_do_not_change_the_reading() -> None:
    extra = wire.ld(999, b"future") + wire.vi(23, 1)
    got = c.classify(wire.run_request(CID, wire.user_action("hello"), unknown=extra))
    assert got.kind == "new_turn" and got.text == "hello"
    parsed = pb.AgentClientMessage.FromString(wire.run_request(CID, wire.user_action("x"), unknown=extra))
    # Kept, not dropped: the unknown fields come back out when re-serialized.
    assert extra in parsed.SerializeToString()


def test_rpc_paths_and_titles() -> None:
    assert c.rpc("/agent.v1.AgentService/RunSSE") == "run_sse"
    assert c.rpc("/aiserver.v1.BidiService/BidiAppend") == "append"
    assert c.rpc("/agent.v1.AgentService/NameAgent") == "name_agent"
    assert c.rpc("/aiserver.v1.ServerConfigService/GetServerConfig") == "other"
    assert c.name_agent_text(wire.name_agent("fix bug")) == "fix bug"


def test_name_tab_is_read_as_its_own_request() -> None:
    # NameTabRequest: 1 messages (ConversationMessage: 1 text, 2 type HUMAN = 1 / AI = 2), 2 is_project.
    def message(text: str, kind: int) -> bytes:
        return wire.ld(1, wire.ld(1, text) + wire.vi(2, kind))

    body = (
        message("/local fix the parser", 1)
        + message("Done.", 2)
        + message("and the tests", 1)
        + wire.vi(2, 1)
    )
    assert c.rpc(c.NAME_TAB) == "name_agent"
    assert c.title_text(c.NAME_TAB, body) == "and the tests"
    assert c.title_text(c.NAME_TAB, gzip.compress(body), "gzip") == "and the tests"
    # Read as a NameAgentRequest it would be a message's bytes taken for a string.
    assert c.name_agent_text(body) != "and the tests"
    assert c.title_text(c.NAME_TAB, message("only the AI spoke", 2)) is None  # passes through unread
    assert c.title_text(c.NAME_TAB, b"\xff\xff") is None
    assert c.title_text("/agent.v1.AgentService/NameAgent", wire.name_agent("fix bug")) == "fix bug"
    assert pb.NameTabResponse.FromString(w.name_tab("Parser fix", "why")).name == "Parser fix"
