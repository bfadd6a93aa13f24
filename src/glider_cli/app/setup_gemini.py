"""`glider setup gemini`: what Gemini CLI needs to go through Glider with no flag of its own.

Read from Gemini CLI's own code (0.61): it looks for its files in `~/.gemini/` (`$GEMINI_CLI_HOME`
instead of HOME when set), and a headless `gemini -p` stops before any request unless
- an auth type is selected: `security.auth.selectedType` in `settings.json` ("Invalid auth method
  selected." otherwise). Glider serves the Gemini API-key path (`gemini-api-key`, the key from
  `GEMINI_API_KEY`, passed on by `origin`); the Google-login paths go to another API.
- the folder is trusted (folder trust is on by default): `trustedFolders.json` maps a real path to
  `TRUST_FOLDER` ("not running in a trusted directory … use `--skip-trust`" otherwise), unless
  `security.folderTrust.enabled` is false in `settings.json`.
So setup writes `GOOGLE_GEMINI_BASE_URL` in `.env` (read at start), the auth type in `settings.json`
and, with `--project`, trusts the current folder in `trustedFolders.json`. Without `--project` no
folder is trusted behind the user's back: the plan's note prints the one command that does it. As
for every client, nothing another tool wrote is overwritten (an auth type already selected, a trust
rule for the folder) and no key is written.
"""

from __future__ import annotations

from pathlib import Path

from glider_cli.app.setup_plan import (
    Manifest,
    Options,
    Plan,
    block,
    json_file,
    key_of,
    lookup,
    plan_block,
    plan_set,
)

AUTH_KEY = "security.auth.selectedType"
API_KEY_AUTH = "gemini-api-key"


def plan_gemini(p: Plan, o: Options, manifest: Manifest) -> None:
    home = (o.gemini_home or o.home) / ".gemini"
    _base_url(p, home / ".env", o.base_url, manifest)
    settings = home / "settings.json"
    plan_set(p, settings, AUTH_KEY, API_KEY_AUTH, manifest)
    data = json_file(settings) or {}
    trust_off = lookup(data, "security.folderTrust.enabled") == (True, False)
    if o.project is not None and not trust_off:
        folder = str(o.project.resolve())
        plan_set(p, home / "trustedFolders.json", key_of([folder]), "TRUST_FOLDER", manifest)
    elif not trust_off:
        p.notes.append(
            "Gemini CLI runs `gemini -p` only in a folder it trusts: run `glider setup gemini --project` in "
            "that folder (or answer its trust dialog once in an interactive session)."
        )
    p.notes.append("Gemini CLI goes through Glider with API-key auth (GEMINI_API_KEY), not a Google login.")


def _base_url(p: Plan, path: Path, base_url: str, manifest: Manifest) -> None:
    text = block("gemini", [f"GOOGLE_GEMINI_BASE_URL={base_url}"])
    existing = path.read_text() if path.exists() else ""
    outside = existing.replace(text, "")
    if any(line.strip().startswith("GOOGLE_GEMINI_BASE_URL=") for line in outside.splitlines()):
        p.skipped.append((str(path), "GOOGLE_GEMINI_BASE_URL is already set there; not overwritten"))
    else:
        plan_block(p, path, text, "end", manifest)
