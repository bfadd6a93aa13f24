"""`server.store_worker`: store views in a process of their own, recycled beyond a memory budget."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import orjson
import pytest

from glider_cli.config.settings import ContextSettings
from glider_cli.errors import QueryError
from glider_cli.paths import Paths
from glider_cli.server.store_worker import StoreWorker
from glider_cli.store.eventlog.writer import EventWriter


def not_a_server() -> float:
    """The budget is shared with the server: the test process is not one, it takes none of it."""
    return 0.0


@pytest.fixture
def paths(glider_env: Path) -> Paths:
    p = Paths(home=glider_env)
    with EventWriter(p) as w:
        for n in range(5):
            w.emit("TurnOpened", {"ask": f"question {n}"}, turn_id=f"t{n}")
            w.emit("Note", {"text": f"note {n} " + "x" * 50}, turn_id=f"t{n}")
    return p


def test_views_are_answered_by_another_process(paths: Paths) -> None:
    worker = StoreWorker(paths, ContextSettings(), server_rss=not_a_server)
    try:
        body, meta = worker.call("turns", 2, None)
        assert [t["turn_id"] for t in orjson.loads(body)] == ["t3", "t4"]
        assert meta == {"count": 2, "first": "t3"}
        pid = worker._proc.pid
        assert pid != os.getpid()
        assert orjson.loads(worker.call("turn", "t1")[0])["episode"]["asked"] == "question 1"
        assert worker.call("turn", "nope")[0] == b"null"
        with pytest.raises(QueryError) as err:
            worker.call("query", "t1 limit=zero")
        assert err.value.position == 9  # the value of limit=
        exported = b"".join(worker.stream("export")).splitlines()
        assert len(exported) == 10
        assert worker._proc.pid == pid and worker.started == 1  # one worker, its caches kept
    finally:
        worker.close()


def test_a_worker_over_its_budget_is_replaced_and_a_dead_one_restarted(paths: Paths) -> None:
    lean = StoreWorker(paths, ContextSettings(), budget_mb=1.0)  # every worker is over 1 MB
    try:
        for _ in range(3):
            assert len(orjson.loads(lean.call("turns", 10, None)[0])) == 5
        assert lean.started == 3
    finally:
        lean.close()
    worker = StoreWorker(paths, ContextSettings(), server_rss=not_a_server)
    try:
        worker.call("turns", 1, None)
        os.kill(worker._proc.pid, signal.SIGKILL)
        worker._proc.join(timeout=10)
        assert len(orjson.loads(worker.call("turns", 10, None)[0])) == 5
        assert worker.started == 2
    finally:
        worker.close()


def test_the_budget_is_shared_with_the_server(paths: Paths) -> None:
    """What a worker keeps is bounded by what the server leaves of the budget: a worker far under
    150 MB on its own is replaced after each view when the server holds 145 MB of it, and kept
    (one worker, its caches warm) when the server leaves it room."""
    squeezed = StoreWorker(paths, ContextSettings(), budget_mb=150.0, server_rss=lambda: 145.0)
    try:
        for _ in range(2):
            assert len(orjson.loads(squeezed.call("turns", 10, None)[0])) == 5
            assert isinstance(orjson.loads(squeezed.call("query", "t1")[0]), list)
            assert len(b"".join(squeezed.stream("export")).splitlines()) == 10
        assert squeezed.started == 6 and squeezed.recycled == 6
        assert not squeezed._proc  # the last one is gone too: nothing is kept between views
    finally:
        squeezed.close()
    roomy = StoreWorker(paths, ContextSettings(), budget_mb=150.0, server_rss=lambda: 20.0)
    try:
        for _ in range(3):
            roomy.call("turns", 10, None)
            roomy.call("query", "t1")
        assert roomy.started == 1 and roomy.recycled == 0
    finally:
        roomy.close()


def test_a_reader_leaving_an_export_does_not_reach_the_next_call(paths: Paths) -> None:
    worker = StoreWorker(paths, ContextSettings(), server_rss=not_a_server)
    try:
        pieces = worker.stream("export")
        next(pieces)
        pieces.close()
        assert len(orjson.loads(worker.call("turns", 10, None)[0])) == 5
    finally:
        worker.close()


def test_an_idle_worker_exits_by_itself(paths: Paths) -> None:
    worker = StoreWorker(paths, ContextSettings(), idle=0.2, server_rss=not_a_server)
    try:
        worker.call("turns", 1, None)
        proc = worker._proc
        proc.join(timeout=10)
        assert proc.exitcode == 0
        assert len(orjson.loads(worker.call("turns", 10, None)[0])) == 5  # a new one, on demand
    finally:
        worker.close()
