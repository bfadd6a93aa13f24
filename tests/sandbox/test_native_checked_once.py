"""A bundled script `glider lint` found in the native subset is not parsed and checked again when the
router compiles it (issue 29's cold start: `glider serve` lints its config, then compiles its rules),
and the literal check reads each literal's source text as `ast.get_source_segment` gives it."""

from __future__ import annotations

import ast

import pytest

from glider_cli.config.profiles import profiles_dir
from glider_cli.domain import Message
from glider_cli.sandbox import native
from glider_cli.sandbox.native import compile_native, unfit
from glider_cli.sandbox.native_ops import NativeRequest

BUNDLED = sorted((profiles_dir() / "scripts").glob("*.star"))

LITERALS = '''"""A docstring."""
WORDS = ["plain", 'single', """triple
quoted over
lines""", "esc\\\\n", "naïve ü", 3, 2.5, None, True]
TABLE = {"a": (1, "x"), "b": [10, 0.25]}


def evaluate(request):
    text = "multi" + """
line"""
    if len(text) > 3 and request.model == "ü":
        return {"target": "local"}
    return None
'''


def request() -> NativeRequest:
    return NativeRequest("ü", False, [Message("user", "hi")], 1, False, None)


def test_the_bundled_scripts_are_found_here() -> None:
    assert BUNDLED and all(unfit(p.read_text()) is None for p in BUNDLED)


@pytest.mark.parametrize("source", [LITERALS, *(p.read_text() for p in BUNDLED)])
def test_each_literal_reads_as_get_source_segment_gives_it(source: str) -> None:
    tree = ast.parse(source)
    checker = native._Checker(source)
    constants = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert constants
    for node in constants:
        assert checker.segment(node) == (ast.get_source_segment(source, node) or "")


def test_a_script_lint_checked_is_compiled_without_a_second_check(monkeypatch: pytest.MonkeyPatch) -> None:
    checks: list[str] = []
    check = native._check

    def counted(source: str) -> ast.Module:
        checks.append(source)
        return check(source)

    monkeypatch.setattr(native, "_check", counted)
    native._CHECKED.clear()
    assert unfit(LITERALS) is None
    script = compile_native(LITERALS, "s.star")
    assert script is not None and len(checks) == 1
    # Taken once: the next compile checks again (its tree was rewritten in place by the first).
    again = compile_native(LITERALS, "s.star")
    assert again is not None and len(checks) == 2
    assert script.call(request()) == again.call(request())
    # A source outside the subset is not kept, and still compiles to None.
    assert unfit("import os\n") is not None and "import os\n" not in native._CHECKED
    assert compile_native("import os\n", "s.star") is None
