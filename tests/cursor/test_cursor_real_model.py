"""One Cursor-shaped `/local` turn through the real proxy, answered by the real local model (llama.cpp's
server with SmolLM2-135M behind the logging relay; skips only when .ci/run could not build it): the
answer comes back as Cursor's frames and nothing of the turn reaches the (fake) Cursor origin."""

from __future__ import annotations

import asyncio
from pathlib import Path

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, texts, trailer
from cursor_harness import cursor_yaml

from llama_server import LoggingRelay

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_local_cursor_turn_answered_by_the_real_model(
    llama_relay: LoggingRelay, fake_cursor, glider_for, tmp_path: Path
) -> None:
    yaml = cursor_yaml(fake_cursor, tmp_path, "unused").replace(
        "ollama: {type: ollama, side: local, base_url: 'unused', model: fake-model}",
        f"ollama: {{type: openai, side: local, base_url: '{llama_relay.url}/v1', model: smol,"
        " max_tokens: 24}",
    )
    g = glider_for(yaml)
    client = CursorClient(g.port, g.ca)
    # Ask mode: a tool-free turn (the text answer, no agent loop).
    text = "/local Say hello in one short sentence."
    msg = wire.run_request("conv-real", wire.user_action(text, mode=2))
    sse, appends, _ = asyncio.run(client.turn("agent.api5.cursor.sh", msg, more=[wire.heartbeat()]))
    assert sse.status == 200 and trailer(sse) == {}
    assert "".join(texts(sse)).strip()
    assert [a.status for a in appends] == [200, 200]
    assert [r.path for r in fake_cursor.requests] == []
    [seen] = [r for r in llama_relay.requests if r.path.endswith("/chat/completions")]
    assert seen.body["messages"][0]["role"] == "system" and "tools" not in seen.body
    assert "Say hello in one short sentence." in str(seen.body["messages"][-1])
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["backend"] == "ollama" and done["complete"] is True
