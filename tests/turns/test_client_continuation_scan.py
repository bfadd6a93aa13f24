"""A client's own continuation (`turns.client_texts`) is found by one scan of the message for the
start of any known text (issue 29), answering as a substring test per known text did."""

from __future__ import annotations

import random

from glider_cli.turns import client_texts
from glider_cli.turns.client_texts import CONTINUATIONS, ClientText, client_continuation


def _samples() -> list[str]:
    """Ordinary messages, and messages holding each known text's start at some place in them."""
    rng = random.Random(29)
    words = ["fix", "the", "Parser", "Please", "continue", "Output", "[System:", "token", "Stop", "\n"]
    texts = ["", "/cloud say hi", "Please continue", "Continue from where you left", "System: Potential"]
    for _ in range(300):
        texts.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))))
    for entry in CONTINUATIONS:
        start = entry.parts[0][:24]
        texts += [start, "x " + start + " y", start[:-1], start[1:], start.lower(), entry.parts[0]]
    return texts


def test_one_scan_finds_a_known_texts_start_exactly_where_a_substring_test_would() -> None:
    openings = client_texts._openings(CONTINUATIONS)
    assert openings is not None and client_texts._OPENINGS.pattern == openings.pattern
    for text in _samples():
        substring = any(entry.parts[0][:24] in text for entry in CONTINUATIONS)
        assert (openings.search(text) is not None) is substring, text


def test_the_scan_is_of_the_texts_asked_about() -> None:
    own = ClientText(
        "Tester", "a test", ("Carry on, model.",), client_texts.re.compile(r"Carry on, model\.\Z")
    )
    assert client_continuation("Carry on, model.", (own,)) is own
    assert client_continuation("Carry on, model.") is None
    assert client_continuation("Please continue.", (own,)) is None
    gemini = next(e for e in CONTINUATIONS if e.parts == ("Please continue.",))
    assert client_continuation("Please continue.") is gemini
    # A person's message is turned away by the scan alone: `clean` is never asked.
    cleaned: list[str] = []

    def clean(text: str) -> str:
        cleaned.append(text)
        return text.strip()

    for text in _samples()[:300]:
        if client_texts._OPENINGS.search(text) is None:
            assert client_continuation(text, clean=clean) is None
    assert cleaned == []
