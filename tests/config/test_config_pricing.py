"""The price table: the bundled one (dated, its source named, every entry valid), the `pricing:`
section that overrides or adds entries (refused with file, line and key when wrong), and how a call is
priced: first matching glob, local calls free unless `pricing:` names them."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.config.load import load_config
from glider_cli.config.pricing import Price, PriceTable, bundled, cost
from glider_cli.errors import ConfigError


def test_the_bundled_table_is_dated_sourced_and_covers_the_three_vendors() -> None:
    table = bundled()
    assert table.date == "2025-11-20" and "anthropic.com/pricing" in table.source
    assert "openai.com" in table.source and "ai.google.dev" in table.source
    prices = PriceTable()
    for model in ("claude-sonnet-4-5-20250929", "gpt-5", "gemini-2.5-pro", "claude-opus-5-5", "gpt-5-mini"):
        assert prices.price(model, "cloud") is not None, model
    # The first matching glob wins: the narrower entries come first.
    assert prices.price("gpt-5-mini", "cloud").input == 0.25  # type: ignore[union-attr]
    assert prices.price("gpt-5", "cloud").input == 1.25  # type: ignore[union-attr]
    assert prices.price("claude-opus-4-1", "cloud").output == 75  # type: ignore[union-attr]
    assert prices.price("claude-opus-4-5", "cloud").output == 25  # type: ignore[union-attr]
    assert prices.price("Claude-Haiku-4-5", "cloud").input == 1  # type: ignore[union-attr]
    assert prices.price("my-own-model", "cloud") is None


def test_local_calls_are_free_unless_pricing_names_them(tmp_path: Path) -> None:
    assert PriceTable().price("gpt-5", "local") is None  # a local server serving an OpenAI name
    path = tmp_path / "c.yaml"
    path.write_text(
        "extends: default\npricing:\n"
        "  'qwen*': {input: 0.5, output: 1.5}\n"
        "  'claude-sonnet-4*': {input: 4, output: 20, cache_read: 0.4, cache_write: 5}\n"
    )
    configured = load_config(config=str(path)).settings.pricing
    assert [p.pattern for p in configured] == ["qwen*", "claude-sonnet-4*"]
    prices = PriceTable(configured)
    local = prices.price("qwen2.5-coder:7b", "local")
    assert local is not None and (local.input, local.output, local.source) == (0.5, 1.5, "config")
    sonnet = prices.price("claude-sonnet-4-5", "cloud")
    assert sonnet is not None and (sonnet.input, sonnet.source) == (4, "config")  # over the bundled 3
    assert cost(sonnet, 1_000_000, 1_000_000, 1_000_000, 1_000_000) == pytest.approx(4 + 20 + 0.4 + 5)
    assert load_config(profile="default").settings.pricing == ()


def test_cache_tokens_without_a_cache_price_cost_as_input() -> None:
    p = Price("m", 2, 8)
    assert cost(p, 0, 0, 1_000_000, 1_000_000) == pytest.approx(4)
    assert cost(None, 10**9, 10**9) == 0


BAD = [
    ("pricing: 3", "pricing", "must be a mapping"),
    ("pricing:\n  'gpt-5*': {input: 1}", "pricing.gpt-5*.output", "needs `output`"),
    ("pricing:\n  'gpt-5*': {input: -1, output: 2}", "pricing.gpt-5*.input", "must not be negative"),
    ("pricing:\n  'gpt-5*': {input: cheap, output: 2}", "pricing.gpt-5*.input", "must be a number"),
    (
        "pricing:\n  'gpt-5*': {input: 1, output: 2, cache_reads: 1}",
        "pricing.gpt-5*.cache_reads",
        "did you mean",
    ),
    ("pricing:\n  'gpt-5*': 4", "pricing.gpt-5*", "must be a mapping"),
]


@pytest.mark.parametrize(("text", "key", "fragment"), BAD)
def test_a_bad_pricing_section_names_file_line_and_key(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"extends: default\n{text}\n")
    with pytest.raises(ConfigError) as exc:
        load_config(config=str(path))
    message = str(exc.value)
    assert str(path) in message and f"'{key}'" in message and fragment in message, message
    assert f"{path}:2" in message or f"{path}:3" in message
