"""Block selection case by case: BM25, protected tail, tie-break, truncation, ceilings, the spec's example."""

from __future__ import annotations

from glider_cli.config.settings import BackgroundSettings
from glider_cli.delegate.entry import Entry
from glider_cli.delegate.ranking import BLOCK_TITLE, bm25_scores, build_block, truncate_middle


def turn(text: str, i: int = 0) -> Entry:
    return Entry(
        kind="turn", text=text, source_cli="claude-code", ts=f"2026-11-29T10:{i:02d}:00Z", id=f"t{i}"
    )


def outcome(text: str, i: int = 0) -> Entry:
    return Entry(
        kind="delegate",
        text=text,
        source_cli="claude-code",
        ts=f"2026-11-29T10:{i:02d}:00Z",
        id=f"d{i}",
        delegate="cursor-agent",
        ok=True,
        files=("parser.go",),
    )


FILLER = [turn("hello there", 50), turn("thanks", 51)]  # a neutral protected tail


def test_rare_term_weighs_more_and_a_term_in_most_entries_nothing() -> None:
    docs = ["the parser fails", "the parser is slow", "the parser leaks", "goroutine leak in scheduler"]
    s = bm25_scores("parser goroutine", docs)
    # "parser" is in three entries of four: it tells none of them apart (issue 17).
    assert s[3] > 0 and s[0] == s[1] == s[2] == 0
    half = bm25_scores("parser goroutine", docs[1:3] + docs[3:])  # in two of three: still most
    assert half[0] == 0
    two_of_four = bm25_scores("parser", ["parser a", "parser b", "c", "d"])
    assert two_of_four[0] > 0  # half is not most


def test_spec_example_css_then_go_defect() -> None:
    css = [
        turn(f"Make the CSS button padding {n}px and fix the header colour in styles.css", i)
        for i, n in enumerate((4, 6, 8, 10, 12))
    ]
    go = [
        turn("The Go parser in parser.go panics on empty input; fix the defect", 10),
        turn("go test ./... shows TestParseEmpty failing with a nil pointer", 11),
    ]
    entries = [*css[:3], go[0], *css[3:], go[1], *FILLER]
    task = "Fix the Go defect: parser.go panics on empty input, TestParseEmpty"
    tight = build_block(entries, task, BackgroundSettings(max_entries=4))
    ids = [it.entry.id for it in tight.items]
    assert ids[:2] == ["t10", "t11"] or ids[:2] == ["t11", "t10"]
    assert ids[2:] == ["t50", "t51"]
    assert all(not it.entry.text.startswith("Make the CSS") for it in tight.items)
    assert tight.text.startswith(f"# {BLOCK_TITLE}")
    roomy = build_block(entries, task, BackgroundSettings())
    roomy_ids = [it.entry.id for it in roomy.items]
    assert set(roomy_ids[:2]) == {"t10", "t11"}  # the Go entries come first in any case


def test_protected_tail_goes_in_unscored() -> None:
    entries = [turn("parser bug", 1), turn("unrelated words", 2), turn("more unrelated", 3)]
    b = build_block(entries, "parser", BackgroundSettings())
    assert [(it.entry.id, it.reason) for it in b.items] == [
        ("t1", "score"),
        ("t2", "protected tail"),
        ("t3", "protected tail"),
    ]


def test_zero_score_entries_stay_out() -> None:
    entries = [turn("css colours", 1), *FILLER]
    b = build_block(entries, "go parser", BackgroundSettings())
    assert [it.entry.id for it in b.items] == ["t50", "t51"]
    assert b.excluded[0].reason == "no term shared with the task"


def test_tie_break_outcome_beats_turn() -> None:
    entries = [turn("parser crash fixed", 1), outcome("parser crash fixed", 2), *FILLER]
    b = build_block(entries, "parser crash", BackgroundSettings(max_entries=3))
    assert b.items[0].entry.id == "d2"
    assert b.items[0].reason == "tie-break"
    assert "t1" in [x.entry.id for x in b.excluded]


