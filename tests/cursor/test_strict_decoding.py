"""Every frame the Cursor door writes, decoded as Cursor's client decodes it: protobuf-es under node
against the project's cursor.proto (`strict_decoder`). Python's protobuf reads a field written with
the wrong wire type without a word, so these tests are the ones that can see it; and the proto itself
is checked field for field against the fact sheet's §6c (numbers, types, optional, oneofs)."""

from __future__ import annotations

from typing import Any

import cursor_wire as wire
from google.protobuf import descriptor_pb2
from strict_decoder import SERVER, StrictDecoder

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor import exec as ex
from glider_cli.protocol.cursor import steps
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.cursor.framing import FrameReader

ld, vi = wire.ld, wire.vi


def payload(frame_bytes: bytes) -> bytes:
    [env] = FrameReader().feed(frame_bytes)
    assert not env.end_stream
    return env.payload


def decode(strict: StrictDecoder, frames: list[bytes]) -> list[Any]:
    """The protobuf-es JSON form of each frame; fails the test on the first frame it rejects."""
    got = strict.decode(SERVER, [payload(f) for f in frames])
    for f, g in zip(frames, got, strict=True):
        assert g.ok, f"protobuf-es rejects {f.hex()}: {g.error}"
    return [g.json for g in got]


def answer(**member: bytes) -> pb.ExecClientMessage:
    """An ExecClientMessage from the fact sheet's bytes: answer(read_result=b"...")."""
    [(name, data)] = member.items()
    number = pb.ExecClientMessage.DESCRIPTOR.fields_by_name[name].number
    return pb.ExecClientMessage.FromString(vi(1, 1) + ld(number, data))


def members(tc: pb.ToolCall) -> list[str]:
    return [f.name for f, _ in tc.ListFields()]


# ------------------------------------------------------------------ every frame the door writes


def test_text_turn_frames_decode_strictly(strict: StrictDecoder) -> None:
    got = decode(
        strict,
        [w.heartbeat(), w.thinking(" "), w.text_delta("héllo"), w.token_delta(3), w.turn_ended(120, 7)],
    )
    assert got[0] == {"interactionUpdate": {"heartbeat": {}}}
    assert got[2] == {"interactionUpdate": {"textDelta": {"text": "héllo"}}}
    assert got[4] == {"interactionUpdate": {"turnEnded": {"inputTokens": "120", "outputTokens": "7"}}}
    assert decode(strict, [w.turn_ended()]) == [{"interactionUpdate": {"turnEnded": {}}}]


def _requests() -> dict[str, ex.Request]:
    return {
        "read": ex.request("read", {"path": "a.py", "offset": 3, "limit": 10}, "c-read"),
        "grep": ex.request("grep", {"pattern": "x+", "path": "src", "glob": "*.py"}, "c-grep"),
        "ls": ex.request("ls", {"path": "."}, "c-ls"),
        "shell": ex.request("shell", {"command": "make test", "timeout": 30}, "c-shell"),
        "write": ex.request("write", {"path": "n.txt", "content": "one\ntwo\n"}, "c-write"),
        "edit": ex.request("edit", {"path": "a.py", "old_text": "a", "new_text": "b"}, "c-edit"),
    }


def test_exec_requests_and_aborts_decode_strictly(strict: StrictDecoder) -> None:
    reqs = _requests()
    got = decode(strict, [r.frame(n, f"exec-{n}") for n, r in enumerate(reqs.values(), 1)] + [ex.abort(4)])
    execs = [g["execServerMessage"] for g in got[:-1]]
    assert execs[0]["readArgs"] == {"path": "a.py", "toolCallId": "c-read", "offset": 3, "limit": 10}
    assert execs[1]["grepArgs"]["outputMode"] == "files_with_matches"
    # A shell goes out as a stream with a real timeout (milliseconds): the model's 30 s here.
    assert execs[3]["shellStreamArgs"] == {"command": "make test", "timeout": 30000, "toolCallId": "c-shell"}
    assert execs[3]["id"] == 4 and execs[3]["execId"] == "exec-4"
    assert got[-1] == {"execServerControlMessage": {"abort": {"id": 4}}}
    default = ex.request("shell", {"command": "ls"}, "c", shell_timeout=120)
    assert default.args.timeout == 120_000


def _read_ok() -> pb.ExecClientMessage:
    # ReadResult.success: 1 path, 2 content, 3 total_lines, 4 file_size
    return answer(read_result=ld(1, ld(1, "/ws/a.py") + ld(2, "l3\nl4\n") + vi(3, 40) + vi(4, 300)))


