"""A backend's `breaker:` key (config.backends): defaults, a mapping, `false`, and errors that name
the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.config.load import load_config
from glider_cli.config.settings import BreakerSettings
from glider_cli.errors import ConfigError


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "c.yaml"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_every_backend_has_the_default_breaker() -> None:
    cfg = load_config(profile="default")
    assert cfg.settings.backends
    for b in cfg.settings.backends.values():
        assert b.breaker == BreakerSettings(enabled=True, failures=5, window=60.0, cooldown=30.0)


def test_a_mapping_sets_what_it_names_and_false_turns_it_off(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "backends:\n"
        "  a: {type: ollama, breaker: {failures: 3, cooldown: 10}}\n"
        "  b: {type: anthropic, breaker: false}\n"
        "  c: {type: openai, breaker: {enabled: false, window: 5.5}}\n",
    )
    backends = load_config(config=path).settings.backends
    assert backends["a"].breaker == BreakerSettings(failures=3, window=60.0, cooldown=10.0)
    assert backends["b"].breaker.enabled is False
    assert backends["c"].breaker == BreakerSettings(enabled=False, window=5.5)


@pytest.mark.parametrize(
    ("value", "key", "fragment"),
    [
        ("{failures: 0}", "backends.a.breaker.failures", "at least 1"),
        ("{failures: two}", "backends.a.breaker.failures", "an integer"),
        ("{window: 0}", "backends.a.breaker.window", "more than 0 seconds"),
        ("{cooldown: -3}", "backends.a.breaker.cooldown", "negative"),
        ("{cooldwn: 3}", "backends.a.breaker.cooldwn", "did you mean 'cooldown'"),
        ("[5, 60]", "backends.a.breaker", "false or a mapping"),
        ("{enabled: maybe}", "backends.a.breaker.enabled", "true or false"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path: Path, value: str, key: str, fragment: str) -> None:
    path = write(tmp_path, f"backends:\n  a:\n    type: ollama\n    breaker: {value}\n")
    with pytest.raises(ConfigError) as exc:
        load_config(config=path)
    assert exc.value.key == key
    assert f"{path}:4" in str(exc.value)
    assert fragment in f"{exc.value} {exc.value.hint}"
