"""The router decides as it did before its decision path was reworked for speed (issue 29): on every
case of `golden_decisions` (the bundled profiles, typed and quoted commands, classifier patterns,
scripts, gates, `every=True`, the bench's requests, the captured client sessions through the turn
lifecycle) the explain view, the logged record and any error are byte for byte the golden's."""

from __future__ import annotations

import gzip
import json

from golden_decisions import GOLDEN, records


def test_every_decision_matches_the_golden() -> None:
    golden = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    now = json.loads(json.dumps(records(), sort_keys=True, ensure_ascii=False))
    assert sorted(now) == sorted(golden)
    for key in sorted(golden):
        assert now[key] == golden[key], key