def _step_frames() -> list[tuple[str, pb.ToolCall]]:
    """(what, ToolCall) for the started and completed frame of every tool, successes and failures."""
    r = _requests()
    out: list[tuple[str, pb.ToolCall]] = []
    for name in ("read", "grep", "ls", "shell"):
        out.append((f"{name} started", steps.for_exec(r[name])))
    out.append(("read ok", steps.for_exec(r["read"], _read_ok())))
    out.append(("read missing", steps.for_exec(r["read"], answer(read_result=ld(4, ld(1, "/ws/a.py"))))))
    out.append(("read denied", steps.for_exec(r["read"], answer(read_result=ld(5, b"")))))
    out.append(("read thrown", steps.failed(r["read"], "the client could not run it: boom")))
    files = ld(2, ld(1, "src/x.py") + vi(2, 1))
    grep_ok = ld(1, ld(1, "x+") + ld(4, ld(1, "/ws") + ld(2, files)) + ld(5, files))
    out.append(("grep ok", steps.for_exec(r["grep"], answer(grep_result=grep_ok))))
    out.append(("grep error", steps.for_exec(r["grep"], answer(grep_result=ld(2, ld(1, "bad regex"))))))
    tree = ld(1, ld(1, ld(1, "/ws") + ld(3, ld(1, "a.py"))))
    out.append(("ls ok", steps.for_exec(r["ls"], answer(ls_result=tree))))
    out.append(("ls error", steps.for_exec(r["ls"], answer(ls_result=ld(2, ld(1, ".") + ld(2, "gone"))))))
    fail = ld(2, ld(1, "make test") + vi(3, 2) + ld(5, "out") + ld(6, "err"))
    out.append(("shell failed", steps.for_exec(r["shell"], answer(shell_result=fail))))
    out.append(("shell stopped", steps.failed(r["shell"], "stopped", aborted=True)))
    out.append(("shell thrown", steps.failed(r["shell"], "the client could not run it")))
    out.append(("ls thrown", steps.failed(r["ls"], "no")))
    out.append(("grep thrown", steps.failed(r["grep"], "no")))
    delete = ex.Request(
        "delete_args", pb.ExecServerMessage(delete_args=pb.DeleteArgs(path="d", tool_call_id="c"))
    )
    out.append(("delete", steps.for_exec(delete, answer(delete_result=ld(1, b"")))))
    out.append(("delete thrown", steps.failed(delete, "no")))
    written = answer(write_result=ld(1, ld(1, "/ws/n.txt") + vi(2, 2) + vi(3, 8)))
    out.append(("write started", steps.edit("n.txt", "one\ntwo\n")))
    out.append(
        ("write ok", steps.edit("n.txt", "one\ntwo\n", steps.edited("n.txt", None, "one\ntwo\n", written)))
    )
    out.append(("edit ok", steps.edit("a.py", result=steps.edited("a.py", "a\nc\n", "b\nc\n", written))))
    missing = answer(read_result=ld(4, ld(1, "/ws/a.py")))
    out.append(("edit missing", steps.edit("a.py", result=steps.edit_read_failed("a.py", missing))))
    out.append(
        (
            "edit read denied",
            steps.edit("a.py", result=steps.edit_read_failed("a.py", answer(read_result=ld(5, b"")))),
        )
    )
    out.append(
        (
            "edit rejected",
            steps.edit("a.py", result=steps.edit_read_failed("a.py", answer(read_result=ld(3, b"")))),
        )
    )
    denied = answer(write_result=ld(3, b""))
    out.append(("edit write denied", steps.edit("a.py", result=steps.edited("a.py", "a", "b", denied))))
    out.append(
        ("edit error", steps.edit("a.py", result=steps.edit_error("a.py", "old_text is found 0 times")))
    )
    return out


