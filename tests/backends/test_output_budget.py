"""A client's `max_tokens` is a ceiling, not a need (issue 39, point 5): a local request gets the output
its window leaves after the pack, never less than 1,024 tokens (or the ceiling, when that is smaller)."""

from __future__ import annotations

from glider_cli.backends.output_budget import FLOOR, output_budget


def test_claude_codes_64k_ceiling_is_cut_to_what_the_window_leaves_after_the_pack() -> None:
    b = output_budget(8192, 616, 64000, None)
    assert b.refused is None and b.trimmed
    assert b.given == 8192 - 616 - 61 == b.room
    assert (
        b.note
        == "max_tokens 64,000 cut to 7,515: what window 8,192 leaves after the pack 616 tokens (+10% margin)"
    )


def test_a_ceiling_that_fits_is_given_as_it_is_and_the_backends_own_cap_counts() -> None:
    assert output_budget(8192, 616, 512, None).given == 512
    both = output_budget(8192, 616, 64000, 4096)
    assert (both.given, both.trimmed, both.note) == (4096, False, None)
    # No ceiling at all: nothing is sent in its place (the server's default is the rest of its window).
    assert output_budget(8192, 616, None, None).given is None


def test_under_the_floor_the_backend_cannot_take_it() -> None:
    b = output_budget(8192, 6800, 64000, None)
    assert b.given is None
    assert b.refused == (
        "pack 6,800 tokens (+10%) + 1,024 output (the least a local reply gets) > window 8,192"
    )
    assert output_budget(8192, 6800, None, None).refused is not None  # no ceiling: the floor still holds
    # Just enough room for the floor, and one token short of it.
    assert output_budget(FLOOR + 1100, 1000, 64000, None).given == FLOOR
    assert output_budget(FLOOR + 1099, 1000, 64000, None).given is None


def test_a_small_ceiling_needs_only_itself() -> None:
    assert output_budget(8192, 7000, 16, None).given == 16
    assert output_budget(600, 700, 16, None).refused == "pack 700 tokens + 16 output > window 600"
    said = output_budget(8192, 9000, None, None, what="request 9,000 tokens").refused
    assert said is not None and said.startswith("request 9,000 tokens")
