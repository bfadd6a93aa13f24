"""`store.eventlog.redact` compiles its patterns on first use, once, whichever thread comes first:
importing it (as `glider serve` does at start, through `turns.rebuild`) compiles nothing (issue 29)."""

from __future__ import annotations

import subprocess
import sys

FRESH = r"""
import sys, threading
import glider_cli.store.eventlog.redact as r
assert r._patterns is None, "compiled at import"
assert "re2" not in sys.modules, "re2 imported at import"
seen = []
start = threading.Barrier(8)
def first_use(i):
    start.wait()
    if i % 2:
        seen.append((r.may_need_redaction(b'{"x-api-key": "k"}'), r._patterns))
    else:
        seen.append((r.text_may_need_redaction("Bearer abcdefghijkl"), r._patterns))
threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
assert all(hit for hit, _ in seen), seen
assert len({id(p) for _, p in seen}) == 1, "compiled more than once"
assert r.redact_text("key sk-ant-abcdefghijklmnop") == "key [REDACTED]"
print("ok")
"""


def test_import_compiles_nothing_and_first_use_compiles_once_across_threads() -> None:
    out = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
