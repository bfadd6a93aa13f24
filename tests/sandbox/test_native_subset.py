"""The native evaluator's subset check: each construct outside it sends the script back to the
Starlark interpreter (a bundled script in the router included), and what runs natively can reach
no Python builtin."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.config.model import Trigger
from glider_cli.domain import Message
from glider_cli.router.triggers import NativeScriptMatcher, ScriptMatcher, compile_trigger
from glider_cli.sandbox.inprocess import InProcessSandbox
from glider_cli.sandbox.native import compile_native, unfit
from glider_cli.sandbox.native_ops import NativeRequest

OK = "def evaluate(request):\n    return None\n"


def body(*lines: str) -> str:
    return "def evaluate(request):\n" + "".join(f"    {line}\n" for line in lines)


FORBIDDEN = {
    "import": "import os\n" + OK,
    "from import": "from os import path\n" + OK,
    "load": 'load("x.star", "y")\n' + OK,
    "while": body("while True:", "    pass"),
    "lambda": body("f = lambda x: x", "return None"),
    "comprehension": body("return [m for m in request.messages]"),
    "dict comprehension": body("return {m: 1 for m in []}"),
    "f-string": body('return {"x": f"{request.model}"}'),
    "is": body("return None if request.parent is None else None"),
    "chained comparison": body("return 1 < 2 < 3"),
    "dunder attribute": body("return request.__class__"),
    "dunder name": body("return __name__"),
    "helper name": body("return g_eq(1, 1)"),
    "unknown attribute": body("return request.tool_calls"),
    "unknown method": body("return request.model.upper()"),
    "mutating method": "V = []\n" + body("V.append(1)"),
    "unknown builtin": body("return str(1)"),
    "range": body("for i in range(10):", "    pass"),
    "fail": body('fail("no")'),
    "struct": body("return struct(a = 1)"),
    "keyword argument": body('return {"a": request.model.find(sub = "x")}'),
    "starred argument": body("return len(*request.messages)"),
    "wrong arity": body("return len()"),
    "subscript assignment": "V = [1]\n" + body("V[0] = 2"),
    "attribute assignment": body("request.model = 1"),
    "augmented assignment": body("x = 1", "x += 1"),
    "tuple unpacking": body("a, b = 'ab'"),
    "for-else": body("for m in request.messages:", "    pass", "else:", "    pass"),
    "global": "X = 1\n" + body("global X"),
    "try": body("try:", "    pass", "except:", "    pass"),
    "raise": body("raise ValueError"),
    "with": body("with x:", "    pass"),
    "assert": body("assert True"),
    "del": body("x = 1", "del x"),
    "nested def": body("def f():", "    return 1", "return f()"),
    "recursion": "def f(x):\n    return f(x)\n\n" + body("return f(1)"),
    "call of a later function": body("return later()") + "\ndef later():\n    return None\n",
    "function as a value": "def f():\n    return 1\n\n" + body("return {'f': f}"),
    "decorator": "@x\n" + OK,
    "default argument": "def evaluate(request = None):\n    return None\n",
    "two parameters": "def evaluate(request, other):\n    return None\n",
    "no evaluate": "def other(request):\n    return None\n",
    "evaluate not a function": "evaluate = 1\n",
    "top-level call": "X = len([1])\n" + OK,
    "top-level if": "if True:\n    X = 1\n" + OK,
    "top-level name bound twice": "X = 1\nX = 2\n" + OK,
    "computed top-level value": "X = [1] + [2]\n" + OK,
    "duplicate dict key": body('return {"a": 1, "a": 2}'),
    "non-string dict key": body("return {1: 2}"),
    "byte string": body('return {"a": b"x"}'),
    "string prefix": body('return {"a": r"x"}'),
    "string escape": body('return {"a": "\\x41"}'),
    "implicit concatenation": body('return {"a": "x" "y"}'),
    "implicit concatenation, mixed quotes": body("return {'a': \"x\" 'y'}"),
    "implicit concatenation, triple quotes": body("return {'a': '''x''' '''y'''}"),
    "implicit concatenation, empty": body('return {"a": "" ""}'),
    "hex number": body("return {'a': 0x10}"),
    "underscore number": body("return {'a': 1_000}"),
    "multiplication": body("return {'a': 'x' * 3}"),
    "modulo": body("return {'a': '%s' % 1}"),
    "is not": body("return 1 is not 2"),
    "walrus": body("return (x := 1)"),
    "shadowed builtin": "len = 1\n" + OK,
    "tab": "def evaluate(request):\n\treturn None\n",
    "line continuation": "X = 1 + \\\n  2\n" + OK,
    "annotation": "def evaluate(request: int):\n    return None\n",
    "not python": "def evaluate(request):\n  return None if 1 else\n",
}


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_each_construct_outside_the_subset_is_refused(name: str) -> None:
    source = FORBIDDEN[name]
    assert unfit(source) is not None, name
    assert compile_native(source, "x.star") is None


def test_the_subset_takes_what_it_lists() -> None:
    source = (
        '"""doc."""\nA = ["x", 1, 1.5, True, None, (1,), {"k": "v"}]\n\n'
        "def helper(m, n):\n    return m.role == n\n\n"
        "def evaluate(request):\n"
        '    """doc."""\n'
        "    x = len(request.messages)\n"
        "    for m in request.messages:\n"
        '        if helper(m, "user") and not (x < 0 or x >= 9):\n'
        "            continue\n"
        "        elif m.content.startswith('a\\n\\t\\\\\\'\\\"'):\n"
        "            break\n"
        "        else:\n"
        "            pass\n"
        "    y = request.parent.get('tool', 'none') if request.parent != None else -x\n"
        "    return {'matched': 'x' in A and x - 1 != y, 'action': {'target': 'local'}}\n"
    )
    assert unfit(source) is None
    assert InProcessSandbox().check(source, "ok.star") == []  # and it is Starlark too
    native = compile_native(source, "ok.star")
    assert native is not None
    out = native.call(NativeRequest("m", False, [Message("user", "hi")], 1, False, None))
    assert out.matched and out.action == {"target": "local"}


def test_the_code_runs_without_python_builtins() -> None:
    native = compile_native(OK, "ok.star")
    assert native is not None
    scope = native._evaluate.__globals__
    assert scope["__builtins__"] == {}
    assert all(name.startswith("g_") for name in scope if name not in ("__builtins__", "evaluate"))


def trigger(source: str, *, bundled: bool) -> Trigger:
    return Trigger("script", file=str(Path("/nonexistent") / "s.star"), source=source, bundled=bundled)


def test_a_bundled_script_outside_the_subset_falls_back_to_starlark() -> None:
    # struct() and fail() are Starlark's own: the script still works, through the interpreter.
    source = body("if request.messages:", "    return struct(matched = True)", 'fail("empty")')
    matcher = compile_trigger(trigger(source, bundled=True))
    assert isinstance(matcher, ScriptMatcher)
    native = compile_trigger(trigger(OK, bundled=True))
    assert isinstance(native, NativeScriptMatcher)


def test_a_user_script_is_never_evaluated_natively() -> None:
    matcher = compile_trigger(trigger(OK, bundled=False))
    assert isinstance(matcher, ScriptMatcher)
    assert type(matcher.script.sandbox).__name__ == "Sandbox"  # the supervised worker


def test_a_native_call_past_its_deadline_is_no_match_like_a_stopped_script() -> None:
    words = "W = [" + ", ".join(f'"w{i}"' for i in range(300)) + "]\n"
    slow = words + body(
        "n = 0",
        "for a in W:",
        "    for b in W:",
        "        for c in W:",
        "            n = n + 1",
        "return {'action': {'target': 'local'}}",
    )
    native = compile_native(slow, "slow.star", deadline_s=0.001)
    assert native is not None
    out = native.call(NativeRequest("m", False, [], 1, False, None))
    assert not out.matched and out.error == "stopped after 1 ms"
