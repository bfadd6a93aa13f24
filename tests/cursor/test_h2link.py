"""Glider's HTTP/2 connection driver (`cursor.h2link`) against a client built on python-hyper's `h2`
directly, over a real socket pair: frames that arrive in one read are each seen in order."""

from __future__ import annotations

import asyncio
import socket

import h2.config
import h2.connection
import h2.errors

from glider_cli.cursor.h2link import Gone, H2Link, Stream

Ends = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _pair() -> tuple[Ends, Ends]:
    a, b = socket.socketpair()
    return await asyncio.open_connection(sock=a), await asyncio.open_connection(sock=b)


def test_an_end_of_stream_and_a_reset_read_at_once_still_reach_the_stream_as_a_reset() -> None:
    async def go() -> tuple[bytes | None, Gone]:
        (ra, wa), (_, wb) = await _pair()
        seen: asyncio.Queue[tuple[bytes | None, Gone]] = asyncio.Queue()

        async def on_request(stream: Stream) -> None:
            body = await stream.read()
            seen.put_nowait((body, await asyncio.wait_for(stream.wait_gone(), 10)))

        link = H2Link(ra, wa, client_side=False, on_request=on_request)
        await link.start()
        serving = asyncio.create_task(link.serve())
        client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        client.initiate_connection()
        headers = [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/run")]
        client.send_headers(1, headers)
        client.send_data(1, b"hello")
        # The body's end and the stop, in one write: h2 reads both before Glider sees either event.
        client.end_stream(1)
        client.reset_stream(1, h2.errors.ErrorCodes.CANCEL)
        wb.write(client.data_to_send())
        await wb.drain()
        got = await asyncio.wait_for(seen.get(), 10)
        wb.close()
        await asyncio.wait_for(serving, 10)
        return got

    body, gone = asyncio.run(go())
    assert body == b"hello"
    assert gone.code == h2.errors.ErrorCodes.CANCEL
