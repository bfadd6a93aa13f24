"""`summary_worded` (`turns.request_kinds`) answers as one case-insensitive search of the whole
pattern did, without scanning a text that cannot match past its start (issue 29): only texts that
hold "conversation", "<compaction_request>" or a character that lower() does not fold as
re.IGNORECASE does are searched; any other is matched at its start."""

from __future__ import annotations

import random
import re
import sys

import pytest

from glider_cli.turns import request_kinds
from glider_cli.turns.request_kinds import summary_worded

PHRASES = (
    "Summarize this conversation so far",
    "summarise the conversation above",
    "Create a detailed summary of the conversation",
    "<compaction_request>",
    "please now summarize what we did in this session",
    "Write a brief summary of the changes",
    "give me a recap of the work",
    "recap what you did",
    "CONVERSATION",
    "summary",
)
NOISE = (
    "fix",
    "the",
    "parser",
    "\n",
    "  ",
    "session",
    "chat",
    "work",
    "—",
    "é",
    "\u0130",
    "\u0131",
    "\u017f",
)
# The phrases with one letter swapped for a character re.IGNORECASE matches to it but lower() does not.
APART = (
    "Summarize this conversat\u0130on so far",
    "summarize the conversat\u0131on above",
    "create a detailed summary of the conver\u017fation",
    "<compaction_reque\u017ft>",
)
REFERENCE = re.compile(request_kinds._SUMMARY.pattern, re.IGNORECASE)


def _corpus() -> list[str]:
    rng = random.Random(29)
    texts = [*PHRASES, *APART, "", "say hi", "x" * 5000 + "summarize this conversation so far"]
    for _ in range(3000):
        parts = [rng.choice(NOISE) for _ in range(rng.randint(0, 12))]
        if rng.random() < 0.5:
            parts.insert(rng.randint(0, len(parts)), rng.choice(PHRASES + APART))
        text = " ".join(parts)
        texts.append(text.upper() if rng.random() < 0.2 else text)
    return texts


def test_it_answers_as_the_whole_pattern_searched() -> None:
    hits = 0
    for text in _corpus():
        expected = REFERENCE.search(text[:4000]) is not None
        assert summary_worded(text) is expected, repr(text)
        hits += expected
    assert hits > 500  # the corpus holds both answers


@pytest.mark.parametrize("text", APART)
def test_a_character_lower_does_not_fold_still_finds_the_summary(text: str) -> None:
    low = text.lower()
    assert "conversation" not in low and "<compaction_request>" not in low
    assert REFERENCE.search("so: " + text) is not None
    assert summary_worded("so: " + text) is True


def test_the_characters_folded_apart_are_all_there_are() -> None:
    """Every character re.IGNORECASE matches to a letter of the words looked for, whose lower() is
    another, is one the scan looks for (a cased character: only those fold)."""
    letters = set("conversation<compaction_request>")
    apart = request_kinds._FOLDED_APART
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if ch.lower() == ch and ch.upper() == ch:
            continue
        for letter in letters:
            if ch.lower() != letter and re.fullmatch(re.escape(letter), ch, re.IGNORECASE):
                assert ch in apart, hex(cp)


class _Counted:
    """`_SUMMARY` with its searches and matches counted (the real pattern answers)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.searched, self.matched = pattern, 0, 0

    def search(self, text: str) -> re.Match[str] | None:
        self.searched += 1
        return self.pattern.search(text)

    def match(self, text: str) -> re.Match[str] | None:
        self.matched += 1
        return self.pattern.match(text)


def test_an_ordinary_prompt_is_matched_at_its_start_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _Counted(request_kinds._SUMMARY)
    monkeypatch.setattr(request_kinds, "_SUMMARY", counted)
    prompt = "Refactor the parser so that every error names its line — and add tests. " * 50
    assert summary_worded(prompt) is False
    assert summary_worded("Summarize the changes you made to the parser") is True
    assert (counted.searched, counted.matched) == (0, 2)
    # A text holding a word only a search finds is searched.
    assert summary_worded("ok. Now summarize this conversation so far") is True
    assert counted.searched == 1
