"""The turn-index keys `goal`, `plan` and `clone_path`, read from what a client already sends. Pure.

- `user_words(text)`: the person's words of a user message, without the blocks clients wrap around
  them (Claude Code's `<system-reminder>`s: CLAUDE.md, git status; Codex's `<environment_context>`
  and AGENTS.md messages). A Claude Code slash command (`/local say hi`) arrives as
  `<command-message>local</command-message> <command-name>/local</command-name>
  <command-args>say hi</command-args>` followed by the command file's expansion (`say hi /local`):
  its words are what was typed, `/local say hi`, and the expansion is not.
- `workspace_in(texts, headers)`: the workspace a client names: the `x-glider-workspace` header,
  Claude Code's `# Environment` lines (` - Primary working directory: /abs`, older `Working
  directory: /abs`), or Codex's `<environment_context><cwd>/abs</cwd>`. Absolute paths only, as sent.
- `opening(chat, out=None)`: a new turn's `goal` (its user words, at most `GOAL_CHARS`) and `clone_path` (the
  workspace the client names; the environment lines come at the start of a conversation, so only the
  system prompt and the first `ENV_MESSAGES` messages are read, whatever the conversation's length),
  and `delegate_of` when the request is a delegate run's own (`delegate_of`).
- `delegate_of(headers)`: the turn whose delegate run sent this request, from the `x-glider-delegate-of`
  header Glider gives the delegate CLI it starts (`delegate_env`: Claude Code's `ANTHROPIC_CUSTOM_HEADERS`,
  and `GLIDER_DELEGATE_OF` for Codex's `env_http_headers`, which `glider setup codex` names); None
  when absent or not an id.
- `plan_of(name, arguments)`: the plan an agent wrote, as text, from Claude Code's `TodoWrite`
  (`todos: [{content, status}]`) or Codex's `update_plan` (`plan: [{step, status}]`, `explanation`):
  one line per step, `[x]` done, `[>]` in progress, `[ ]` pending.
- `written_files(name, arguments)`: the paths a write tool names (`Write`, `Edit`, `MultiEdit`:
  `file_path`; `NotebookEdit`: `notebook_path`; `apply_patch`: the patch's `*** Add/Update/Delete
  File:` lines).
- `progress(calls)`: for the tool calls of one reply, the `TurnContext` event data (`plan`: the last
  plan among them, `tool`, `files`), or None when they hold neither.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from glider_cli.domain import ChatRequest
from glider_cli.values import lazy_pattern

HEADER = "x-glider-workspace"
DELEGATE_HEADER = "x-glider-delegate-of"
DELEGATE_ENV = "GLIDER_DELEGATE_OF"
_RUN_ID_RE = lazy_pattern(r"^[0-9A-Za-z_-]{1,64}$")
GOAL_CHARS = 2000
ENV_MESSAGES = 8
PLAN_TOOLS = ("TodoWrite", "update_plan")
_WRITE_KEYS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

_CLIENT_NOISE_RE = re.compile(
    r"<system-reminder>.*?</system-reminder>|<environment_context>.*?</environment_context>"
    r"|# AGENTS\.md instructions for [^\n]*\n+<INSTRUCTIONS>.*?</INSTRUCTIONS>",
    re.S,
)
_COMMAND_NAME_RE = lazy_pattern(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS_RE = lazy_pattern(r"<command-args>(.*?)</command-args>", re.S)
_COMMAND_MESSAGE_RE = lazy_pattern(r"<command-message>.*?</command-message>", re.S)
_CLAUDE_RE = lazy_pattern(r"^\s*-?\s*(?:Primary working directory|Working directory):\s*(\S.*?)\s*$", re.M)
_CODEX_RE = lazy_pattern(r"<environment_context>.*?<cwd>\s*([^<]+?)\s*</cwd>", re.S)
_PATCH_FILE_RE = lazy_pattern(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)
_MARKS = {"completed": "[x]", "in_progress": "[>]"}
_ENV_ROLES = frozenset({"system", "developer", "user"})  # the messages that may name the workspace


class Call(Protocol):
    """A tool call as the reply tap reads it (`protocol.reply_tap.IssuedCall`)."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Mapping[str, Any]: ...


def user_words(text: str) -> str:
    """The person's own words in a user turn: client-added reminder and environment blocks removed,
    and a Claude Code slash command as it was typed (see the module contract)."""
    if "<command-name>" in text:
        text = _typed_command(text)
    # Every block `_CLIENT_NOISE_RE` removes holds a "<": without one there is nothing to remove.
    return (_CLIENT_NOISE_RE.sub("", text) if "<" in text else text).strip()


def _typed_command(text: str) -> str:
    name = _COMMAND_NAME_RE.search(text)
    if name is None or not name.group(1):
        return text
    args = _COMMAND_ARGS_RE.search(text)
    tags = [m for m in (name, args, _COMMAND_MESSAGE_RE.search(text)) if m]
    words = " ".join(args.group(1).split()) if args else ""
    command = name.group(1) if name.group(1).startswith("/") else "/" + name.group(1)
    return text[: min(m.start() for m in tags)] + " ".join(x for x in (command, words) if x)


def _header(headers: Mapping[str, str], name: str = HEADER) -> str | None:
    for k, v in headers.items():
        if k.lower() == name and v.strip():
            return v.strip()
    return None


