"""`DayFiles`: the event writer's day file, kept open between batches, and the store index beside it.

Contract (the writer serialises every call under its write lock):
- `append(day, data)` appends whole lines to the day's file through an O_APPEND descriptor kept open
  between batches (one write per batch) and returns the offset just past them. Every `recheck`
  seconds the descriptor is checked against its path: a file deleted or replaced under a running
  writer (by hand: prune never touches today's) is reopened. A directory that went away is made
  again, once.
- `index` is the store index's appender (`store.index.index_day`): one line per day-file write, so
  views never parse the log; it is reopened with each day file.
- `failed()` forgets the descriptor and the directory check after a write that failed; `close()`
  closes both files.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from glider_cli.store.eventlog import log
from glider_cli.store.index.index_day import IndexAppender


class DayFiles:
    """See the module contract."""

    def __init__(self, context_dir: Path, recheck: float) -> None:
        self.context_dir = context_dir
        self.recheck = recheck
        self.index = IndexAppender(context_dir)
        self._dir_ready = False
        self._fd: int | None = None
        self._day: str | None = None
        self._checked = 0.0

    def append(self, day: str, data: bytes) -> int:
        fd = self._fd if self._day == day else None
        if fd is not None:
            now = time.monotonic()
            if now - self._checked > self.recheck:
                self._checked = now
                if not self._same_file(fd, day):
                    fd = None
        if fd is None:
            fd = self._open(day)
        n = os.write(fd, data)  # `log.write_all`, its one usual write made here
        if n < len(data):
            log.write_all(fd, data[n:])
        return os.lseek(fd, 0, os.SEEK_CUR)

    def failed(self) -> None:
        self._dir_ready = False
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd, self._day = self._fd, None, None
            with contextlib.suppress(OSError):
                os.close(fd)
        self.index.close()

    def _same_file(self, fd: int, day: str) -> bool:
        try:
            st, here = os.fstat(fd), os.stat(log.day_path(self.context_dir, day))
        except OSError:
            return False
        return st.st_nlink > 0 and (st.st_ino, st.st_dev) == (here.st_ino, here.st_dev)

    def _open(self, day: str) -> int:
        self.close()
        path = log.day_path(self.context_dir, day)
        if not self._dir_ready:
            self.context_dir.mkdir(parents=True, exist_ok=True)
            self._dir_ready = True
        try:
            fd = log.open_append(path)
        except FileNotFoundError:  # the directory went away under us: make it again, once
            self.context_dir.mkdir(parents=True, exist_ok=True)
            fd = log.open_append(path)
        self._fd, self._day, self._checked = fd, day, time.monotonic()
        self.index.reopen()
        return fd