def test_tool_call_frames_of_every_tool_decode_strictly(strict: StrictDecoder) -> None:
    cases = _step_frames()
    for what, tc in cases:
        assert len(members(tc)) == 1, f"{what}: {members(tc)}"  # exactly one member of `tool`
    frames = [ex.started("c", tc, "m") for _, tc in cases] + [ex.completed("c", tc, "m") for _, tc in cases]
    got = decode(strict, frames)
    done = {
        what: g["interactionUpdate"]["toolCallCompleted"]["toolCall"]
        for (what, _), g in zip(cases, got[len(cases) :], strict=True)
    }
    # Read: its own messages, the model's offset an int32, the result a ReadToolSuccess.
    assert done["read started"] == {"readToolCall": {"args": {"path": "a.py", "offset": 3, "limit": 10}}}
    ok = done["read ok"]["readToolCall"]["result"]["success"]
    assert ok == {
        "content": "l3\nl4\n",
        "totalLines": 40,
        "fileSize": 300,
        "path": "/ws/a.py",
        "readRange": {"startLine": 3, "endLine": 4},
    }
    assert done["read missing"]["readToolCall"]["result"] == {
        "error": {"errorMessage": "file not found: /ws/a.py"}
    }
    assert done["read denied"]["readToolCall"]["result"] == {"error": {"errorMessage": "permission denied"}}
    assert "boom" in done["read thrown"]["readToolCall"]["result"]["error"]["errorMessage"]
    # Grep, ls, shell, delete: the exec messages themselves.
    grep = done["grep ok"]["grepToolCall"]["result"]["success"]
    assert grep["workspaceResults"] == {"/ws": {"files": {"files": ["src/x.py"], "totalFiles": 1}}}
    assert done["grep error"]["grepToolCall"]["result"] == {"error": {"error": "bad regex"}}
    assert done["ls error"]["lsToolCall"]["result"] == {"error": {"path": ".", "error": "gone"}}
    shell = done["shell failed"]["shellToolCall"]
    assert shell["args"]["timeout"] == 30000
    assert shell["result"] == {
        "failure": {"command": "make test", "exitCode": 2, "stdout": "out", "stderr": "err"}
    }
    assert done["shell stopped"]["shellToolCall"]["result"]["failure"]["aborted"] is True
    assert "spawnError" in done["shell thrown"]["shellToolCall"]["result"]
    assert done["delete"] == {
        "deleteToolCall": {"args": {"path": "d", "toolCallId": "c"}, "result": {"success": {}}}
    }
    # Write and edit: edit_tool_call, EditArgs, an EditResult saying what changed, with the diff.
    assert done["write started"] == {
        "editToolCall": {"args": {"path": "n.txt", "streamContent": "one\ntwo\n"}}
    }
    wrote = done["write ok"]["editToolCall"]["result"]["success"]
    assert wrote["linesAdded"] == 2 and "linesRemoved" not in wrote and "+one\n+two\n" in wrote["diffString"]
    edit = done["edit ok"]["editToolCall"]["result"]["success"]
    assert (edit["linesAdded"], edit["linesRemoved"]) == (1, 1)
    assert "-a\n+b\n" in edit["diffString"] and edit["beforeFullFileContent"] == "a\nc\n"
    assert edit["afterFullFileContent"] == "b\nc\n"
    assert done["edit missing"]["editToolCall"]["result"] == {"fileNotFound": {"path": "/ws/a.py"}}
    assert done["edit read denied"]["editToolCall"]["result"] == {"readPermissionDenied": {"path": "a.py"}}
    assert "rejected" in done["edit rejected"]["editToolCall"]["result"]
    assert "writePermissionDenied" in done["edit write denied"]["editToolCall"]["result"]
    err = done["edit error"]["editToolCall"]["result"]["error"]
    assert err["modelVisibleError"] == "old_text is found 0 times"


# ------------------------------------------------------------------ a wrong wire type fails


def test_a_wrong_wire_type_fails_the_strict_decoder_and_not_python(strict: StrictDecoder) -> None:
    # The read step as Glider wrote it before: the exec ReadArgs (2: tool_call_id, a string) where
    # ReadToolArgs has 2: offset, an int32; and the exec ReadSuccess (2: content, a string) where
    # ReadToolSuccess has 2: is_empty, a bool.
    old_args = ld(1, "notes.txt") + ld(2, "call_0123456789abcdef")
    started = ld(1, ld(2, ld(1, "c1") + ld(2, ld(8, ld(1, old_args))) + ld(3, "m")))
    old_result = ld(1, ld(1, "notes.txt") + ld(2, "the secret is 42\n") + vi(3, 1))
    completed = ld(
        1, ld(3, ld(1, "c1") + ld(2, ld(8, ld(1, ld(1, "notes.txt")) + ld(2, old_result))) + ld(3, "m"))
    )
    # A token count written as bytes that protobuf-es's fromBinary reads without an error (it reads a
    # declared int32 as a varint whatever the wire type: the length 2, then a field 1 = 5 from the
    # bytes): the strict decoder's wire-type check names the field.
    tokens = ld(1, ld(8, ld(1, b"\x08\x05")))
    got = strict.decode(SERVER, [started, completed, tokens])
    assert [g.ok for g in got] == [False, False, False]
    assert got[0].error and got[1].error  # protobuf-es itself: "premature EOF", an illegal tag...
    assert "TokenDeltaUpdate.tokens (1): wire type LEN where its type wants VARINT" in got[2].error
    for bad in (started, completed, tokens):
        pb.AgentServerMessage.FromString(bad)  # Python's protobuf reads every one of them silently
    # The same steps as Glider writes them now decode.
    req = ex.request("read", {"path": "notes.txt"}, "c1")
    assert all(g.ok for g in strict.decode(SERVER, [payload(ex.started("c1", steps.for_exec(req), "m"))]))


