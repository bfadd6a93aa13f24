"""The agent loop of a local Cursor turn that uses tools: Glider plays Cursor's agent server.

`AgentLoop(adapter, opened, backend, text, ...)` runs, for one run (one request id):
1. A model call (`adapter.CursorAdapter.local_chat`: the pack of the person's text, the episodes of the
   conversation and the tools offered, `exec.TOOLS` minus those `routing.tool_followup.denylist`
   names); its text streams to the client as text deltas.
2. Each tool call of the reply is one step the IDE draws: a `tool_call_started` update (the
   step's `ToolCall`, `protocol.cursor.steps`), its `exec_server_message`s (numbered per run, a fresh
   `exec_id` each), and, once the client's answers arrive in BidiAppends (`deliver`; a streamed
   shell's events gathered until its `stream_close`, `protocol.cursor.answers`), a
   `tool_call_completed` update with the result (a failure as the member's own failure); the
   rendered result (`protocol.cursor.exec_results`) goes back to the model as the call's tool message.
   `write` and `edit` are one `edit_tool_call` step: a write exec, or a read exec, the replacement
   made here, then a write exec. `shell` runs as a stream with a real timeout (the model's, else
   `shell_timeout` seconds). `task` (a subagent) runs a nested loop with the same tools (no `task`),
   whose steps the client runs the same way; its answer is the call's result.
3. Until the model answers without a tool call: then `turn_ended` with the turn's usage.
Every call gets a `ToolStepDecided` record (allow / deny and why). A call of a denied tool (one not
offered) is refused with a message the model reads; a call no mapping covers ends the loop with a
message in the stream (never a hung turn), as do `max_steps` model calls and the turn deadline.
`first` is called once the first output exists (text or a tool call): before it, a backend failure
is the caller's to fall back from (BackendError propagates). Output goes to `out` (`str` a text
piece, `bytes` a whole frame, None the end). Cancelling the task cancels the model call or the wait.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from google.protobuf.message import DecodeError

from glider_cli.config.cursor import SHELL_TIMEOUT
from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor import exec as ex
from glider_cli.protocol.cursor import exec_results, steps
from glider_cli.protocol.cursor.answers import Answer
from glider_cli.protocol.reply_tap import IssuedCall, ReplyTap
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy import Backend, Opened
from glider_cli.router import tool_policy

Out = asyncio.Queue[str | bytes | None]


class Stop(Exception):
    """The loop ends early with this message to the person."""


class Thrown(Exception):
    """The client could not run an exec (`exec_client_control_message.throw`)."""


class AgentLoop:
    def __init__(
        self,
        adapter: CursorAdapter,
        opened: Opened,
        backend: Backend,
        text: str,
        *,
        out: Out,
        first: Callable[[], None],
        max_steps: int,
        deadline: float,
        request_id: str,
        shell_timeout: float = SHELL_TIMEOUT,
    ) -> None:
        self.adapter = adapter
        self.opened = opened
        self.backend = backend
        self.text = text
        self.out = out
        self._first = first
        self.max_steps = max_steps
        self.deadline = deadline
        self.request_id = request_id
        self.shell_timeout = shell_timeout
        allow, deny = adapter.tool_lists()
        self.policy = tool_policy.Policy(allow, deny)
        self.offered = tuple(n for n in ex.TOOLS if self.policy.verdict(n)[0] == "allow")
        self.steps = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self._next_exec = 0
        self._waiting: dict[int, tuple[Answer, asyncio.Future[pb.ExecClientMessage]]] = {}
        self._started = False

    # ---------------------------------------------------------------- the client's answers

    def deliver(self, message: bytes | None) -> None:
        """One client message of this run (from a BidiAppend): an exec's answer (or one event of a
        streamed one), its `stream_close`, or a `throw`."""
        if message is None:
            return
        msg = pb.AgentClientMessage()
        try:
            msg.ParseFromString(message)
        except DecodeError:
            return
        which = msg.WhichOneof("message")
        if which == "exec_client_message":
            waiting = self._waiting.get(msg.exec_client_message.id)
            if waiting is not None and not waiting[1].done():
                whole = waiting[0].take(msg.exec_client_message)
                if whole is not None:
                    waiting[1].set_result(whole)
        elif which == "exec_client_control_message":
            control = msg.exec_client_control_message
            kind = control.WhichOneof("message")
            number = control.throw.id if kind == "throw" else control.stream_close.id
            waiting = self._waiting.get(number)
            if waiting is None or waiting[1].done():
                return
            if kind == "throw":
                waiting[1].set_exception(Thrown(control.throw.error))
            elif kind == "stream_close":
                waiting[1].set_result(waiting[0].close())

    # ---------------------------------------------------------------- the loop

    def first(self) -> None:
        if not self._started:
            self._started = True
            self._first()

    async def run(self) -> None:
        try:
            async with asyncio.timeout(self.deadline):
                await self._loop([{"role": "user", "content": self.text}], self.offered, stream=True)
        except Stop as stop:
            self._stop(str(stop))
        except TimeoutError:
            self._stop(
                f"the local turn ran past its deadline (cursor.turn_deadline_seconds: {self.deadline:g})"
            )
        self.first()
        self.out.put_nowait(None)

    def _stop(self, message: str) -> None:
        self.first()
        self.out.put_nowait(f"\n\n[glider: {message}; the local turn stops here.]")

    async def _loop(self, messages: list[dict[str, Any]], tools: tuple[str, ...], *, stream: bool) -> str:
        """Model calls and tool steps until the model answers; its last text."""
        while True:
            if self.steps >= self.max_steps:
                raise Stop(f"the local model used all {self.max_steps} steps (cursor.max_steps)")
            self.steps += 1
            text, calls = await self._model(messages, tools, stream=stream)
            if not calls:
                return text
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": orjson.dumps(c.arguments).decode()},
                        }
                        for c in calls
                    ],
                }
            )
            for c in calls:
                result = await self._tool(c, tools)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})

    async def _model(
        self, messages: list[dict[str, Any]], tools: tuple[str, ...], *, stream: bool
    ) -> tuple[str, list[IssuedCall]]:
        body: dict[str, Any] = {"model": "", "stream": True, "messages": messages, "tools": ex.specs(tools)}
        tap = ReplyTap("openai_chat", True)
        usage = Usage()
        pieces: list[str] = []
        async for piece in self.adapter.local_chat(
            self.opened, self.backend, body, usage, tools=tools, tap=tap
        ):
            self.first()
            pieces.append(piece)
            if stream:
                self.out.put_nowait(piece)
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        calls = tap.close()
        if calls:
            self.first()
        return "".join(pieces), calls

    async def _tool(self, call: IssuedCall, tools: tuple[str, ...]) -> str:
        name = call.name
        verdict, why = self.policy.verdict(name)
        if name not in ex.TOOLS:
            self._record(name, "deny", "no mapping onto Cursor's exec messages")
            raise Stop(f"the local model called `{name}`, which has no mapping onto Cursor's tools")
        if name not in tools:
            if verdict == "allow":  # offered to the turn but not here (a subagent's `task`)
                verdict, why = "deny", "a subagent cannot start subagents"
            self._record(name, "deny", why)
            return f"refused: `{name}` is not available to this local turn ({why})"
        self._record(name, "allow", why)
        if call.malformed:
            return "error: the arguments are not a JSON object"
        if name == "task":
            return await self._subagent(call)
        try:
            req = ex.request(name, call.arguments, call.id, self.shell_timeout)
        except ex.ArgumentError as exc:
            return f"error: {exc}"
        step = Step(self.out, call.id, f"glider-{self.request_id}-{self.steps}")
        if name in ("write", "edit"):
            return await self._change(call, req, step)
        step.started(steps.for_exec(req))
        try:
            result = await self._exec(req, step)
        except Thrown as exc:
            step.completed(steps.failed(req, f"the client could not run it: {exc}"))
            return f"error: the client could not run it: {exc}"
        step.completed(steps.for_exec(req, result))
        return exec_results.render(result)

    async def _change(self, call: IssuedCall, req: ex.Request, step: Step) -> str:
        """A write (one write exec) or an edit (a read exec, the replacement, a write exec): one
        `edit_tool_call` step."""
        path = str(call.arguments["path"])
        if req.kind == "write_args":
            text = req.args.file_text
            step.started(steps.edit(path, text))
            try:
                written = await self._exec(req, step)
            except Thrown as exc:
                return step.edit_failed(path, f"the client could not write it: {exc}", text)
            step.completed(steps.edit(path, text, steps.edited(path, None, text, written)))
            return exec_results.render(written)
        step.started(steps.edit(path))
        try:
            read = await self._exec(req, step)
        except Thrown as exc:
            return step.edit_failed(path, f"the client could not read it: {exc}")
        content = exec_results.read_content(read)
        if content is None:
            step.completed(steps.edit(path, result=steps.edit_read_failed(path, read)))
            return exec_results.render(read)
        old, new = str(call.arguments.get("old_text")), str(call.arguments.get("new_text", ""))
        found = content.count(old)
        if found != 1:
            return step.edit_failed(
                path, f"old_text is found {found} times in the file (it must be found exactly once)"
            )
        after = content.replace(old, new, 1)
        try:
            written = await self._exec(ex.write(path, after, call.id), step)
        except Thrown as exc:
            return step.edit_failed(path, f"the client could not write it: {exc}")
        step.completed(steps.edit(path, result=steps.edited(path, content, after, written)))
        return exec_results.render(written)

    async def _subagent(self, call: IssuedCall) -> str:
        prompt = call.arguments.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return "error: `prompt` must be a non-empty string"
        tools = tuple(n for n in self.offered if n != "task")
        answer = await self._loop([{"role": "user", "content": prompt}], tools, stream=False)
        return answer or "(the subagent gave no answer)"

    async def _exec(self, req: ex.Request, step: Step) -> pb.ExecClientMessage:
        """Sends exec `req` and waits for the client's whole answer. Cancelled (the turn's deadline, the
        client gone): the exec is aborted and the step completed as stopped."""
        self._next_exec += 1
        number = self._next_exec
        fut: asyncio.Future[pb.ExecClientMessage] = asyncio.get_running_loop().create_future()
        args = req.args
        if req.kind in ("shell_args", "shell_stream_args"):
            answer = Answer(args.command, args.working_directory, args.timeout)
        else:
            answer = Answer()
        self._waiting[number] = (answer, fut)
        self.out.put_nowait(req.frame(number, str(uuid.uuid4())))
        try:
            return await fut
        except (asyncio.CancelledError, TimeoutError):
            self.out.put_nowait(ex.abort(number))  # the turn ends (deadline, client gone): stop the exec
            step.stopped(req)
            raise
        finally:
            self._waiting.pop(number, None)

    def _record(self, tool: str, verdict: str, why: str) -> None:
        self.adapter.tool_step(
            self.opened,
            {
                "side": "local",
                "applied": True,
                "tool": tool,
                "decision": verdict,
                "why": why,
                "request_id": self.request_id,
                "step": self.steps,
            },
        )


class Step:
    """One model tool call as the IDE draws it: a `tool_call_started` update, then one
    `tool_call_completed` (also when the turn stops it)."""

    def __init__(self, out: Out, call_id: str, model_call_id: str) -> None:
        self.out = out
        self.call_id = call_id
        self.model_call_id = model_call_id
        self.first: pb.ToolCall | None = None
        self.done = False

    def started(self, tool_call: pb.ToolCall) -> None:
        self.first = tool_call
        self.out.put_nowait(ex.started(self.call_id, tool_call, self.model_call_id))

    def completed(self, tool_call: pb.ToolCall) -> None:
        if not self.done:
            self.done = True
            self.out.put_nowait(ex.completed(self.call_id, tool_call, self.model_call_id))

    def edit_failed(self, path: str, why: str, text: str | None = None) -> str:
        """A write or edit step that failed here or at the client: completed as the edit's error; what
        the model reads."""
        self.completed(steps.edit(path, text, steps.edit_error(path, why)))
        return f"error: {why}"

    def stopped(self, req: ex.Request) -> None:
        """The turn ended while `req` ran: the step completes as stopped."""
        why = "stopped: the local turn ended while it ran"
        if self.first is not None and self.first.HasField("edit_tool_call"):
            path = self.first.edit_tool_call.args.path
            self.completed(steps.edit(path, result=steps.edit_error(path, why)))
        else:
            self.completed(steps.failed(req, why, aborted=True))