def test_middle_out_truncation_keeps_start_and_end() -> None:
    text = "OBJECTIVE " + "x" * 10000 + " CONDITION"
    out, cut = truncate_middle(text, 4000)
    assert cut and len(out) <= 4000
    assert out.startswith("OBJECTIVE") and out.endswith("CONDITION")
    assert "characters removed from the middle" in out
    assert truncate_middle("short", 10) == ("short", False)


def test_long_entry_is_truncated_in_block() -> None:
    entries = [turn("parser " + "y" * 9000 + " end", 1), *FILLER]
    b = build_block(entries, "parser", BackgroundSettings(max_entry_chars=500))
    assert b.items[0].truncated and len(b.items[0].text) <= 500


def test_token_budget_is_a_ceiling() -> None:
    entries = [turn(f"parser issue number {i} " + "z" * 3000, i) for i in range(5)]
    entries += [turn(f"another topic {i}", 20 + i) for i in range(5)] + FILLER
    b = build_block(entries, "parser issue", BackgroundSettings(token_budget=3000))
    assert b.tokens <= 3000
    assert any(x.reason.startswith("token budget") for x in b.excluded)


def test_max_bytes_cap_for_vendors() -> None:
    entries = [turn(f"parser issue {i} " + "é" * 2000, i) for i in range(10)] + FILLER
    b = build_block(entries, "parser", BackgroundSettings(), max_bytes=6000)
    assert len(b.text.encode()) <= 6000


def test_tail_larger_than_budget_is_shortened() -> None:
    entries = [turn("a" * 4000, 1), turn("b" * 4000, 2)]
    b = build_block(entries, "anything", BackgroundSettings(token_budget=500))
    assert b.tokens <= 500
    assert all(it.truncated for it in b.items)


def test_empty_record_gives_empty_block() -> None:
    b = build_block([], "task", BackgroundSettings())
    assert b.text == "" and b.items == ()


CSS_TURNS = [
    "fix the button padding in styles.css",
    "fix the header colour on the landing page",
    "the navbar css wraps on mobile, fix it",
    "centre the hero image with flexbox",
    "make the footer links underline on hover",
]
GO_TASK = "fix the nil pointer panic in parser.go when the input is empty"


def _css(start: int = 0) -> list[Entry]:
    return [turn(t, start + i) for i, t in enumerate(CSS_TURNS)]


def test_spec_case_five_css_turns_then_a_go_defect() -> None:
    """memory-and-context.md: five turns about CSS, then a Go defect delegated. The task's "fix" is in
    most entries: it scores none of them, so no CSS turn is ranked in; the two most recent entries are
    there as the spec wants, marked as such."""
    b = build_block(_css(), GO_TASK, BackgroundSettings())
    assert [(it.entry.id, it.reason) for it in b.items] == [
        ("t3", "protected tail"),
        ("t4", "protected tail"),
    ]
    assert {x.entry.id for x in b.excluded} == {"t0", "t1", "t2"}
    assert all(x.reason == "no term shared with the task" for x in b.excluded)
    assert b.text.count("· most recent") == 2


def test_spec_case_after_an_earlier_go_delegation() -> None:
    earlier = [
        turn("go test shows the parser panic on empty input again", 0),
        outcome("Task: fix the panic in parser.go\nResult: guarded the nil token; TestParseEmpty passes", 1),
    ]
    entries = [*earlier, *_css(10)]
    b = build_block(entries, GO_TASK, BackgroundSettings())
    order = [it.entry.id for it in b.items]
    # By relevance: the earlier Go run's outcome and the Go turn, then the most recent (CSS) entries.
    assert set(order[:2]) == {"d1", "t0"} and order[2:] == ["t13", "t14"]
    scores = [it.score for it in b.items]
    assert scores == sorted(scores, reverse=True) and scores[1] > 0 and scores[2:] == [0.0, 0.0]
    parts = b.text.split("\n## ")[1:]
    assert ["most recent" in p.splitlines()[0] for p in parts] == [False, False, True, True]
    assert "changed parser.go" in b.text
    assert not [it for it in b.items if it.entry.text.startswith(("fix the button", "fix the header"))]
