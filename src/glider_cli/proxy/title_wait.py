"""Titles held for the prompt they quote (`turns.lifecycle`, "A title ahead of its prompt").

Contract: `PromptWaits` is one per proxy. `await waits.wait(key, seconds)` holds the caller until
`waits.arrived(key)` is called (True) or `seconds` have passed (False); any number of callers may
wait on one key, and `arrived` wakes them all. `bool(waits)` is whether anyone waits (the proxy asks
before it works out a key). Keys are what `Turns.awaited_prompt` / `Turns.prompt_key` give.
Nothing is kept once no one waits on a key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable


class PromptWaits:
    def __init__(self) -> None:
        self._waiting: dict[Hashable, tuple[asyncio.Event, int]] = {}

    def __bool__(self) -> bool:
        return bool(self._waiting)

    async def wait(self, key: Hashable, seconds: float) -> bool:
        event, count = self._waiting.get(key) or (asyncio.Event(), 0)
        self._waiting[key] = (event, count + 1)
        try:
            await asyncio.wait_for(event.wait(), seconds)
            return True
        except TimeoutError:
            return False
        finally:
            held = self._waiting.get(key)
            if held is not None and held[0] is event:
                if held[1] > 1:
                    self._waiting[key] = (event, held[1] - 1)
                else:
                    del self._waiting[key]

    def arrived(self, key: Hashable | None) -> None:
        held = self._waiting.pop(key, None) if key is not None else None
        if held is not None:
            held[0].set()
