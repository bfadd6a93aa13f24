"""`paused()`: hold the cyclic garbage collector while building many small acyclic objects.

Reading a large log or scoring a large index creates hundreds of thousands of dicts and tuples
that can never form a cycle; each allocation burst would otherwise trigger full collections over
everything alive (the loaded graph included), which made timings erratic. Reference counting still
frees everything; the collector is restored on exit, even on error, and only if it was enabled.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
