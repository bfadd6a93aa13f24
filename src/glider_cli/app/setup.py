"""`glider setup claude-code | codex | gemini | cursor | cursor-agent`: point a coding agent at Glider,
and take it back. `plan(client, options, manifest)` picks the client's planner (claude-code and codex
here, gemini `app.setup_gemini`, cursor and cursor-agent `app.setup_cursor`).

Contract:
- `plan` is pure apart from reading the files it would change: it returns a `Plan` of `Change`s
  (`create` a whole file, `set` a key in a JSON file, `block` a marked block of lines in a TOML or .env
  file) and the changes it `skipped`, each with why. `setup_plan.apply(plan, manifest)` writes them
  and records each in the manifest (`<GLIDER_HOME>/setup.json`); `setup_plan.undo(client, manifest)`
  plans removing exactly what the manifest says was written, and `apply` of that plan removes it.
- It never overwrites what it did not write: an existing file it did not create, a key already set to
  another value, a TOML key or table that is already there, a `.env` line that already sets the
  variable, are skipped (the plan says so). Undo removes a file only while its content is still what
  was written, a key only while it still holds the value that was set, a block only while it is
  unchanged; an object or file that setup created and undo emptied goes too.
- claude-code: custom slash commands `/local /cloud /fast /heavy /claude /cursor-agent /agy /allow /deny` in
  `~/.claude/commands/` (or the project's `.claude/commands/`): Claude Code takes a prompt starting with
  `/word` as its own command, and expands these into `<prompt> /word`, which the router's explicit and
  delegate words match. `env.ANTHROPIC_BASE_URL` in the same directory's `settings.json`, and with a
  statusline command, `statusLine`. codex: `model_provider = "glider"` and the
  `[model_providers.glider]` table (Responses API, `env_key = "OPENAI_API_KEY"`, and `env_http_headers`
  that mark a Glider delegate run's requests) in `~/.codex/config.toml`
  (`$CODEX_HOME` when set). gemini: `app.setup_gemini` (the base URL, API-key auth, folder trust).
No API key is ever written: the clients keep using their own, which `origin` passes on.
"""

from __future__ import annotations

import tomllib

from glider_cli.app.setup_cursor import plan_cursor
from glider_cli.app.setup_gemini import plan_gemini
from glider_cli.app.setup_plan import Manifest, Options, Plan, block, plan_block, plan_create, plan_set
from glider_cli.errors import ConfigError

CLIENTS: tuple[str, ...] = ("claude-code", "codex", "gemini", "cursor", "cursor-agent")
WORDS: tuple[tuple[str, str], ...] = (
    ("local", "Glider: answer this prompt with the local model"),
    ("fast", "Glider: answer this prompt with the local model (fast)"),
    ("cloud", "Glider: answer this prompt with the cloud model"),
    ("heavy", "Glider: answer this prompt with the cloud model (heavy)"),
    ("claude", "Glider: hand this prompt to Claude Code as a delegate"),
    ("cursor-agent", "Glider: hand this prompt to Cursor's agent CLI as a delegate"),
    ("agy", "Glider: hand this prompt to the agy CLI as a delegate"),
    ("allow", "Glider: allow what a delegate was refused (the token from its reply)"),
    ("deny", "Glider: deny what a delegate was refused (the token from its reply)"),
)


def _claude_code(p: Plan, o: Options, manifest: Manifest) -> None:
    base = (o.project / ".claude") if o.project is not None else (o.home / ".claude")
    for word, description in WORDS:
        text = f"---\ndescription: {description}\nargument-hint: <prompt>\n---\n$ARGUMENTS /{word}\n"
        plan_create(p, base / "commands" / f"{word}.md", text, manifest)
    settings = base / "settings.json"
    plan_set(p, settings, "env.ANTHROPIC_BASE_URL", o.base_url, manifest)
    if o.statusline:
        plan_set(p, settings, "statusLine", {"type": "command", "command": o.statusline}, manifest)
    p.notes.append("Start Glider with `glider serve`; then `/local say hi` in Claude Code is routed local.")


def _codex(p: Plan, o: Options, manifest: Manifest) -> None:
    path = (o.codex_home or o.home / ".codex") / "config.toml"
    try:
        data = tomllib.loads(path.read_text()) if path.exists() else {}
    except tomllib.TOMLDecodeError as exc:
        p.skipped.append((str(path), f"not valid TOML ({exc}); left as it is"))
        return
    top = block("codex", ['model_provider = "glider"'])
    if data.get("model_provider") not in (None, "glider") or (
        "model_provider" in data and top not in path.read_text()
    ):
        p.skipped.append(
            (str(path), f"model_provider is already {data['model_provider']!r}; not overwritten")
        )
    else:
        plan_block(p, path, top, "top", manifest)
    table = block(
        "codex",
        [
            "[model_providers.glider]",
            'name = "Glider"',
            f'base_url = "{o.base_url.rstrip("/")}/v1"',
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
            # Set only in a delegate run Glider starts: its requests are marked as the run's.
            'env_http_headers = { "x-glider-delegate-of" = "GLIDER_DELEGATE_OF" }',
        ],
    )
    providers = data.get("model_providers")
    if isinstance(providers, dict) and "glider" in providers and table not in path.read_text():
        p.skipped.append((str(path), "[model_providers.glider] is already there; not overwritten"))
    else:
        plan_block(p, path, table, "end", manifest)
    p.notes.append("Codex reads the key from OPENAI_API_KEY; Glider's origin passes it on to OpenAI.")


_PLANNERS = {
    "claude-code": _claude_code,
    "codex": _codex,
    "gemini": plan_gemini,
    "cursor": plan_cursor,
    "cursor-agent": plan_cursor,
}


def plan(client: str, options: Options, manifest: Manifest) -> Plan:
    if client not in _PLANNERS:
        raise ConfigError(f"unknown client {client!r}; expected one of {', '.join(CLIENTS)}")
    p = Plan(client)
    _PLANNERS[client](p, options, manifest)
    return p