def test_the_strict_decoder_reads_other_messages_by_name(strict: StrictDecoder) -> None:
    [title] = strict.decode("glider.cursor.NameTabResponse", [w.name_tab("Fix the bug", "named here")])
    assert title.ok and title.json == {"name": "Fix the bug", "reason": "named here"}
    [bad] = strict.decode("glider.cursor.NameTabResponse", [vi(1, 5)])
    assert not bad.ok


# ------------------------------------------------------------------ the proto follows §6c

# message -> {number: (name, type, label)}; type: a scalar's name or the message's, label: "" plain,
# "optional" (proto3 optional), "repeated", "map", or "oneof NAME".
SECTION_6C: dict[str, dict[int, tuple[str, str, str]]] = {
    "ToolCall": {
        1: ("shell_tool_call", "ShellToolCall", "oneof tool"),
        3: ("delete_tool_call", "DeleteToolCall", "oneof tool"),
        4: ("glob_tool_call", "GlobToolCall", "oneof tool"),
        5: ("grep_tool_call", "GrepToolCall", "oneof tool"),
        8: ("read_tool_call", "ReadToolCall", "oneof tool"),
        12: ("edit_tool_call", "EditToolCall", "oneof tool"),
        13: ("ls_tool_call", "LsToolCall", "oneof tool"),
    },
    "ShellToolCall": {
        1: ("args", "ShellArgs", ""),
        2: ("result", "ShellResult", ""),
        3: ("description", "string", "optional"),
    },
    "GrepToolCall": {1: ("args", "GrepArgs", ""), 2: ("result", "GrepResult", "")},
    "LsToolCall": {1: ("args", "LsArgs", ""), 2: ("result", "LsResult", "")},
    "DeleteToolCall": {1: ("args", "DeleteArgs", ""), 2: ("result", "DeleteResult", "")},
    "ReadToolCall": {1: ("args", "ReadToolArgs", ""), 2: ("result", "ReadToolResult", "")},
    "ReadToolArgs": {
        1: ("path", "string", ""),
        2: ("offset", "int32", "optional"),
        3: ("limit", "int32", "optional"),
        5: ("include_line_numbers", "bool", "optional"),
    },
    "ReadToolResult": {
        1: ("success", "ReadToolSuccess", "oneof result"),
        2: ("error", "ReadToolError", "oneof result"),
    },
    "ReadToolError": {1: ("error_message", "string", "")},
    "ReadToolSuccess": {
        1: ("content", "string", "oneof output"),
        6: ("data", "bytes", "oneof output"),
        9: ("data_blob_id", "bytes", "oneof output"),
        10: ("content_blob_id", "bytes", "oneof output"),
        2: ("is_empty", "bool", ""),
        3: ("exceeded_limit", "bool", ""),
        4: ("total_lines", "uint32", ""),
        5: ("file_size", "uint32", ""),
        7: ("path", "string", ""),
        8: ("read_range", "ReadRange", "optional"),
        11: ("include_line_numbers", "bool", "optional"),
        12: ("related_cursor_rule_paths", "string", "repeated"),
    },
    "ReadRange": {1: ("start_line", "uint32", ""), 2: ("end_line", "uint32", "")},
    "EditToolCall": {1: ("args", "EditArgs", ""), 2: ("result", "EditResult", "")},
    "EditArgs": {1: ("path", "string", ""), 6: ("stream_content", "string", "optional")},
    "EditResult": {
        1: ("success", "EditSuccess", "oneof result"),
        2: ("file_not_found", "PathOnly", "oneof result"),
        3: ("read_permission_denied", "PathOnly", "oneof result"),
        4: ("write_permission_denied", "EditWritePermissionDenied", "oneof result"),
        6: ("rejected", "EditRejected", "oneof result"),
        7: ("error", "EditError", "oneof result"),
    },
    "PathOnly": {1: ("path", "string", "")},
    "EditWritePermissionDenied": {
        1: ("path", "string", ""),
        2: ("error", "string", ""),
        3: ("is_readonly", "bool", ""),
    },
    "EditRejected": {1: ("path", "string", ""), 2: ("reason", "string", "")},
    "EditError": {
        1: ("path", "string", ""),
        2: ("error", "string", ""),
        5: ("model_visible_error", "string", "optional"),
    },
    "EditSuccess": {
        1: ("path", "string", ""),
        3: ("lines_added", "int32", "optional"),
        4: ("lines_removed", "int32", "optional"),
        5: ("diff_string", "string", "optional"),
        6: ("before_full_file_content", "string", "optional"),
        7: ("after_full_file_content", "string", ""),
        8: ("message", "string", "optional"),
    },
    "GrepSuccess": {
        1: ("pattern", "string", ""),
        2: ("path", "string", ""),
        3: ("output_mode", "string", ""),
        4: ("workspace_results", "GrepUnionResult", "map"),
        5: ("active_editor_result", "GrepUnionResult", "optional"),
    },
    "ShellStream": {
        1: ("stdout", "ShellStreamStdout", "oneof event"),
        2: ("stderr", "ShellStreamStderr", "oneof event"),
        3: ("exit", "ShellStreamExit", "oneof event"),
        4: ("start", "ShellStreamStart", "oneof event"),
        5: ("rejected", "ShellRejected", "oneof event"),
        6: ("permission_denied", "ShellPermissionDenied", "oneof event"),
        7: ("backgrounded", "Opaque", "oneof event"),
    },
    "ShellStreamStdout": {1: ("data", "string", "")},
    "ShellStreamStderr": {1: ("data", "string", "")},
    "ShellStreamExit": {
        1: ("code", "uint32", ""),
        2: ("cwd", "string", ""),
        4: ("aborted", "bool", ""),
        5: ("abort_reason", "ShellAbortReason", "optional"),
    },
    "NameTabRequest": {1: ("messages", "ConversationMessage", "repeated"), 2: ("is_project", "bool", "")},
    "ConversationMessage": {1: ("text", "string", ""), 2: ("type", "MessageType", "")},
    "NameTabResponse": {1: ("name", "string", ""), 2: ("reason", "string", ""), 3: ("icon", "string", "")},
    "ToolCallStartedUpdate": {
        1: ("call_id", "string", ""),
        2: ("tool_call", "ToolCall", ""),
        3: ("model_call_id", "string", ""),
    },
    "ToolCallCompletedUpdate": {
        1: ("call_id", "string", ""),
        2: ("tool_call", "ToolCall", ""),
        3: ("model_call_id", "string", ""),
    },
}
_FILE = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
_TYPES = {v: k.removeprefix("TYPE_").lower() for k, v in descriptor_pb2.FieldDescriptorProto.Type.items()}