def delegate_of(headers: Mapping[str, str]) -> str | None:
    """See the module contract."""
    found = _header(headers, DELEGATE_HEADER)
    return found if found is not None and _RUN_ID_RE.match(found) else None


def delegate_env(environ: Mapping[str, str], run: str) -> dict[str, str]:
    """The environment of a delegate CLI Glider starts for the turn `run`: its requests, if they come
    back through Glider, carry `x-glider-delegate-of: <run>` (a custom header the user set is kept)."""
    env = dict(environ)
    line = f"{DELEGATE_HEADER}: {run}"
    mine = env.get("ANTHROPIC_CUSTOM_HEADERS", "").strip()
    env["ANTHROPIC_CUSTOM_HEADERS"] = f"{mine}\n{line}" if mine else line
    env[DELEGATE_ENV] = run
    return env


def workspace_in(texts: Iterable[str], headers: Mapping[str, str] | None = None) -> str | None:
    """The workspace path named by a header or inside the given texts, as sent (not normalised)."""
    if headers:
        h = _header(headers)
        if h and h.startswith("/"):
            return h
    found_codex: str | None = None
    for t in texts:
        if not t:
            continue
        at = t.find("orking directory")  # one scan: `_claude_workspace` starts at its place
        if at >= 0:
            found = _claude_workspace(t, at)
            if found is not None:
                return found
        if found_codex is None and "<environment_context>" in t:
            m2 = _CODEX_RE.search(t)
            if m2 and m2.group(1).startswith("/"):
                found_codex = m2.group(1)
    return found_codex


def _claude_workspace(text: str, at: int) -> str | None:
    """The first `_CLAUDE_RE` match naming an absolute path: the pattern tried only at the start of
    the lines that hold its keyword (found with `str.find`; `at`: its first place, found by the
    caller), which gives the matches a scan of the whole text gives (between a line's start and the
    keyword there is only blank space and one dash) without trying it at every line of Claude Code's
    ~16 KB system prompt (issue 29: ~60 us)."""
    last_line = -1
    while at >= 0:
        line = text.rfind("\n", 0, at) + 1
        if line != last_line:
            last_line = line
            m = _CLAUDE_RE.match(text, line)
            if m is not None and m.group(1).startswith("/"):
                return m.group(1)
        at = text.find("orking directory", at + 1)
    return None


def opening(chat: ChatRequest, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new turn's `goal` and `clone_path` (the keys it has; see the module contract), added to
    `out` when given (a record being built), else to a new dict; returns it."""
    if out is None:
        out = {}
    text = chat.last_user_text
    # `user_words`, whose blocks and commands all hold a "<": without one, the text stripped.
    goal = user_words(text) if "<" in text else text.strip()
    if goal:
        out["goal"] = goal if len(goal) <= GOAL_CHARS else goal[: GOAL_CHARS - 1] + "…"
    # `workspace_in` and `delegate_of`, with the header looked up by its name: a ChatRequest's
    # header names are lowercased (`domain.ChatRequest`).
    headers = chat.headers
    where = headers.get(HEADER)
    where = where.strip() if where else None
    if not (where and where.startswith("/")):
        texts = [chat.system]
        for m in chat.messages[:ENV_MESSAGES]:  # a loop, not a comprehension: no frame of its own
            if m.role in _ENV_ROLES:
                texts.append(m.content)
        where = workspace_in(texts)
    if where:
        out["clone_path"] = where
    run = headers.get(DELEGATE_HEADER)
    run = run.strip() if run else None
    if run and _RUN_ID_RE.match(run):
        out["delegate_of"] = run
    return out


def plan_of(name: str, arguments: Mapping[str, Any]) -> str | None:
    if name not in PLAN_TOOLS:
        return None
    steps = arguments.get("todos") if name == "TodoWrite" else arguments.get("plan")
    if not isinstance(steps, list):
        return None
    lines: list[str] = []
    why = arguments.get("explanation")
    if isinstance(why, str) and why.strip():
        lines.append(" ".join(why.split()))
    for s in steps:
        if not isinstance(s, Mapping):
            continue
        text = s.get("content") if name == "TodoWrite" else s.get("step")
        if isinstance(text, str) and text.strip():
            lines.append(f"{_MARKS.get(str(s.get('status')), '[ ]')} {' '.join(text.split())}")
    return "\n".join(lines) or None


def written_files(name: str, arguments: Mapping[str, Any]) -> list[str]:
    key = _WRITE_KEYS.get(name)
    if key is not None:
        path = arguments.get(key)
        return [path] if isinstance(path, str) and path else []
    if name == "apply_patch":
        patch = next((v for k, v in arguments.items() if k in ("input", "patch") and isinstance(v, str)), "")
        return list(dict.fromkeys(_PATCH_FILE_RE.findall(patch)))
    return []


def progress(calls: Iterable[Call]) -> dict[str, Any] | None:
    plan: tuple[str, str] | None = None
    files: list[str] = []
    for c in calls:
        p = plan_of(c.name, c.arguments)
        if p is not None:
            plan = (p, c.name)
        files += [f for f in written_files(c.name, c.arguments) if f not in files]
    if plan is None and not files:
        return None
    data: dict[str, Any] = {}
    if plan is not None:
        data["plan"], data["tool"] = plan
    if files:
        data["files"] = files
    return data
