"""HTTP/2 runs are independent streams: two on one connection, a slow reader that holds only its own
(a 5 MB reply through a small window, with Glider's memory held at a few windows), a reset that
cancels one run, a malformed frame or a lost connection that ends one connection's runs (recorded)
while others go on, and a client bounded by the h2 settings (streams, header list size)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cursor_wire as wire
import h2.errors
import h2.exceptions
import h2.settings
import pytest
from cursor_client import all_decoded_strictly, texts, trailer
from cursor_h2_client import RUN, H2CursorClient
from cursor_harness import cursor_yaml
from fake_cursor import FakeCursor

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"
MB = 1024 * 1024


@pytest.fixture
def origin() -> Iterator[FakeCursor]:
    with FakeCursor(alpn=("h2",)) as f:
        yield f


async def settle(read: Any, timeout: float = 10.0) -> int:
    """`read()` once it stopped changing for half a second."""
    last, since, end = read(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < end:
        await asyncio.sleep(0.05)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 0.5:
            break
    return int(last)


def test_a_slow_reader_holds_only_its_own_stream_and_5mb_pass_a_small_window(
    fake, origin, glider_for, tmp_path: Path, strict: Any
) -> None:
    fake.reset()
    origin.big = 5 * MB
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca, window=16 * 1024)

    async def go() -> tuple[Any, Any, int]:
        conn = await client.connect(AGENT)
        big, rid = await conn.start_run(wire.run_request("conv-big", wire.user_action("/cloud dump it all")))
        await asyncio.wait_for(big.response, 30)
        # The client reads nothing of the big run: Cursor can send only what the windows hold.
        while not origin.h2_runs:
            await asyncio.sleep(0.02)
        held = await settle(lambda: origin.h2_runs[0].bytes_sent)
        # Meanwhile a second run on the same connection is answered whole.
        other = await conn.run(wire.run_request("conv-other", wire.user_action("/local say hello")))
        answer = await conn.read_run(big, rid=rid)
        await conn.close()
        return answer, other, held

    answer, other, held = asyncio.run(go())
    assert "".join(texts(other)) == "hello from fake ollama fake-model" and trailer(other) == {}
    assert all_decoded_strictly(other)  # every frame Glider wrote on the local run, as Cursor reads it
    # Flow control held Cursor at a few windows (the client's 16 KiB, Glider's 256 KiB stream window).
    assert held < 512 * 1024, held
    assert answer.status == 200 and trailer(answer) == {}
    body = "".join(texts(answer))
    assert body.count("x") == 5 * MB and body.startswith("hello from cursor") and body.endswith(" (done)")
    assert answer.body == b"".join(f for _, f in origin.h2_runs[0].sent)  # unchanged, byte for byte
    assert all_decoded_strictly(answer)
    done = g.server.wait_for("OriginPassthrough")[-1]
    assert done["complete"] is True


def test_a_reset_cancels_that_run_only(fake, origin, glider_for, tmp_path: Path, strict: Any) -> None:
    fake.reset()
    # The local model answers long after the run's first heartbeat (3 s): the stop comes mid-turn.
    fake.set_fault(delay=10.0, paths=("/api/chat",), times=1)
    origin.gate = True
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> tuple[Any, Any, Any]:
        conn = await client.connect(AGENT)
        slow, rid = await conn.start_run(wire.run_request("conv-stop", wire.user_action("/local think hard")))
        cloud, _ = await conn.start_run(wire.run_request("conv-cloud", wire.user_action("/cloud go")))
        await asyncio.wait_for(slow.response, 30)
        await asyncio.wait_for(cloud.response, 30)
        while not origin.h2_runs:
            await asyncio.sleep(0.02)
        # The local run is read until Glider's first frame on it (a heartbeat while the model thinks).
        first = asyncio.Event()
        reading = asyncio.create_task(conn.read_run(slow, lambda flags, p: first.set(), rid=rid))
        waiting = asyncio.create_task(first.wait())
        await asyncio.wait([reading, waiting], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if reading.done():
            reading.result()  # the reading failed (a frame protobuf-es rejects raises here)
        assert first.is_set(), "no frame on the local run"
        await slow.reset()  # the person pressed stop on the local run
        stopped = await asyncio.wait_for(reading, 30)
        await cloud.send(b"", end=True)  # the cloud run's client had ended its body (half-closed) ...
        await asyncio.sleep(0.5)
        await cloud.reset()  # ... and pressed stop while Cursor holds the run mid-turn
        # Cursor sees the reset while it still holds the run (Glider did not wait for its next frame).
        end = time.monotonic() + 10
        while not origin.h2_runs[0].reset and time.monotonic() < end:
            await asyncio.sleep(0.02)
        assert origin.h2_runs[0].reset
        origin.gate = False
        origin.release()
        after = await conn.run(wire.run_request("conv-next", wire.user_action("/cloud again")))
        await conn.close()
        return stopped, cloud, after

    stopped, _, after = asyncio.run(go())
    # What Glider wrote on the local run before the stop decoded as Cursor's client decodes it.
    assert stopped.reset == h2.errors.ErrorCodes.CANCEL and stopped.frames
    assert stopped.decoded[0] == {"interactionUpdate": {"heartbeat": {}}} and all_decoded_strictly(stopped)
    # The connection and the next run go on.
    assert texts(after) == ["hello from cursor", " (done)"]
    local = g.server.wait_for("FulfilledLocal")[-1]
    assert local["complete"] is False and local["client_disconnected"] is True
    ends = g.server.wait_for("OriginPassthrough", 2)
    assert sorted(e["complete"] for e in ends) == [False, True]
    assert origin.h2_runs[0].reset  # Cursor saw the cloud run's stream reset


def test_a_malformed_frame_fails_that_connection_only(fake, origin, glider_for, tmp_path: Path) -> None:
    fake.reset()
    origin.gate = True
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> tuple[Any, Any, Any]:
        bad = await client.connect(AGENT)
        good = await client.connect(AGENT)
        held, rid = await bad.start_run(wire.run_request("conv-bad", wire.user_action("/cloud go")))
        await asyncio.wait_for(held.response, 30)
        # A DATA frame on stream 0: a connection error in HTTP/2.
        bad.peer.write_raw(bytes.fromhex("000004000000000000") + b"oops")
        cut = await bad.read_run(held, rid=rid)
        await asyncio.wait_for(bad.peer.closed.wait(), 10)
        answer = await good.run(wire.run_request("conv-good", wire.user_action("/local say hello")))
        origin.release()
        await good.close()
        return bad.peer.goaway, cut, answer

    goaway, cut, answer = asyncio.run(go())
    assert goaway is not None and goaway.error_code == h2.errors.ErrorCodes.PROTOCOL_ERROR
    assert cut.reset is not None  # the open run on that connection ended with it
    assert "".join(texts(answer)) == "hello from fake ollama fake-model"
    done = g.server.wait_for("OriginPassthrough")[-1]
    assert done["complete"] is False  # the cut run's outcome is recorded


def test_connection_loss_ends_its_runs_with_their_outcome(fake, origin, glider_for, tmp_path: Path) -> None:
    fake.reset()
    fake.set_fault(delay=5.0, paths=("/api/chat",), times=1)
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> None:
        conn = await client.connect(AGENT)
        s, _ = await conn.start_run(wire.run_request("conv-lost", wire.user_action("/local think")))
        await asyncio.wait_for(s.response, 30)
        conn.peer.writer.transport.abort()  # the network went away
        await asyncio.wait_for(conn.peer.closed.wait(), 10)

    asyncio.run(go())
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["complete"] is False and done["client_disconnected"] is True
    assert origin.h2_runs == []


def test_streams_and_header_lists_are_bounded_by_the_h2_settings(origin, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(origin, tmp_path, "http://127.0.0.1:9"))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        conn = await client.connect(AGENT)
        await conn.unary("/agent.v1.AgentService/GetUsableModels", b"")  # settings exchanged by now
        remote = conn.peer.conn.remote_settings
        out["settings"] = (remote.max_concurrent_streams, remote.max_header_list_size)
        # A header block over the advertised list size: the connection ends (GOAWAY).
        big = conn.headers(
            "/agent.v1.AgentService/GetUsableModels", "application/proto", {"x-big": "a" * 100_000}
        )
        await conn.peer.open(big, end=True)
        await asyncio.wait_for(conn.peer.closed.wait(), 10)
        out["oversized"] = conn.peer.goaway
        # A client that ignores the stream limit (its own view of it lifted): the connection ends too.
        greedy = await client.connect(AGENT)
        await greedy.unary("/agent.v1.AgentService/GetUsableModels", b"")
        view = greedy.peer.conn.remote_settings
        view[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = 10_000
        view.acknowledge()
        for _ in range(130):
            try:
                await greedy.peer.open(greedy.headers(RUN, "application/connect+proto"))
            except h2.exceptions.ProtocolError:  # its GOAWAY came in while it was still opening
                break
        await asyncio.wait_for(greedy.peer.closed.wait(), 10)
        out["greedy"] = greedy.peer.goaway
        # The proxy itself goes on.
        fresh = await client.connect(AGENT)
        out["after"] = await fresh.unary("/agent.v1.AgentService/GetUsableModels", b"")
        await fresh.close()
        return out

    out = asyncio.run(go())
    assert out["settings"] == (128, 64 * 1024)
    assert out["oversized"] is not None and out["oversized"].error_code != h2.errors.ErrorCodes.NO_ERROR
    assert out["greedy"] is not None and out["greedy"].error_code != h2.errors.ErrorCodes.NO_ERROR
    assert out["after"].status == 200 and out["after"].body == b"\x0a\x02ok"


def test_glider_stopping_sends_goaway_and_records_the_open_runs(
    fake, origin, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    fake.set_fault(delay=30.0, paths=("/api/chat",), times=1)
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> tuple[Any, int | None]:
        conn = await client.connect(AGENT)
        s, _ = await conn.start_run(wire.run_request("conv-stop-all", wire.user_action("/local think")))
        await asyncio.wait_for(s.response, 30)
        await asyncio.to_thread(g.server.__exit__, None, None, None)
        await asyncio.wait_for(conn.peer.closed.wait(), 20)
        return conn.peer.goaway, s.reset_code

    goaway, reset = asyncio.run(go())
    assert goaway is not None and goaway.error_code == h2.errors.ErrorCodes.NO_ERROR
    assert reset is not None  # the open run ended with the connection
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["complete"] is False
