"""Lint of a bundled script (Glider's own): one in the subset `sandbox.native` runs as Python and is
checked by that subset, without the Starlark interpreter; any other is still loaded in the interpreter,
where it runs, and what stops it from loading is reported as before."""

from __future__ import annotations

import pytest

from glider_cli.app.lint import lint
from glider_cli.config.load import load_config
from glider_cli.config.model import Config
from glider_cli.sandbox import inprocess
from glider_cli.values import replace

# Valid Starlark outside the native subset (a comprehension): the router runs it in the interpreter.
STARLARK_ONLY = (
    "def evaluate(request):\n"
    '    texts = [m.content for m in request.messages if m.role == "user"]\n'
    '    if texts and "zzz" in texts[-1]:\n'
    '        return {"action": {"target": "local"}}\n'
    "    return None\n"
)
# Outside the subset and not loadable: an undefined name, which only loading it finds.
BROKEN = "def evaluate(request):\n    return [undefined_name for m in request.messages]\n"
# In the subset: no interpreter needed.
NATIVE = (
    "def evaluate(request):\n"
    '    if "zzz" in request.messages[-1].content:\n'
    '        return {"action": {"target": "local"}}\n'
    "    return None\n"
)


def with_bundled_script(source: str) -> Config:
    cfg = load_config(profile="default", environ={})
    scripts = [r for r in cfg.rules if r.trigger.type == "script" and r.trigger.bundled]
    assert scripts, "the default profile has bundled scripts"
    target = scripts[0]
    rules = tuple(
        replace(r, trigger=replace(r.trigger, source=source)) if r is target else r for r in cfg.rules
    )
    return replace(cfg, rules=rules)


class Counting:
    """The in-process Starlark sandbox, counting its checks."""

    def __init__(self) -> None:
        self.real = inprocess.InProcessSandbox()
        self.checks = 0

    def check(self, source: str, filename: str, **kw: object) -> list[object]:
        self.checks += 1
        return self.real.check(source, filename)  # type: ignore[return-value]


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    box = Counting()
    monkeypatch.setattr(inprocess, "bundled_sandbox", lambda: box)
    return box


def test_a_native_bundled_script_is_not_loaded_in_the_interpreter(counting: Counting) -> None:
    report = lint(with_bundled_script(NATIVE), known={})
    assert report.ok, report.to_dict()
    assert counting.checks == 0
    # The default profile as shipped: every bundled script is in the subset.
    assert lint(load_config(profile="default", environ={}), known={}).ok
    assert counting.checks == 0


def test_a_bundled_script_outside_the_subset_is_still_checked_by_loading_it(counting: Counting) -> None:
    report = lint(with_bundled_script(STARLARK_ONLY), known={})
    assert report.ok, report.to_dict()
    assert counting.checks == 1
    report = lint(with_bundled_script(BROKEN), known={})
    (err,) = report.errors
    assert err.key == "trigger.file"
    assert "undefined_name" in err.message and ":2:" in err.message
    assert counting.checks == 2
