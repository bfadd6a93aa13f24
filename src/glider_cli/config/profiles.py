"""The profiles that ship with Glider: where they are (`profiles_dir`, their scripts under `scripts/`)
and their names (`bundled_profiles`, each one `--profile NAME` or `extends: NAME`)."""

from __future__ import annotations

from pathlib import Path


def profiles_dir() -> Path:
    """Where the bundled profiles are: package data in a wheel, the repo's profiles/ when editable."""
    # The package directory itself, which is what importlib.resources.files("glider_cli") gives for an
    # installed package; asking it costs ~6 ms of every command that loads a config (importlib.readers
    # imports zipfile, tempfile, random). A zipped install was never supported: the result is a Path.
    packaged = Path(__file__).parents[1] / "profiles"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "profiles"


def bundled_profiles() -> list[str]:
    return sorted(p.stem for p in profiles_dir().glob("*.yaml"))
