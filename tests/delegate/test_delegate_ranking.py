"""Block selection case by case: BM25, protected tail, tie-break, truncation, ceilings, the spec's example."""

from __future__ import annotations

from glider_cli.config.settings import BackgroundSettings
from glider_cli.delegate.continuity import Entry
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


def test_rare_term_weighs_more() -> None:
    docs = ["the parser fails", "the parser is slow", "the parser leaks", "goroutine leak in scheduler"]
    s = bm25_scores("parser goroutine", docs)
    assert s[3] > s[0] > 0


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
    entries = [turn(f"parser issue number {i} " + "z" * 3000, i) for i in range(10)] + FILLER
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
