"""`transform:` settings: what a local model receives (defaults from the spec and issue #13 §1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.config.load import load_config
from glider_cli.config.settings import DEFAULT_LOCAL_TOOLS, TransformSettings
from glider_cli.errors import ConfigError


def test_defaults_without_a_config_and_in_the_bundled_profile() -> None:
    d = TransformSettings()
    assert (d.local_context, d.local_episode_count, d.local_system_chars, d.local_tool_chars) == (
        True,
        3,
        2000,
        120,
    )
    assert {"Bash", "Read", "Edit", "Write", "Grep", "Glob"} <= set(d.local_tools)
    assert {"shell", "apply_patch", "update_plan"} <= set(d.local_tools)
    assert load_config(profile="default").settings.transform == d
    assert d.local_tools == DEFAULT_LOCAL_TOOLS


def test_a_user_config_sets_each_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "extends: default\ntransform:\n  local_context: false\n  local_episode_count: 0\n"
        "  local_system_chars: 500\n  local_tools: [Bash]\n  local_tool_chars: 0\n"
    )
    t = load_config(config=str(path)).settings.transform
    assert t == TransformSettings(False, 0, 500, ("Bash",), 0)


@pytest.mark.parametrize(
    ("yaml_text", "fragment"),
    [
        ("transform: {local_system_chars: -1}\n", "transform.local_system_chars"),
        ("transform: {local_tools: Bash}\n", "a list of strings"),
        ("transform: {local_tool_chars: many}\n", "an integer"),
        ("transform: {local_tool_char: 10}\n", "did you mean 'local_tool_chars'"),
    ],
)
def test_bad_values_are_reported(tmp_path: Path, yaml_text: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError) as exc:
        load_config(config=str(path))
    assert fragment in str(exc.value) + str(exc.value.hint)
