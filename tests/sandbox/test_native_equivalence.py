"""The bundled scripts give the same outcome evaluated as Python (sandbox.native) as through the
Starlark interpreter (sandbox.starlark_eval, in-process): over the captured client requests, generated
requests (non-ASCII text, case-mapping corner cases), every code point's lower case, and a script
that uses every construct of the subset on values where Python and Starlark disagree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import starlark as sl
from hypothesis import given, settings
from hypothesis import strategies as st

from glider_cli.config.load import load_config
from glider_cli.config.profiles import profiles_dir
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request
from glider_cli.router.compiled import Ctx
from glider_cli.router.complexity import ComplexityScorer, LazyComplexity
from glider_cli.sandbox.inprocess import InProcessSandbox
from glider_cli.sandbox.native import compile_native, unfit
from glider_cli.sandbox.native_ops import STARLARK_LOWER, g_lower
from glider_cli.sandbox.results import ScriptOutcome

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
BUNDLED = sorted((profiles_dir() / "scripts").glob("*.star"))
_PROTOCOLS = {
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}
_BOX = InProcessSandbox()


def ctx_for(request: ChatRequest, parent: dict[str, Any] | None = None) -> Ctx:
    cx = load_config(profile="default").routing.complexity
    scorer = ComplexityScorer(cx.keywords, cx.weights)
    text = request.last_user_text
    complexity = LazyComplexity(scorer, text, len(request.messages), request.has_tools, request.client_hint)
    return Ctx(request, request.last_text, text, complexity, parent=parent)


def both(source: str, name: str, request: ChatRequest, **kw: Any) -> tuple[ScriptOutcome, ScriptOutcome]:
    """(Starlark's outcome, the native outcome) of one script on one request."""
    native = compile_native(source, name)
    assert native is not None, unfit(source)
    sid = _BOX.load(source, name)
    ctx = ctx_for(request, **kw)
    return _BOX.call([sid], ctx.script_payload().data)[0], native.call(ctx.script_request())


def captured() -> list[tuple[str, ChatRequest]]:
    out = []
    for path in sorted(FIXTURES.glob("*.json")):
        for i, r in enumerate(json.loads(path.read_text())["requests"]):
            protocol = _PROTOCOLS.get(r["path"])
            if protocol and isinstance(r.get("body"), dict):
                out.append((f"{path.stem}#{i}", parse_request(protocol, r["body"])))
    return out


def test_the_bundled_scripts_are_all_in_the_native_subset() -> None:
    assert BUNDLED
    for path in BUNDLED:
        assert unfit(path.read_text()) is None, path.name


@pytest.mark.parametrize("script", BUNDLED, ids=lambda p: p.name)
def test_bundled_scripts_agree_on_the_captured_client_requests(script: Path) -> None:
    requests = captured()
    assert len(requests) >= 10
    for label, request in requests:
        starlark, native = both(script.read_text(), script.name, request)
        assert native == starlark, label


# Text that reaches both scripts' branches, and the case-mapping corners: the dotted İ, the final
# sigma, ß, ligatures, and the letters CPython 3.11 and starlark-pyo3 lower differently.
_FRAGMENTS = st.sampled_from(
    [
        "refactor",
        "REFACTOR",
        "Extract Method",
        "INLINE ",
        "rename ",
        "RENAME",
        "move the function",
        "/swarm",
        "[fanout]",
        "[FANOUT]",
        "/Swarm",
        "İ",
        "ΟΔΟΣ ",
        "Σ",
        "ß",
        "ﬁ",
        "ǅ",
        "Ⅻ",
        " ",
        "\n",
        "é",
        "😀",
        *(chr(cp) for cp in list(STARLARK_LOWER)[:12]),
    ]
)
_TEXT = st.lists(
    st.one_of(_FRAGMENTS, st.text(st.characters(exclude_categories=("Cs",)), max_size=12)), max_size=8
).map("".join)
_MESSAGES = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), _TEXT), min_size=1, max_size=4)


def body(messages: list[tuple[str, str]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 8,
        "messages": [{"role": r, "content": t} for r, t in messages],
        **extra,
    }


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_MESSAGES)
def test_bundled_scripts_agree_on_generated_requests(messages: list[tuple[str, str]]) -> None:
    request = parse_request("anthropic", body(messages))
    for script in BUNDLED:
        starlark, native = both(script.read_text(), script.name, request)
        assert native == starlark, (script.name, messages)


def test_lower_gives_starlarks_answer_for_every_code_point() -> None:
    module = sl.Module()
    sl.eval(module, sl.parse("l.star", "def f(s):\n    return s.lower()\n"), sl.Globals.standard())
    frozen = module.freeze()
    chars = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    # One call: each code point alone between NULs (NUL lowers to itself, and so splits cleanly).
    theirs = frozen.call("f", "\0".join(chars)).split("\0")
    ours = g_lower("\0".join(chars)).split("\0")
    assert len(theirs) == len(ours) == len(chars)
    differ = [hex(ord(c)) for c, a, b in zip(chars, theirs, ours, strict=True) if a != b]
    assert differ == []
    assert g_lower("ΟΔΟΣ ΟΔΟΣ.") == frozen.call("f", "ΟΔΟΣ ΟΔΟΣ.")