def _messages() -> dict[str, descriptor_pb2.DescriptorProto]:
    out, todo = {}, [(m, "") for m in _FILE.message_type]
    while todo:
        m, outer = todo.pop()
        out[outer + m.name] = m
        todo += [(n, f"{outer}{m.name}.") for n in m.nested_type]
    return out


def _shape(
    message: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FieldDescriptorProto
) -> tuple[str, str, str]:
    """(name, type, label) as SECTION_6C spells them, from the compiled module's own descriptor."""
    kind = f.type_name.rsplit(".", 1)[-1] if f.type_name else _TYPES[f.type]
    nested = {n.name: n for n in message.nested_type}
    entry = nested.get(kind)
    if entry is not None and entry.options.map_entry:
        return f.name, entry.field[1].type_name.rsplit(".", 1)[-1], "map"
    if f.proto3_optional:
        return f.name, kind, "optional"
    if f.HasField("oneof_index"):
        return f.name, kind, f"oneof {message.oneof_decl[f.oneof_index].name}"
    return f.name, kind, "repeated" if f.label == f.LABEL_REPEATED else ""


def test_the_proto_follows_the_fact_sheet_field_for_field() -> None:
    messages = _messages()
    for name, want in SECTION_6C.items():
        message = messages[name]
        got = {f.number: _shape(message, f) for f in message.field}
        assert got == want, name
