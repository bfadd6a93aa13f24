"""Hostile YAML: every one is a one-line ConfigError naming the file, never a traceback or a hang,
through `read_yaml` and through the real CLI (`glider lint`, `glider route explain`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from glider_cli.config.yaml_read import MAX_FILE_BYTES, read_text, read_yaml
from glider_cli.errors import ConfigError


def laughs(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


HOSTILE = {
    "billion-laughs": (laughs(), "aliases"),
    "recursive-sequence": ("routing:\n  rules: &a\n    - *a\n", "recursive alias"),
    "recursive-mapping": ("routing: &r\n  rules:\n    - name: x\n      sub: *r\n", "recursive alias"),
    "self-alias": ("a: &a [*a]\n", "recursive alias"),
    "huge-integer": ("server:\n  port: " + "1" * 5000 + "\n", "not a valid int value"),
    "bad-date": ("context:\n  retain_days: 2026-13-45\n", "not a valid timestamp value"),
    "bad-timestamp-tag": ('context:\n  retain_days: !!timestamp "xyz"\n', "not a valid timestamp value"),
    "collection-key": ("? [a, b]\n: 1\n", "keys must be strings"),
    "deep": ("a:\n" + "".join("  " * i + f"  k{i}:\n" for i in range(80)) + "  " * 81 + "v: 1\n", "deeper"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_read_yaml_refuses_with_file_and_line(case: str) -> None:
    text, fragment = HOSTILE[case]
    with pytest.raises(ConfigError) as exc:
        read_yaml(text, "evil.yaml")
    assert fragment in str(exc.value) and exc.value.file == "evil.yaml"
    assert "\n" not in str(exc.value)


def test_a_few_aliases_are_fine() -> None:
    doc = read_yaml("base: &b {target: local}\none: *b\ntwo: *b\n", "ok.yaml")
    assert doc["one"] == doc["two"] == {"target": "local"}


def test_read_text_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(OSError, match="larger than 4 MiB"):
        read_text(big)
    with pytest.raises(OSError, match="larger than"):
        read_text(Path("/dev/zero"))


def glider(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "glider_cli", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


@pytest.mark.parametrize("case", ["billion-laughs", "recursive-sequence", "huge-integer", "bad-date"])
def test_the_cli_says_one_line_and_exits_1(tmp_path: Path, case: str) -> None:
    text, fragment = HOSTILE[case]
    cfg = tmp_path / "evil.yaml"
    cfg.write_text(text)
    for args in (("lint", "--config", str(cfg)), ("route", "explain", "hi", "--config", str(cfg))):
        proc = glider(tmp_path, *args)
        assert proc.returncode == 1, proc
        assert "Traceback" not in proc.stderr
        errors = [line for line in proc.stderr.splitlines() if "evil.yaml" in line]
        assert len(errors) == 1 and fragment in errors[0], proc.stderr


def test_a_config_that_never_ends_is_an_error_not_a_hang(tmp_path: Path) -> None:
    proc = glider(tmp_path, "lint", "--config", "/dev/zero")
    assert proc.returncode == 1 and "larger than 4 MiB" in proc.stderr
