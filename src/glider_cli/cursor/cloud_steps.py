"""The tool steps of a turn Cursor runs, recorded as `routing.tool_followup` would decide them.

`watch(stream, record)` passes a relayed RunSSE through unchanged (each chunk goes on before it is
read) and, for every `exec_server_message` Cursor's server sends in it, calls `record(tool, member)`
with the tool it runs (`tool_policy.exec_tool`: read, grep, ls, shell, write, delete, task, mcp,
fetch; other exec members are no tool step). Glider does not touch Cursor's loop: the decision is a
record only ("would have been allowed / denied"), so `glider route replay --against` can show what
a policy would change. Frames that cannot be read are passed over. With `usage` (a `CloudUsage`), the
turn's token counts are taken from Cursor's own updates: the output tokens of its token deltas, then
the counts of its turn-ended update where it gives them (what Glider records as the turn's usage at
Cursor).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from google.protobuf.message import DecodeError

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.framing import FrameReader
from glider_cli.router.tool_policy import exec_tool

_EXEC_TAG = 0x12  # AgentServerMessage field 2 (exec_server_message), length-delimited
_UPDATE_TAG = 0x0A  # AgentServerMessage field 1 (interaction_update)


class CloudUsage:
    """The token counts Cursor's own updates gave for a turn it served (None until given)."""

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def count(self, update: pb.InteractionUpdate) -> None:
        kind = update.WhichOneof("message")
        if kind == "token_delta":
            self.output_tokens = (self.output_tokens or 0) + max(0, update.token_delta.tokens)
        elif kind == "turn_ended":
            ended = update.turn_ended
            if ended.HasField("input_tokens"):
                self.input_tokens = ended.input_tokens
            if ended.HasField("output_tokens"):
                self.output_tokens = ended.output_tokens


async def watch(
    stream: AsyncIterator[bytes], record: Callable[[str, str], None], usage: CloudUsage | None = None
) -> AsyncIterator[bytes]:
    reader = FrameReader()
    async for chunk in stream:
        yield chunk
        for env in reader.feed(chunk):
            if env.end_stream:
                continue
            payload = env.message()
            if not payload or payload[0] not in (_EXEC_TAG, _UPDATE_TAG):
                continue
            if payload[0] == _UPDATE_TAG and usage is None:
                continue
            msg = pb.AgentServerMessage()
            try:
                msg.ParseFromString(payload)
            except DecodeError:
                continue
            if payload[0] == _UPDATE_TAG and usage is not None:
                usage.count(msg.interaction_update)
                continue
            member = msg.exec_server_message.WhichOneof("message")
            tool = exec_tool(member)
            if tool is not None and member is not None:
                record(tool, member)