# Every construct of the subset, on values where Python's meaning and Starlark's part ways.
SINK = '''"""Every construct of the subset."""
WORDS = ["refactor", "İ", "straße", "σ"]
LIMITS = {"small": 10, "big": 1000}
FLAGS = (True, False, 1, 0)
EMPTY = None

def describe(m):
    text = m.content
    return [m.role, len(text), text.lower()[:40], text.find("a"),
            text.startswith(("/", "[")), text.endswith("!")]

def evaluate(request):
    """The docstring."""
    facts = []
    for m in request.messages:
        facts = facts + [describe(m)]
        if len(facts) > 3:
            break
    last = request.messages[-1] if request.messages else EMPTY
    text = last.content if last != None else ""
    low = text.lower()
    hits = []
    for w in WORDS:
        if w in low:
            hits = hits + [w]
        elif w.lower() not in text:
            continue
        else:
            pass
    checks = [True == 1, True in [1], 1 in FLAGS, 0 in [False], True != 1, FLAGS[0] == FLAGS[2],
              [True] == [1], {"a": True} == {"a": 1}, False < True, request.stream == True,
              request.has_tools != 0, [1, 2] < [1, 3], (1, 2) + (3,),
              request.messages[0] == request.messages[0],
              "a" in {"a": 1}, not [], -1.5, 7 - 2, "x" + "y", 1 == 1.0]
    size = "big" if request.estimated_tokens > LIMITS["small"] else "small"
    parent = request.parent.get("tool") if request.parent != None else None
    return {"matched": len(hits) > 0 or not request.has_tools, "action": {
        "target": "local", "facts": facts, "hits": hits, "checks": checks, "size": size,
        "neg": -request.estimated_tokens, "first": request.messages[0], "tail": low[-5:],
        "rev": low[::-1][:5], "parent": parent, "model": request.model, "request": request,
        "cx": [request.complexity_score, request.complexity_source, request.max_tokens]}}
'''


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_MESSAGES, st.sampled_from([None, {"tool": "Task", "subagent_type": "x"}]))
def test_every_construct_of_the_subset_agrees(messages: list[tuple[str, str]], parent: Any) -> None:
    request = parse_request("anthropic", body(messages, temperature=0.5, stream=True))
    starlark, native = both(SINK, "sink.star", request, parent=parent)
    assert starlark.error is None
    assert native == starlark


@pytest.mark.parametrize(
    "expr",
    [
        "True + 1",  # a bool is not a number
        "True < 1",
        "[1] < [True]",
        "-True",
        "[1, 2][True]",
        "'ab'[True:]",
        "len(request)",
        "'a'.get('x')",
        "'a'.find(('a',))",
        "request.temperature",  # not sent: the struct has no such field
        "first(request.messages[0].content)",  # a string is not iterable
        "1 in 'abc'",
        "request.messages[5]",
        "{'a': 1}['b']",
        "'a' < 1",
        "request.parent.lower()",
    ],
)
def test_what_starlark_refuses_is_an_error_natively_too(expr: str) -> None:
    first = "def first(s):\n    for c in s:\n        return c\n\n"
    source = f"{first}def evaluate(request):\n    return {{'x': {expr}}}\n"
    starlark, native = both(source, "e.star", parse_request("anthropic", body([("user", "hi")])))
    assert starlark.error is not None, expr
    assert native.error is not None and native.error.startswith("raised: "), expr
    assert "(line " in native.error, native.error
    assert not native.matched and native.action is None


@pytest.mark.parametrize(
    "returned",
    [
        "None",
        "{}",
        "{'matched': False}",
        "{'matched': 1}",
        "{'action': 'local'}",
        "[1]",
        "'yes'",
        "(1,)",
        "{'action': {'target': 'cloud'}, 'matched': True}",
        "{'matched': False, 'action': {'target': 'x'}}",
        "{'action': {'big': 'x' + '" + "y" * 17000 + "'}}",
    ],
)
def test_a_result_is_read_as_the_engine_reads_it(returned: str) -> None:
    source = f"def evaluate(request):\n    return {returned}\n"
    starlark, native = both(source, "r.star", parse_request("anthropic", body([("user", "hi")])))
    assert native == starlark


# Where the rewrite keeps Python's own operation, it must be for values whose meaning is the same:
# a loop variable that is bound to anything else, or a list shadowed by a local, keeps the helper.
TRAPS = {
    "rebound loop variable": (
        "W = ['a', 'b']\n\ndef evaluate(request):\n    for v in W:\n        pass\n"
        "    v = True\n    return {'action': {'x': v in [1]}}\n"
    ),
    "loop variable that is a parameter": (
        "W = []\n\ndef f(v):\n    for v in W:\n        pass\n    return v in [1]\n\n"
        "def evaluate(request):\n    return {'action': {'x': f(True)}}\n"
    ),
    "shadowed list": "W = ['a']\n\ndef evaluate(request):\n    W = [True]\n    for v in W:\n"
    "        return {'action': {'x': v in [1]}}\n",
    "literal indexes": "def evaluate(request):\n"
    "    return {'action': {'x': ['abc'[-1], [1, 2][0], request.messages[-1]]}}\n",
    "literal index on a dict": "def evaluate(request):\n    return {'action': {'x': {'a': 1}[0]}}\n",
    "string in a non-container": "W = ['a']\n\ndef evaluate(request):\n    for v in W:\n"
    "        return {'action': {'x': v in request}}\n",
}


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_what_the_rewrite_leaves_as_python_means_the_same(name: str) -> None:
    starlark, native = both(TRAPS[name], "t.star", parse_request("anthropic", body([("user", "hi")])))
    assert (native.error is None) == (starlark.error is None), (starlark, native)
    if starlark.error is None:
        assert starlark.action is not None and "x" in starlark.action
        assert native == starlark
