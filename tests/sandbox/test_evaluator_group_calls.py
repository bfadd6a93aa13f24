"""The engine's group call: what crosses between Starlark and Python on the common path."""

from __future__ import annotations

import json

import pytest

from glider_cli.router.scripts import build_payload
from glider_cli.sandbox.inprocess import InProcessSandbox
from glider_cli.sandbox.results import ScriptOutcome
from glider_cli.sandbox.starlark_eval import Evaluator

NONE = "def evaluate(request):\n    return None\n"
SLOW = "def evaluate(request):\n    n = 0\n    for i in range(100000000):\n        n += i\n    return None\n"


class Counting(Evaluator):
    def __init__(self) -> None:
        super().__init__()
        self.entered: list[int] = []

    def _enter(self, index: int) -> str:
        self.entered.append(index)
        return super()._enter(index)


def payload() -> str:
    return build_payload({"model": "m"}, ["user"], ["hello"]).data


def test_only_the_scripts_after_the_first_tell_the_engine_they_start() -> None:
    engine = Counting()
    for sid in (1, 2, 3):
        assert engine.load(sid, NONE, f"s{sid}.star", 0.05, 1.0) == {"ok": True}
    out = engine.call((1, 2, 3), payload(), lambda i, o: None)
    assert out == [{"matched": False, "action": None, "error": None}] * 3
    # The engine starts the first script's clock itself: one Starlark-to-Python callback fewer.
    assert engine.entered == [1, 2]


def test_a_script_start_hands_python_no_value_to_encode_but_a_string(monkeypatch: pytest.MonkeyPatch) -> None:
    # starlark-pyo3 hands values across with json.dumps / json.loads: the callback takes no argument
    # and returns "", the cheapest value to encode; the call's one argument is the payload.
    engine = Evaluator()
    for sid in (1, 2, 3):
        engine.load(sid, NONE, f"s{sid}.star", 0.05, 1.0)
    engine.call((1, 2, 3), payload(), lambda i, o: None)  # the group is built
    dumped: list[object] = []
    loaded: list[object] = []
    real_dumps, real_loads = json.dumps, json.loads
    monkeypatch.setattr(json, "dumps", lambda v, *a, **k: dumped.append(v) or real_dumps(v, *a, **k))
    monkeypatch.setattr(json, "loads", lambda v, *a, **k: loaded.append(v) or real_loads(v, *a, **k))
    engine.call((1, 2, 3), payload(), lambda i, o: None)
    assert dumped == [payload(), "", ""]
    assert len(loaded) == 1  # the call's result; no callback argument


def test_each_script_keeps_its_own_deadline_after_a_failure() -> None:
    engine = Counting()
    engine.load(1, SLOW, "slow.star", 0.02, 1.0)
    engine.load(2, SLOW, "slow2.star", 0.02, 1.0)
    partials: list[int] = []
    out = engine.call((1, 2), payload(), lambda i, o: partials.append(i))
    assert [o["error"] for o in out] == ["stopped after 20 ms (line 3)"] * 2
    assert partials == [0, 1]
    # After a failure the call resumes at the next script, whose clock the engine starts itself.
    assert engine.entered == []


def test_an_unloaded_script_is_named_and_nothing_runs() -> None:
    engine = Evaluator()
    engine.load(1, NONE, "a.star", 0.05, 1.0)
    out = engine.call((1, 7), payload(), lambda i, o: None)
    assert (
        out
        == [
            {"matched": False, "action": None, "error": "not evaluated: script 7 is not loaded in the worker"}
        ]
        * 2
    )


def test_in_process_no_match_outcomes_are_plain_no_matches() -> None:
    box = InProcessSandbox()
    ids = [box.load(NONE, "a.star"), box.load(NONE, "b.star")]
    for _ in range(2):  # the second call reuses the group built by the first
        assert box.call(ids, payload()) == [ScriptOutcome(False), ScriptOutcome(False)]
