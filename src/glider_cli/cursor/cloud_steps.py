"""The tool steps of a turn Cursor runs, recorded as `routing.tool_followup` would decide them.

`watch(stream, record)` passes a relayed RunSSE through unchanged (each chunk goes on before it is
read) and, for every `exec_server_message` Cursor's server sends in it, calls `record(tool, member)`
with the tool it runs (`tool_policy.exec_tool`: read, grep, ls, shell, write, delete, task, mcp,
fetch; other exec members are no tool step). Glider does not touch Cursor's loop: the decision is a
record only ("would have been allowed / denied"), so `glider route replay --against` can show what
a policy would change. Frames that cannot be read are passed over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from google.protobuf.message import DecodeError

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.framing import FrameReader
from glider_cli.router.tool_policy import exec_tool

_EXEC_TAG = 0x12  # AgentServerMessage field 2 (exec_server_message), length-delimited


async def watch(stream: AsyncIterator[bytes], record: Callable[[str, str], None]) -> AsyncIterator[bytes]:
    reader = FrameReader()
    async for chunk in stream:
        yield chunk
        for env in reader.feed(chunk):
            if env.end_stream:
                continue
            payload = env.message()
            if not payload or payload[0] != _EXEC_TAG:
                continue
            msg = pb.AgentServerMessage()
            try:
                msg.ParseFromString(payload)
            except DecodeError:
                continue
            member = msg.exec_server_message.WhichOneof("message")
            tool = exec_tool(member)
            if tool is not None and member is not None:
                record(tool, member)
