from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.store.eventlog import log, prune
from glider_cli.store.eventlog.events import make_event

HELPER = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "writer_burst.py"
TODAY = dt.date(2026, 11, 29)


def test_plan_is_a_pure_value() -> None:
    days = [TODAY - dt.timedelta(days=n) for n in (0, 1, 13, 14, 30)]
    files = [(d, f"/c/events-{d.isoformat()}.jsonl", (TODAY - d).days) for d in days]
    files.append((TODAY + dt.timedelta(days=1), "/c/events-2026-11-30.jsonl", 7))
    p = prune.plan_for(files, 14, TODAY)
    assert p.cutoff == "2026-11-16"
    assert [i.day for i in p.delete] == ["2026-10-30", "2026-11-15"]
    assert [i.day for i in p.keep] == ["2026-11-16", "2026-11-28", "2026-11-29", "2026-11-30"]
    assert p.bytes_freed == 44
    assert p.to_dict()["delete"][0]["path"].endswith("events-2026-10-30.jsonl")
    one = prune.plan_for(files, 1, TODAY)
    assert "2026-11-29" not in [i.day for i in one.delete]
    # 0 deletes all but today's file (issue 14 §4: `glider prune --days 0 --yes` works).
    zero = prune.plan_for(files, 0, TODAY)
    assert [i.day for i in zero.delete] == [i.day for i in one.delete]
    assert "2026-11-29" in [i.day for i in zero.keep]
    with pytest.raises(StoreError, match="at least 0"):
        prune.plan_for(files, -1, TODAY)


def _day_file(context: Path, day: dt.date) -> Path:
    ev = make_event("0" * 32, "Note", f"{day.isoformat()}T12:00:00.000Z", "t", {})
    log.append_events(context, [ev])
    return log.day_path(context, day)


def test_apply_deletes_only_old_files_and_can_be_rerun(tmp_path: Path) -> None:
    old = [_day_file(tmp_path, TODAY - dt.timedelta(days=n)) for n in (20, 15)]
    keep = [_day_file(tmp_path, TODAY - dt.timedelta(days=n)) for n in (3, 0)]
    p = prune.plan(tmp_path, 14, TODAY)
    old[0].unlink()  # as if a first, interrupted prune had got this far
    r = prune.apply(p, today=TODAY)
    assert r.deleted == (str(old[1]),) and r.already_gone == (str(old[0]),)
    assert all(k.exists() for k in keep)
    assert prune.apply(prune.plan(tmp_path, 14, TODAY), today=TODAY).deleted == ()


def test_apply_refuses_a_plan_that_lists_a_recent_file(tmp_path: Path) -> None:
    today_file = _day_file(tmp_path, TODAY)
    forged = prune.PrunePlan(
        TODAY.isoformat(), 1, "2026-12-31", (prune.PruneItem(str(today_file), TODAY.isoformat(), 1),), ()
    )
    r = prune.apply(forged, today=TODAY)
    assert r.refused == (str(today_file),) and today_file.exists()


def test_prune_beside_a_live_writer_loses_no_new_event(tmp_path: Path) -> None:
    home = tmp_path / "home"
    context = Paths(home=home).context
    today = dt.datetime.now(dt.UTC).date()
    old = [_day_file(context, today - dt.timedelta(days=n)) for n in (40, 30, 20)]
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(home), "emit", "6000", "live"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("flushed")
    result = prune.apply(prune.plan(context, 14))
    out = proc.stdout.read()
    assert proc.wait(timeout=120) == 0 and out.rstrip().endswith("done")
    proc.stdout.close()
    assert sorted(result.deleted) == sorted(str(p) for p in old)
    texts = [e["data"]["text"] for e in log.iter_events(context) if e["turn_id"] == "live"]
    assert texts == [f"live {i}" for i in range(6000)]


def test_prune_days_0_yes_deletes_all_but_todays_file(glider_env: Path) -> None:
    context = Paths(home=glider_env).context
    today = dt.datetime.now(dt.UTC).date()
    for n in (30, 2, 1, 0):
        _day_file(context, today - dt.timedelta(days=n))
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "prune", "--days", "0", "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "keep only today's file" in proc.stdout and "deleted 3 files" in proc.stdout
    assert [d for d, _ in log.list_day_files(context)] == [today]
