"""The agent loop of a local Cursor turn that uses tools: Glider plays Cursor's agent server.

`AgentLoop(pipeline, opened, backend, text, ...)` runs, for one run (one request id):
1. A model call (`routing.Pipeline.local_chat`: the pack of the person's text, the episodes of the
   conversation and the tools offered, `exec.TOOLS` minus those `routing.tool_followup.denylist`
   names); its text streams to the client as text deltas.
2. Each tool call of the reply becomes, on the run's stream, a `tool_call_started` update, an
   `exec_server_message` (numbered per run, a fresh `exec_id`), and, once the client's
   `exec_client_message` with that number arrives in a BidiAppend (`deliver`), a
   `tool_call_completed` update; the rendered result goes back to the model as the call's tool
   message. `edit` is a read exec, the replacement made here, then a write exec. `task` (a subagent)
   runs a nested loop with the same tools (no `task`), whose steps the client runs the same way; its
   answer is the call's result.
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

from glider_cli.backends.registry import Backend
from glider_cli.cursor.routing import Pipeline
from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor import exec as ex
from glider_cli.protocol.reply_tap import IssuedCall, ReplyTap
from glider_cli.protocol.usage import Usage
from glider_cli.router import tool_policy
from glider_cli.turns.lifecycle import Opened

Out = asyncio.Queue[str | bytes | None]


class Stop(Exception):
    """The loop ends early with this message to the person."""


class Thrown(Exception):
    """The client could not run an exec (`exec_client_control_message.throw`)."""


class AgentLoop:
    def __init__(
        self,
        pipeline: Pipeline,
        opened: Opened,
        backend: Backend,
        text: str,
        *,
        out: Out,
        first: Callable[[], None],
        max_steps: int,
        deadline: float,
        request_id: str,
    ) -> None:
        self.pipeline = pipeline
        self.opened = opened
        self.backend = backend
        self.text = text
        self.out = out
        self._first = first
        self.max_steps = max_steps
        self.deadline = deadline
        self.request_id = request_id
        allow, deny = pipeline.tool_lists()
        self.policy = tool_policy.Policy(allow, deny)
        self.offered = tuple(n for n in ex.TOOLS if self.policy.verdict(n)[0] == "allow")
        self.steps = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self._next_exec = 0
        self._waiting: dict[int, asyncio.Future[pb.ExecClientMessage]] = {}
        self._started = False

    # ---------------------------------------------------------------- the client's answers

    def deliver(self, message: bytes | None) -> None:
        """One client message of this run (from a BidiAppend): an exec's answer or a `throw`."""
        if message is None:
            return
        msg = pb.AgentClientMessage()
        try:
            msg.ParseFromString(message)
        except DecodeError:
            return
        which = msg.WhichOneof("message")
        if which == "exec_client_message":
            fut = self._waiting.get(msg.exec_client_message.id)
            if fut is not None and not fut.done():
                fut.set_result(msg.exec_client_message)
        elif which == "exec_client_control_message" and msg.exec_client_control_message.HasField("throw"):
            throw = msg.exec_client_control_message.throw
            fut = self._waiting.get(throw.id)
            if fut is not None and not fut.done():
                fut.set_exception(Thrown(throw.error))

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
        async for piece in self.pipeline.local_chat(
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
            req = ex.request(name, call.arguments, call.id)
        except ex.ArgumentError as exc:
            return f"error: {exc}"
        try:
            result = await self._exec(req, call.id)
        except Thrown as exc:
            return f"error: the client could not run it: {exc}"
        if name != "edit":
            return ex.render(result)
        return await self._edit(call, result)

    async def _edit(self, call: IssuedCall, read: pb.ExecClientMessage) -> str:
        content = ex.read_content(read)
        if content is None:
            return ex.render(read)
        old, new = str(call.arguments.get("old_text")), str(call.arguments.get("new_text", ""))
        found = content.count(old)
        if found != 1:
            return f"error: old_text is found {found} times in the file (it must be found exactly once)"
        path = str(call.arguments["path"])
        try:
            written = await self._exec(ex.write(path, content.replace(old, new, 1), call.id), call.id)
        except Thrown as exc:
            return f"error: the client could not write it: {exc}"
        return ex.render(written)

    async def _subagent(self, call: IssuedCall) -> str:
        prompt = call.arguments.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return "error: `prompt` must be a non-empty string"
        tools = tuple(n for n in self.offered if n != "task")
        answer = await self._loop([{"role": "user", "content": prompt}], tools, stream=False)
        return answer or "(the subagent gave no answer)"

    async def _exec(self, req: ex.Request, call_id: str) -> pb.ExecClientMessage:
        self._next_exec += 1
        number = self._next_exec
        fut: asyncio.Future[pb.ExecClientMessage] = asyncio.get_running_loop().create_future()
        self._waiting[number] = fut
        model_call = f"glider-{self.request_id}-{self.steps}"
        self.out.put_nowait(ex.started(call_id, req.tool_call(), model_call))
        self.out.put_nowait(req.frame(number, str(uuid.uuid4())))
        try:
            result = await fut
        except (asyncio.CancelledError, TimeoutError):
            self.out.put_nowait(ex.abort(number))  # the turn ends (deadline, client gone): stop the exec
            raise
        finally:
            self._waiting.pop(number, None)
        self.out.put_nowait(ex.completed(call_id, req.tool_call(result), model_call))
        return result

    def _record(self, tool: str, verdict: str, why: str) -> None:
        self.pipeline.tool_step(
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
