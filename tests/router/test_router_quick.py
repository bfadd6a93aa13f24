"""The decision's cheap pre-checks (issue 29): a rule whose matcher can only say its one "no" is
not called, and the classifier's RE2 set and the wrap-up pattern are not searched when a literal
pre-check proves they cannot match; the verdicts and the trace stay the same (test_router_golden
holds every decision to the golden made before)."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
import re2
from golden_decisions import TEXTS, bench_request

from glider_cli.config.load import load_config
from glider_cli.router import Router, triggers
from glider_cli.router.classifier import PatternIndex
from glider_cli.router.prefilter import LIMIT, Prefilter, requirement
from routing_helpers import message

PROFILES = ("default", "local-first", "pure-local")


class CountingSet:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def Match(self, text: str) -> Any:
        self.calls += 1
        return self.inner.Match(text)


def pattern_index(router: Router) -> PatternIndex:
    rule = next(r for r in router.rules if r.name == "task_classifier.cloud")
    index: PatternIndex = rule.matcher.index  # type: ignore[attr-defined]
    return index


def test_the_typical_request_is_decided_without_an_re2_search_or_the_wrapup_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    router = Router(load_config(profile="default"))
    index = pattern_index(router)
    counting = CountingSet(index._set)
    monkeypatch.setattr(index, "_set", counting)
    searched: list[str] = []
    wrapup = triggers._WRAPUP

    class Spy:
        def search(self, text: str, *args: Any) -> Any:
            searched.append(text)
            return wrapup.search(text, *args)

    monkeypatch.setattr(triggers, "_WRAPUP", Spy())
    d = router.decide(bench_request())
    assert d.rule == "small_context_local"
    assert counting.calls == 0 and searched == []
    # A message with a pattern's word is searched, and the pattern's verdict is RE2's.
    assert router.decide(message("find the root cause of the deadlock")).rule == "task_classifier.cloud"
    assert counting.calls == 1
    assert router.decide(message("Summarize the conversation")).rule == "composer_wrapup_origin"
    assert searched == ["Summarize the conversation"]


def test_rules_that_can_only_say_no_are_not_called() -> None:
    router = Router(load_config(profile="default"))
    called: list[str] = []
    for rule in router.rules:
        inner = rule.matcher

        def spy(ctx: Any, inner: Any = inner, name: str = rule.name) -> Any:
            called.append(name)
            return inner(ctx)

        object.__setattr__(rule, "matcher", spy)
    before = router.decide(bench_request())
    assert called == ["swarm_fanout", "refactor_local", "large_context_cloud", "small_context_local"]
    assert before.rule == "small_context_local"


def _texts() -> list[str]:
    rng = random.Random(29)
    words = [
        "fix", "the", "typo", "design", "a", "system", "deadlock", "plan", "hello", "ok", "okay",
        "Rename", "variable", "thanks", "thank you", "write", "test for", "explain", "this", "line",
        "across", "whole", "codebase", "port", "it", "to", "migration", "why does", "it", "fail",
        "trade-off", "tradeoffs", "compare", "approaches", "FORMAT", "sort imports", "\t", "\n", "  ",
        "security", "review", "architecture", "root cause", "what is", "what does", "regex",
    ]  # fmt: skip
    out = list(TEXTS)
    for _ in range(3000):
        n = rng.randint(0, 8)
        text = " ".join(rng.choice(words) for _ in range(n))
        if rng.random() < 0.3:
            text = rng.choice(string.whitespace + "xK\u212a\u017f") + text
        out.append(text)
    return out


@pytest.mark.parametrize("profile", PROFILES)
def test_the_pattern_pre_check_never_hides_a_match(profile: str) -> None:
    cls = load_config(profile=profile).routing.classifier
    sources = [*cls.cloud_patterns, *cls.small_patterns]
    pre = Prefilter(sources)
    assert pre.usable  # every bundled pattern gives a requirement
    compiled = [re2.compile("(?i)" + s) for s in sources]
    quiet = 0
    for text in _texts():
        matched = any(p.search(text) for p in compiled)
        if matched:
            assert pre.may_match(text), text
        quiet += not pre.may_match(text)
    assert quiet > 500  # and it does spare searches


@pytest.mark.parametrize(
    "source",
    [
        r"[[:alpha:]]+x",
        r"\pLfoo",
        r"a{,3}b",
        r"x\{y",
        r"(a)\1",
        r"(?m)^fix",
        r"foo(?=bar)",
        r"(?P<n>a)|(?P=n)",
        r"\x{263a}abc",
        r"\Qa.b\E",
        r"abc\z",
    ],
)
def test_a_pattern_the_pre_check_cannot_read_is_always_searched(source: str) -> None:
    assert requirement(source) is None
    pre = Prefilter(["design", source])
    assert not pre.usable and pre.may_match("nothing")


def test_requirements_of_the_usual_shapes() -> None:
    assert requirement(r"^\s*(fix|correct) the typo") == ("starts", frozenset({"fix", "correct"}))
    assert requirement(r"^(fix|correct) ") == ("prefix", frozenset({"fix", "correct"}))
    assert requirement(r"^\s* x") == ("starts", frozenset({"x"}))
    assert requirement(r"^\s* ") == ("contains", frozenset({" "}))
    assert requirement(r"\b(deadlock|root cause)\b") == ("contains", frozenset({"deadlock", "root cause"}))
    assert requirement(r"(a|b)") is None  # one character each: nothing worth looking for
    # `^` alone: the text itself, blanks included, must start so.
    for source, text in ((r"^ x", " x y"), (r"^\s* ", "\t y"), (r"^\s* x", "  x"), (r"^\tx", "\tx")):
        assert re2.search("(?i)" + source, text)
        assert Prefilter([source]).may_match(text), source
    assert not Prefilter([r"^ x"]).may_match("x y")
    pre = Prefilter([r"^\s*(fix|correct) the typo", r"\bdeadlock\b"])
    assert pre.may_match(" \t\n Fix the typo") and pre.may_match("a DEADLOCK")
    assert not pre.may_match("a fix")  # `^`: only where the text starts
    assert pre.may_match("\u017fome")  # not ASCII: RE2 decides
    assert pre.may_match("x" * (LIMIT + 1))  # too long: RE2 decides
    # \v is no blank to RE2's \s: RE2 finds no match there, and neither does the pre-check.
    assert not re2.search(r"(?i)^\s*(fix|correct) the typo", "\vfix the typo")
    assert not pre.may_match("\vfix the typo")


@pytest.mark.parametrize("first", [*string.printable, "\u017f", "\u212a", "\u00a0", "\u2003"])
def test_the_wrapup_pre_check_never_hides_a_wrapup(first: str) -> None:
    for rest in ("ummarize the conversation", "lease summarize the work", "ecap the session", ""):
        text = first + rest
        if triggers._WRAPUP.search(text, 0, 2000):
            assert triggers.may_ask_wrapup(text), text
    assert triggers.may_ask_wrapup("  Recap the changes")
    assert not triggers.may_ask_wrapup("Good. Where should we look next?")
    assert not triggers.may_ask_wrapup(" \n ")


_WORDS = ["fix", "the", "typo", "ab", "a", "b", "hello", "ok", "x", "Fix", "THE", "de", "sign"]


def _atom(rng: random.Random, depth: int) -> str:
    r = rng.random()
    if depth > 2 or r < 0.35:
        if rng.random() < 0.9:
            return re2.escape(rng.choice(_WORDS))
        return rng.choice(["-", " ", "\\.", "\\-"])
    if r < 0.45:
        return rng.choice(["\\b", "\\s*", "\\s+", ".", ".+", "[abc]", "[^x]", "\\w+", "\\d", "$", "\\B"])
    if r < 0.65:
        return "(" + "|".join(_seq(rng, depth + 1) for _ in range(rng.randint(1, 3))) + ")"
    if r < 0.75:
        return "(?:" + _seq(rng, depth + 1) + ")"
    reps = ["?", "+", "*", "{2}", "{1,3}", "{0,2}", "{2,}", "+?", "*?"]
    return "(" + _seq(rng, depth + 1) + ")" + rng.choice(reps)


def _seq(rng: random.Random, depth: int = 0) -> str:
    return "".join(_atom(rng, depth) for _ in range(rng.randint(1, 4)))


def test_the_pattern_pre_check_never_hides_a_match_of_random_patterns() -> None:
    # Random patterns of the shapes the pre-check reads (anchors, blanks, groups, alternations,
    # repeats, classes), on texts of their words: whenever RE2 finds a match, the pre-check says so.
    rng = random.Random(29)
    usable = 0
    for _ in range(600):
        sources = []
        for _ in range(rng.randint(1, 3)):
            head = "^" + rng.choice(["", "\\s*", "\\s+"]) if rng.random() < 0.3 else ""
            sources.append(head + _seq(rng))
        compiled = [re2.compile("(?i)" + s) for s in sources]
        pre = Prefilter(sources)
        usable += pre.usable
        for _ in range(30):
            words = " ".join(
                rng.choice([*_WORDS, "xx", "the fix", "ab-de"]) for _ in range(rng.randint(0, 6))
            )
            text = rng.choice(["", " ", "\t\n", "\v"]) + words + rng.choice(["", ".", " 12"])
            if any(p.search(text) for p in compiled):
                assert pre.may_match(text), (sources, text)
    assert usable > 300
