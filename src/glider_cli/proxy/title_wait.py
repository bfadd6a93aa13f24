"""Titles held for the prompt they quote (`turns.lifecycle`, "A title ahead of its prompt").

Contract: `PromptWaits` is one per proxy. `await waits.wait(key, seconds)` holds the caller until
`waits.arrived(key)` is called (True) or `seconds` have passed (False); any number of callers may
wait on one key, and `arrived` wakes them all. `waits.waiting` holds the keys someone waits on (empty
when no one does: the proxy asks before it works out a key). Keys are what `Turns.awaited_prompt` /
`Turns.prompt_key` give. Nothing is kept once no one waits on a key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable


class PromptWaits:
    def __init__(self) -> None:
        # key -> (the event its waiters wait on, how many wait); read it, never change it from outside.
        self.waiting: dict[Hashable, tuple[asyncio.Event, int]] = {}

    async def wait(self, key: Hashable, seconds: float) -> bool:
        event, count = self.waiting.get(key) or (asyncio.Event(), 0)
        self.waiting[key] = (event, count + 1)
        try:
            await asyncio.wait_for(event.wait(), seconds)
            return True
        except TimeoutError:
            return False
        finally:
            held = self.waiting.get(key)
            if held is not None and held[0] is event:
                if held[1] > 1:
                    self.waiting[key] = (event, held[1] - 1)
                else:
                    del self.waiting[key]

    def arrived(self, key: Hashable | None) -> None:
        held = self.waiting.pop(key, None) if key is not None else None
        if held is not None:
            held[0].set()
