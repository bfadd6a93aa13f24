from __future__ import annotations

from typing import Any

from glider_cli.store.eventlog.events import make_event
from glider_cli.store.views.episodes import build


def _events() -> list[dict[str, Any]]:
    evs = [
        ("TurnOpened", "a", {"ask": "fix the   failing test in\nparser.py", "clone_path": "/r"}),
        ("RouteDecided", "a", {"target": "local", "backend": "ollama", "model": "qwen", "rule": "small"}),
        ("FallbackUsed", "a", {"from": "ollama", "to": "anthropic"}),
        (
            "OriginPassthrough",
            "a",
            {
                "backend": "anthropic",
                "status": 200,
                "output_tokens": 12,
                "files": ["parser.py", "test_parser.py"],
            },
        ),
        ("TurnOpened", "b", {"ask": "delegate the docs"}),
        ("RouteDecided", "b", {"target": "cloud", "delegate": "claude"}),
        (
            "DelegateRun",
            "b",
            {
                "vendor": "claude",
                "exit_code": 0,
                "summary": "wrote README\nmore",
                "files": ["README.md", "README.md"],
            },
        ),
        ("TurnOpened", "c", {"ask": "still thinking"}),
        ("Note", None, {"text": "no turn"}),
        ("UpstreamFailed", "d", {"backend": "openai", "status": 500, "error": "boom\ntrace"}),
    ]
    return [
        make_event(f"{i:032x}", t, f"2026-11-29T10:00:{i:02d}.000Z", turn, d)
        for i, (t, turn, d) in enumerate(evs)
    ]


def test_episodes_summarise_each_turn() -> None:
    eps = {e.turn_id: e for e in build(_events())}
    assert list(eps) == ["a", "b", "c", "d"]
    a = eps["a"]
    assert a.asked == "fix the failing test in parser.py"
    assert a.routed == "local via ollama/qwen (rule small)"
    assert a.outcome == "answered by anthropic status 200, 12 tokens out after fallback ollama -> anthropic"
    assert a.files == ("parser.py", "test_parser.py")
    assert a.events == 4 and a.first_ts.endswith("00.000Z") and a.last_ts.endswith("03.000Z")
    assert eps["b"].outcome == "delegated to claude exit 0: wrote README"
    assert eps["b"].routed == "cloud delegate claude"
    assert eps["b"].files == ("README.md",)
    assert eps["c"].outcome == "open" and eps["c"].routed == "not routed"
    assert eps["d"].outcome == "failed at openai status 500: boom"
    assert eps["d"].summary.startswith("asked: (unknown); routed: not routed; outcome: failed")
    assert a.to_dict()["summary"] == a.summary


def test_episodes_are_deterministic_whatever_the_input_order() -> None:
    evs = _events()
    assert build(evs) == build(list(reversed(evs)))
