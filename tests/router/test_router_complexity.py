from __future__ import annotations

from pathlib import Path

from glider_cli.domain import ChatRequest, Message
from glider_cli.router import Router, StickyView
from glider_cli.router.complexity import ComplexityScorer, file_paths
from routing_helpers import message


def signals(text: str, **kw: object) -> dict[str, int]:
    c = ComplexityScorer(("migrate", "race condition"), kw.pop("weights", ())).score(  # type: ignore[arg-type]
        text, messages=int(kw.pop("messages", 1)), has_tools=bool(kw.pop("has_tools", False))
    )
    return {s["signal"]: s["points"] for s in c.signals} | {"score": c.score}


def test_each_signal_moves_the_score() -> None:
    assert signals("hi")["score"] == 0
    assert signals("x" * 2000)["length"] == 30
    assert signals("migrate it, mind the race condition")["keywords"] == 20
    assert signals("migrated")["keywords"] == 0  # whole words only
    assert signals("```py\na\n```\n```\nb\n```")["code"] == 15
    assert signals("see src/a.py, lib/b.go and README.md.")["files"] == 9
    assert signals("x", messages=40)["conversation"] == 10
    assert "tools" not in signals("x", has_tools=True)
    assert signals("x", has_tools=True, weights=(("tools", 20),))["tools"] == 20


def test_keywords_are_found_the_same_in_a_short_and_a_long_message() -> None:
    # A short message is looked through with one alternation of the keywords, a longer one with a
    # substring test per keyword: the same keywords either way.
    for pad in (0, 30, 100, 3000):
        text = "x " * (pad // 2) + "Migrate it, mind the race condition"
        assert signals(text)["keywords"] == 20, pad
        assert signals("x " * (pad // 2) + "migrated, racecondition")["keywords"] == 0, pad
        assert signals("x " * (pad // 2) + "y")["keywords"] == 0, pad


def test_keywords_that_share_a_first_letter_or_are_one_letter_are_found_in_a_short_message() -> None:
    # The short message's alternation groups the keywords by first letter (`d(?:ebug|esign)`).
    scorer = ComplexityScorer(("debug", "design", "d", "c++", "Deploy "))
    for text, found in [
        ("debug it", "debug"),
        ("design", "design"),
        ("a d b", "d"),
        ("fix c++ now", "c++"),
        ("deploy", "deploy"),
        ("DESIGN and Debug", "debug, design"),
        ("dx designs", "none"),
    ]:
        kw = scorer.score(text, messages=1, has_tools=False).signals[1]
        assert (kw["signal"], kw["detail"]) == ("keywords", found), text


def test_a_short_messages_length_signal_is_the_same_made_or_kept() -> None:
    scorer = ComplexityScorer()
    for n in (0, 1, 13, 100, 511, 512, 1999, 2000, 5000):
        first = scorer.score("x" * n, messages=1, has_tools=False)
        again = scorer.score("y" * n, messages=1, has_tools=False)
        assert (
            first.signals[0]
            == again.signals[0]
            == {
                "signal": "length",
                "points": round(min(n / 2000, 1.0) * 30),
                "detail": f"{n} chars",
            }
        )
        assert first.score == again.score


def test_score_is_capped_at_100() -> None:
    heavy = "migrate race condition " + "src/a.py " * 20 + "```\nx\n```\n" * 5 + "y" * 3000
    assert signals(heavy, messages=80, weights=(("tools", 50),), has_tools=True)["score"] == 100


def test_file_paths() -> None:
    assert file_paths("edit `src/app.py` and docs/index.md, not 1.5 or e.g. foo/.py") == {
        "src/app.py",
        "docs/index.md",
    }


def test_small_patterns_need_a_short_message(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "backends:\n  l: {type: ollama}\n  c: {type: openai}\nrouting:\n"
        "  task_classifier: {small_patterns: ['^fix'], small_max_chars: 20, cloud_patterns: ['(?i)design']}\n"
        "  rules:\n    - {name: fallback, priority: 0, trigger: {type: always}, action: {target: cloud}}\n"
    )
    from glider_cli.config.load import load_config

    router = Router(load_config(config=str(path)))
    assert router.decide(message("fix it")).rule == "task_classifier.small"
    long = router.decide(message("fix " + "x" * 40))
    assert long.rule == "fallback"
    assert "more than 20" in next(r for r in long.trace if r.rule == "task_classifier.small").reason
    assert router.decide(message("DESIGN it")).rule == "task_classifier.cloud"


def test_follow_on_detection() -> None:
    def req(*messages: Message) -> ChatRequest:
        return ChatRequest(protocol="anthropic", model="m", stream=False, messages=messages)

    view = StickyView(bound=True)
    assert not view.is_follow_on(req(Message("user", "new question")))
    assert view.is_follow_on(req(Message("user", "", tool_results=("t1",))))
    assert view.is_follow_on(req(Message("tool", "", tool_results=("c1",))))
    assert view.is_follow_on(req(Message("assistant", "partial")))
    assert not view.is_follow_on(req())
    assert not StickyView(bound=True, follow_on=False).is_follow_on(req(Message("tool", "")))
