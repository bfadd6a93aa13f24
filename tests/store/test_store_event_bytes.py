"""The bytes the event writer puts on disk are fixed (issue 29 made the event path cheaper, not
different): a fixed set of realistic requests' events, recorded with a fixed clock and seeded ids on
every path of the writer (`tests/fixtures/store/event_bytes.py`), gives the day files, the index
delta lines and the `recent()` reads kept in `tests/fixtures/store/event_bytes/`, made by that script
from the code before the change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "store"
GOLDEN = FIXTURES / "event_bytes"
SECRETS = (b"sk-ant-api03", b"Bearer abcdefgh", b"Zm9vOmJhcg", b"opaque-value-42", b"sk-proj-")


def test_day_files_index_and_ring_reads_are_byte_identical_to_the_golden(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # A process of its own: the ids are seeded and the timestamp cache is the module's.
    subprocess.run([sys.executable, str(FIXTURES / "event_bytes.py"), str(out)], check=True, timeout=60)
    names = sorted(p.name for p in GOLDEN.iterdir())
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == names
    for name in names:
        got, want = (out / name).read_bytes(), (GOLDEN / name).read_bytes()
        if got != want:  # the first differing line, for the failure message
            pairs = zip(got.splitlines(), want.splitlines(), strict=False)
            diff = next(((i, g, w) for i, (g, w) in enumerate(pairs) if g != w), None)
            raise AssertionError(f"{name} differs from the golden (line, got, want): {diff}")
    day = b"".join((out / n).read_bytes() for n in names if n.startswith("events-"))
    assert not any(s in day for s in SECRETS)
    assert b"[REDACTED]" in day
    # `recent()` reads back what the day files hold.
    on_disk = {e["id"]: e for e in map(orjson.loads, day.splitlines())}
    for line in (out / "recent.jsonl").read_bytes().splitlines():
        ev = orjson.loads(line)
        assert on_disk[ev["id"]] == ev
