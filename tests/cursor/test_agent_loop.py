"""Local Cursor turns that use tools: Glider runs the local model's loop as Cursor's agent server. The
model's calls go to the Cursor-shaped client as exec messages on the run's stream, the client runs
them in a temporary workspace and answers by BidiAppends, the results go back to the model, and
nothing of the turn reaches Cursor."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, all_decoded_strictly, texts, trailer
from cursor_exec import Executor, Leave
from cursor_h2_client import H2CursorClient
from cursor_harness import cursor_yaml
from fake_agent_model import MODEL, FakeAgentModel, last_tool_result, offered
from fake_cursor import _fields

from glider_cli.store.views.egress import audit

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"
ALL_TOOLS = ["read", "grep", "ls", "shell", "write", "edit", "task"]


@pytest.fixture
def model() -> Iterator[FakeAgentModel]:
    with FakeAgentModel() as m:
        yield m


def agent_yaml(fake_cursor: Any, tmp: Path, model: FakeAgentModel, extra: str = "") -> str:
    yaml = cursor_yaml(fake_cursor, tmp, "unused", extra=extra)
    return yaml.replace(
        "ollama: {type: ollama, side: local, base_url: 'unused', model: fake-model}",
        f"ollama: {{type: openai, side: local, base_url: '{model.url}', model: {MODEL}}}",
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the secret is 42\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 'old'\n")
    return ws


def events(g: Any, kind: str) -> list[dict[str, Any]]:
    return [d for t, d, _ in g.server.events if t == kind]


def updates(sse: Any, number: int) -> list[bytes]:
    """The InteractionUpdate members `number` of a RunSSE answer (14 turn_ended, 13 heartbeat...)."""
    out = []
    for _, flags, payload in sse.frames:
        upd = _fields(payload).get(1) if not flags & 2 else None
        if isinstance(upd, bytes) and number in _fields(upd):
            out.append(_fields(upd)[number])
    return out


def cursor_seen(fake_cursor: Any) -> list[str]:
    return [r.path for r in fake_cursor.requests]


def run_turn(
    g: Any, text: str, ex: Executor, conv: str = "conv-agent", *, transport: str = "http1"
) -> tuple[Any, str]:
    """One local turn with `ex` answering its execs: over HTTP/1.1 (RunSSE and BidiAppends) or over
    HTTP/2 (`h2`: one `Run` stream, the exec answers on its request body). Either client decodes
    every frame strictly as it arrives (`decoded`)."""
    first = wire.run_request(conv, wire.user_action(text))
    if transport == "http1":
        return asyncio.run(CursorClient(g.port, g.ca).agent_turn(AGENT, first, ex))

    async def go() -> Any:
        conn = await H2CursorClient(g.port, g.ca).connect(AGENT)
        try:
            return await conn.run(first, executor=ex)
        finally:
            await conn.close()

    answer = asyncio.run(go())
    return answer, answer.rid


def test_read_then_answer(model, fake_cursor, glider_for, tmp_path: Path, workspace: Path) -> None:
    model.script = [
        lambda b: {"tool": "read", "args": {"path": "notes.txt"}},
        lambda b: {"text": "The file says: " + last_tool_result(b).strip()},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local what is the secret in notes.txt?", ex)
    assert sse.status == 200 and trailer(sse) == {}
    assert "".join(texts(sse)) == "The file says: the secret is 42"
    # The client ran one read, and the IDE saw the step start and complete (a read_tool_call, 8).
    assert [(name, a[1].decode()) for name, a in ex.execs] == [("read", "notes.txt")]
    assert [(k, m) for k, _, m in ex.steps] == [("started", 8), ("completed", 8)]
    # The turn ended as Cursor's does, with the usage of both model calls.
    [ended] = updates(sse, 14)
    assert _fields(ended) == {1: 200, 2: 20}
    # The model got the tools of the mapping, then its call answered by the client's result.
    first, second = model.requests
    assert offered(first) == ALL_TOOLS and first["model"] == MODEL
    assert first["messages"][0]["role"] == "system"
    assert "what is the secret" in str(first["messages"][-1])
    answered = second["messages"][-1]
    assert answered["role"] == "tool" and "the secret is 42" in answered["content"]
    # Nothing of the turn reached Cursor; recorded as a local turn with its tool step allowed.
    assert cursor_seen(fake_cursor) == []
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["backend"] == "ollama" and done["complete"] is True
    [step] = events(g, "ToolStepDecided")
    assert step["tool"] == "read" and step["decision"] == "allow" and step["applied"] is True
    assert "OriginPassthrough" not in g.server.types()
    # The egress audit of the turn's events lists no call that left the machine.
    logged = [
        {"id": f"{i:032x}", "ts": "2026-12-01T00:00:00Z", "type": t, "turn_id": tid, "data": d}
        for i, (t, d, tid) in enumerate(g.server.events)
    ]
    assert any(e["type"] == "FulfilledLocal" for e in logged) and audit(logged).calls == ()


def test_write_and_edit_change_the_workspace(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    model.script = [
        lambda b: {"tool": "write", "args": {"path": "out/hello.py", "content": "print('hi there')\n"}},
        lambda b: {"tool": "edit", "args": {"path": "src/app.py", "old_text": "'old'", "new_text": "'new'"}},
        lambda b: {"tool": "shell", "args": {"command": "python3 out/hello.py"}},
        lambda b: {"text": "ran: " + last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local write and run a hello script", ex)
    assert (workspace / "out" / "hello.py").read_text() == "print('hi there')\n"
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 'new'\n"
    assert [name for name, _ in ex.execs] == ["write", "read", "write", "shell"]
    answer = "".join(texts(sse))
    assert answer.startswith("ran: exit code 0") and "hi there" in answer
    assert trailer(sse) == {} and cursor_seen(fake_cursor) == []


def test_denied_tools_are_not_offered_and_refused(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    extra = "routing:\n  tool_followup: {denylist: [shell, write]}\n"
    model.script = [
        # The model calls a tool it was not given (small models do).
        lambda b: {"tool": "shell", "args": {"command": "rm -rf ."}, "offered": False},
        lambda b: {"text": "told: " + last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra=extra))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local clean up", ex)
    assert offered(model.requests[0]) == ["read", "grep", "ls", "edit", "task"]
    assert ex.execs == [] and (workspace / "notes.txt").exists()
    answer = "".join(texts(sse))
    assert answer.startswith("told: refused: `shell`") and "denylist" in answer
    [step] = events(g, "ToolStepDecided")
    assert step["tool"] == "shell" and step["decision"] == "deny" and "denylist" in step["why"]


def test_step_bound_ends_the_turn(model, fake_cursor, glider_for, tmp_path: Path, workspace: Path) -> None:
    model.script = [lambda b: {"tool": "ls", "args": {"path": "."}}] * 10
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra="  max_steps: 3\n"))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local look around forever", ex)
    assert len(model.requests) == 3 and len(ex.execs) == 3
    assert "notes.txt" in model.requests[1]["messages"][-1]["content"]
    assert "all 3 steps (cursor.max_steps)" in "".join(texts(sse))
    assert updates(sse, 14) and trailer(sse) == {}


def test_unmappable_tool_call_ends_the_loop_with_a_message(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    model.script = [lambda b: {"tool": "web_search", "args": {"q": "x"}, "offered": False}]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local search the web", ex)
    assert "called `web_search`, which has no mapping" in "".join(texts(sse))
    assert len(model.requests) == 1 and ex.execs == []
    assert updates(sse, 14) and trailer(sse) == {}
    assert events(g, "ToolStepDecided")[-1]["decision"] == "deny"


def test_client_leaving_mid_loop_cancels_the_model_call(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    model.script = [
        lambda b: {"tool": "read", "args": {"path": "notes.txt"}},
        lambda b: {"text": "too late", "delay": 60},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace, leave_after="completed")
    with pytest.raises(Leave):
        run_turn(g, "/local read it slowly", ex)
    deadline = time.monotonic() + 20
    while model.cancelled == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(model.requests) == 2 and model.cancelled == 1
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["complete"] is False and done["client_disconnected"] is True
    assert cursor_seen(fake_cursor) == []


def test_subagent_runs_in_the_same_local_loop(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    model.script = [
        lambda b: {"tool": "task", "args": {"prompt": "find the secret in notes.txt"}},
        # The subagent: its own request (its prompt, no `task` tool), its own read, its answer.
        lambda b: {"tool": "read", "args": {"path": "notes.txt"}},
        lambda b: {"text": "sub found: " + last_tool_result(b).strip()},
        lambda b: {"text": "main got: " + last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local delegate the search", ex)
    assert "".join(texts(sse)) == "main got: sub found: the secret is 42"
    sub = model.requests[1]
    assert offered(sub) == [t for t in ALL_TOOLS if t != "task"]
    assert "find the secret in notes.txt" in str(sub["messages"][-1])
    assert [name for name, _ in ex.execs] == ["read"] and cursor_seen(fake_cursor) == []
    assert [e["tool"] for e in events(g, "ToolStepDecided")] == ["task", "read"]


def test_subagent_refused_with_a_message_when_the_profile_says_so(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    extra = "routing:\n  tool_followup: {denylist: [task]}\n"
    model.script = [
        lambda b: {"tool": "task", "args": {"prompt": "go"}, "offered": False},
        lambda b: {"text": "told: " + last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra=extra))
    sse, _ = run_turn(g, "/local delegate", Executor(workspace))
    assert "task" not in offered(model.requests[0]) and len(model.requests) == 2
    assert "".join(texts(sse)).startswith("told: refused: `task`")


def test_turn_deadline_ends_a_slow_loop(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    model.script = [
        lambda b: {"tool": "ls", "args": {"path": "."}},
        lambda b: {"text": "much later", "delay": 60},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra="  turn_deadline_seconds: 5\n"))
    started = time.monotonic()
    sse, _ = run_turn(g, "/local take your time", Executor(workspace))
    assert time.monotonic() - started < 30
    answer = "".join(texts(sse))
    assert "much later" not in answer and "cursor.turn_deadline_seconds: 5" in answer
    assert updates(sse, 13), "heartbeats while the model ran"
    assert updates(sse, 14) and trailer(sse) == {}
    deadline = time.monotonic() + 10
    while model.cancelled == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert model.cancelled == 1  # the model call was cancelled with the turn


def test_ollama_backend_runs_the_loop_too(
    fake, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    from fake_upstream import ToolReply

    fake.reset()
    fake.set_reply(tool=ToolReply("read", {"path": "notes.txt"}, once=True))
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local read the notes", ex)
    assert [name for name, _ in ex.execs] == ["read"]
    chats = [r.body for r in fake.requests if r.path == "/api/chat"]
    assert len(chats) == 2 and chats[0]["model"] == "fake-model"
    assert [t["function"]["name"] for t in chats[0]["tools"]] == ALL_TOOLS
    assert (
        chats[1]["messages"][-1]["role"] == "tool"
        and "the secret is 42" in chats[1]["messages"][-1]["content"]
    )
    assert "".join(texts(sse)).endswith("hello from fake ollama fake-model") and trailer(sse) == {}
    assert cursor_seen(fake_cursor) == []


def test_grep_and_ls_results_reach_the_model(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path
) -> None:
    model.script = [
        lambda b: {"tool": "grep", "args": {"pattern": "ret+urn"}},
        lambda b: {"tool": "ls", "args": {"path": "src"}},
        lambda b: {"text": "grep: " + b["messages"][-3]["content"] + " | ls: " + last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local where is main?", ex)
    assert [name for name, _ in ex.execs] == ["grep", "ls"]
    assert "".join(texts(sse)) == "grep: src/app.py | ls: app.py"
    # The IDE rendered a grep step (ToolCall 5) and an ls step (13).
    assert [m for k, _, m in ex.steps if k == "completed"] == [5, 13]


@pytest.mark.parametrize("transport", ["http1", "h2"])
def test_deadline_while_a_tool_runs_aborts_the_exec(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path, strict: Any, transport: str
) -> None:
    model.script = [lambda b: {"tool": "shell", "args": {"command": "sleep 1000"}}]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra="  turn_deadline_seconds: 5\n"))
    ex = Executor(workspace, hang=("shell",))
    sse, _ = run_turn(g, "/local wait for it", ex, transport=transport)
    assert all_decoded_strictly(sse)  # the abort too
    assert {"execServerControlMessage": {"abort": {"id": 1}}} in sse.decoded
    assert [name for name, _ in ex.execs] == ["shell"] and len(model.requests) == 1
    # exec_server_control_message (5) -> abort (1) -> id (1) of the shell exec, then the message.
    aborts = [_fields(p)[5] for _, f, p in sse.frames if not f & 2 and 5 in _fields(p)]
    assert [_fields(_fields(a)[1]) for a in aborts] == [{1: 1}]  # type: ignore[arg-type]
    assert "turn_deadline_seconds" in "".join(texts(sse)) and trailer(sse) == {}


def completed_steps(sse: Any) -> list[dict[str, Any]]:
    """The ToolCall of each tool_call_completed update, as protobuf-es decoded it."""
    updates = [d["interactionUpdate"] for d in sse.decoded if "interactionUpdate" in d]
    return [u["toolCallCompleted"]["toolCall"] for u in updates if "toolCallCompleted" in u]


@pytest.mark.parametrize("transport", ["http1", "h2"])
def test_read_grep_shell_edit_read_decodes_strictly_at_every_step(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path, strict: Any, transport: str
) -> None:
    model.script = [
        lambda b: {"tool": "read", "args": {"path": "notes.txt"}},
        lambda b: {"tool": "grep", "args": {"pattern": "return"}},
        lambda b: {"tool": "shell", "args": {"command": "echo out; echo err >&2; exit 3"}},
        lambda b: {"tool": "edit", "args": {"path": "src/app.py", "old_text": "'old'", "new_text": "'new'"}},
        lambda b: {"tool": "read", "args": {"path": "src/app.py"}},
        lambda b: {"text": "now: " + last_tool_result(b).splitlines()[-1].strip()},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra="  shell_timeout_seconds: 45\n"))
    ex = Executor(workspace)
    sse, _ = run_turn(g, "/local walk the workspace", ex, transport=transport)
    assert trailer(sse) == {} and "".join(texts(sse)) == "now: return 'new'"
    # Every frame the client received was decoded by protobuf-es as it came (cursor_client,
    # cursor_h2_client): text, steps, exec requests, heartbeats, the turn's end.
    assert all_decoded_strictly(sse)
    assert [name for name, _ in ex.execs] == ["read", "grep", "shell", "read", "write", "read"]
    # The shell went out as a stream (ExecServerMessage 14) with the configured timeout (ms).
    assert ex.members[2] == 14 and ex.execs[2][1][3] == 45_000
    # The IDE drew five steps, each started then completed, each its own ToolCall member.
    assert [(k, m) for k, _, m in ex.steps] == [
        (k, m) for m in (8, 5, 1, 12, 8) for k in ("started", "completed")
    ]
    read1, grep, shell, edit, read2 = completed_steps(sse)
    assert read1["readToolCall"]["result"]["success"]["content"] == "the secret is 42\n"
    results = grep["grepToolCall"]["result"]["success"]["workspaceResults"]
    assert results == {str(workspace): {"files": {"files": ["src/app.py"], "totalFiles": 1}}}
    assert shell["shellToolCall"]["args"]["timeout"] == 45_000
    failure = shell["shellToolCall"]["result"]["failure"]
    assert (failure["exitCode"], failure["stdout"], failure["stderr"]) == (3, "out\n", "err\n")
    changed = edit["editToolCall"]
    assert changed["args"] == {"path": "src/app.py"}
    success = changed["result"]["success"]
    assert (success["linesAdded"], success["linesRemoved"]) == (1, 1)
    assert "-    return 'old'\n+    return 'new'\n" in success["diffString"]
    assert read2["readToolCall"]["result"]["success"]["content"].endswith("return 'new'\n")
    # The model read each answer: the workspace's grep matches, the streamed shell's output and code.
    tool_results = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_results[1] == "src/app.py"
    assert tool_results[2] == "exit code 3\nstdout:\nout\n\nstderr:\nerr"
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 'new'\n"
    assert cursor_seen(fake_cursor) == []


def test_shell_answered_in_one_shell_result_and_a_model_timeout(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path, strict: Any
) -> None:
    model.script = [
        lambda b: {"tool": "shell", "args": {"command": "printf 'x%.0s' $(seq 20000)", "timeout": 9}},
        lambda b: {"text": last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace, shell_oneshot=True)
    sse, _ = run_turn(g, "/local print a lot", ex)
    assert ex.members == [14] and ex.execs[0][1][3] == 9_000  # the model's timeout, in ms
    # A one-shot shell_result is read as well; the model gets the output's head and tail, the cut said.
    told = last_tool_result(model.requests[-1])
    assert told.startswith("exit code 0\nstdout:\nxxxx") and told.endswith("xxxx")
    assert "[... 12000 characters cut from the middle ...]" in told
    [shell] = completed_steps(sse)
    assert shell["shellToolCall"]["result"]["success"]["stdout"] == "x" * 20000


@pytest.mark.parametrize("transport", ["http1", "h2"])
def test_failed_steps_are_drawn_as_the_member_s_own_failure(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path, strict: Any, transport: str
) -> None:
    model.script = [
        lambda b: {"tool": "read", "args": {"path": "missing.txt"}},
        lambda b: {"tool": "edit", "args": {"path": "missing.txt", "old_text": "a", "new_text": "b"}},
        lambda b: {"tool": "ls", "args": {"path": "."}},
        lambda b: {"text": "told: " + last_tool_result(b)},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace, throw=("ls",))
    sse, _ = run_turn(g, "/local try things", ex, transport=transport)
    assert all_decoded_strictly(sse)
    missing = str(workspace / "missing.txt")
    read, edit, ls = completed_steps(sse)
    assert read["readToolCall"]["result"] == {"error": {"errorMessage": f"file not found: {missing}"}}
    assert edit["editToolCall"]["result"] == {"fileNotFound": {"path": missing}}
    error = ls["lsToolCall"]["result"]["error"]
    assert "EACCES: the sandbox refused it" in error["error"] and error["path"] == "."
    assert "".join(texts(sse)) == "told: error: the client could not run it: EACCES: the sandbox refused it"


@pytest.mark.parametrize("transport", ["http1", "h2"])
def test_a_step_the_turn_stops_is_completed_as_stopped(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path, strict: Any, transport: str
) -> None:
    model.script = [
        lambda b: {"tool": "edit", "args": {"path": "src/app.py", "old_text": "old", "new_text": "new"}}
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra="  turn_deadline_seconds: 5\n"))
    ex = Executor(workspace, hang=("read",))
    sse, _ = run_turn(g, "/local edit it slowly", ex, transport=transport)
    assert all_decoded_strictly(sse)
    # The IDE saw the edit start, the exec aborted, and the step completed as stopped (not left open).
    kinds = [next(iter(d)) for d in sse.decoded]
    assert "execServerControlMessage" in kinds
    assert [(k, m) for k, _, m in ex.steps] == [("started", 12), ("completed", 12)]
    [edit] = completed_steps(sse)
    assert edit["editToolCall"]["result"]["error"]["error"].startswith("stopped: the local turn ended")
    assert "turn_deadline_seconds" in "".join(texts(sse)) and trailer(sse) == {}


def test_local_tool_turn_over_http2_runs_on_the_same_stream(
    model, fake_cursor, glider_for, tmp_path: Path, workspace: Path, strict: Any
) -> None:
    model.script = [
        lambda b: {"tool": "read", "args": {"path": "notes.txt"}},
        lambda b: {"text": "The file says: " + last_tool_result(b).strip()},
    ]
    g = glider_for(agent_yaml(fake_cursor, tmp_path, model))
    ex = Executor(workspace)
    first = wire.run_request("conv-agent-h2", wire.user_action("/local what is the secret in notes.txt?"))

    async def go() -> Any:
        conn = await H2CursorClient(g.port, g.ca).connect(AGENT)
        answer = await conn.run(first, executor=ex)  # exec answers on the run's own request body
        await conn.close()
        return answer

    answer = asyncio.run(go())
    assert answer.status == 200 and trailer(answer) == {}
    assert "".join(texts(answer)) == "The file says: the secret is 42"
    assert [(name, a[1].decode()) for name, a in ex.execs] == [("read", "notes.txt")]
    assert [(k, m) for k, _, m in ex.steps] == [("started", 8), ("completed", 8)]
    [ended] = updates(answer, 14)
    assert _fields(ended) == {1: 200, 2: 20}
    # Every frame Glider wrote on the stream decoded as Cursor's client decodes it: the read's exec
    # request, its step started and completed, the text, the turn's end.
    assert all_decoded_strictly(answer)
    [read] = completed_steps(answer)
    assert read["readToolCall"]["result"]["success"]["content"] == "the secret is 42\n"
    assert any("execServerMessage" in d for d in answer.decoded)
    ended_json = {"interactionUpdate": {"turnEnded": {"inputTokens": "200", "outputTokens": "20"}}}
    assert answer.decoded[-1] == ended_json
    assert cursor_seen(fake_cursor) == []
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["backend"] == "ollama" and done["complete"] is True
    [step] = events(g, "ToolStepDecided")
    assert step["tool"] == "read" and step["applied"] is True
