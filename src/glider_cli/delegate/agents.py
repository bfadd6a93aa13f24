"""One adapter per delegate vendor: how it is invoked headless, and how its output is read.

How each vendor is pointed at the workspace and at the private run directory (RUN):

    vendor        cwd        context file (read by the vendor itself)        the workspace
    claude        workspace  RUN/glider-context.md, --append-system-prompt-file   its cwd
    cursor-agent  RUN        RUN/AGENTS.md                                    named in the prompt and the
    agy           RUN        RUN/AGENTS.md                                    context file, and reachable
    codex         RUN (-C)   RUN/AGENTS.md (codex reads at most 32 KiB)       as RUN/workspace (a symlink);
                                                                              codex also gets --add-dir

Output contracts (CLIENTS.md):
- claude `-p --output-format json`: one `{"type":"result", subtype, is_error, result, ...}` object; success
  needs exit 0, `is_error: false` and `subtype: "success"` (exit 0 alone is not enough).
- cursor-agent `-p --output-format stream-json --trust`: JSONL events (its tool calls, rejected ones
  among them) ending in the same result object. It can fail to exit after printing it, so the runner
  kills it once `result_ready` says the result is complete.
- agy `--output-format json -p PROMPT` (its `-p` takes the prompt as its value): a JSON object with
  `response` (or `error`). Empty output is a failure whatever the exit code.
- codex `exec --json -C DIR`: JSONL events; `item.completed` items of type `agent_message` carry the
  reply, `file_change` items list changed paths; `turn.failed`/`error` mean failure.

What a vendor refused for lack of permission is `Outcome.detail["refused"]` (`delegate.permissions`),
with `session_id` to resume the run: `build(..., grant=(session_id, rules))` resumes it with exactly
those rules allowed (claude: `--resume <id> --allowedTools <rule>...`, placed before `-p`).

Permission-widening flags (`--dangerously-skip-permissions`, `--force`, `--yolo`,
`--dangerously-bypass-approvals-and-sandbox`) are added only when `DelegateSettings.unsafe_permissions`.
Pure: builds argv and parses text; the runner does the I/O.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glider_cli.config.settings import DelegateSettings
from glider_cli.delegate import permissions
from glider_cli.errors import DelegateError
from glider_cli.values import Frozen, init_fields

CODEX_AGENTS_MD_LIMIT = 32 * 1024

# In-message flags (domain.DELEGATE_FLAGS) and CLI switches -> vendor.
FLAG_VENDOR: Mapping[str, str] = {"/claude": "claude", "/cursor-agent": "cursor-agent", "/agy": "agy"}


class Invocation(Frozen):
    argv: tuple[str, ...]
    cwd: Path

    def __init__(self, argv: tuple[str, ...], cwd: Path) -> None:
        init_fields(self, argv, cwd)


class Outcome(Frozen):
    """What a vendor's output says: ok, the reply (or the error), and files it reports changing."""

    ok: bool
    text: str
    files: tuple[str, ...]
    detail: Mapping[str, Any]

    def __init__(
        self,
        ok: bool,
        text: str,
        files: tuple[str, ...] = (),
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        init_fields(self, ok, text, files, {} if detail is None else detail)


def _prompt(task: str) -> str:
    # A leading "/" is a slash command to Claude Code, a leading "-" an option to every CLI.
    task = task.strip()
    return f"Task: {task}" if task[:1] in ("/", "-") else task


def _json_objects(stdout: str) -> list[dict[str, Any]]:
    """Every JSON object in the output: the whole text, else one per line (JSONL)."""
    text = stdout.strip()
    if not text:
        return []
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


class Adapter(ABC):
    """One vendor: class attributes describe it; `flags` and `parse` are its argv and output contract.

    argv = command, subcommand, the spec's args, flags, [model_flag MODEL], [unsafe_flag],
    prompt_flag, the prompt; cwd is the run directory, or the workspace when not works_in_run_dir.
    """

    vendor: str = ""
    default_command: str = ""
    context_file: str = "AGENTS.md"
    # The vendor reads at most this many bytes of its context file (None: no known limit).
    context_limit: int | None = None
    works_in_run_dir: bool = True
    subcommand: tuple[str, ...] = ()
    model_flag: str = "--model"
    unsafe_flag: str = ""
    prompt_flag: tuple[str, ...] = ()

    def command(self, spec: DelegateSettings | None) -> str:
        return spec.command if spec and spec.command else self.default_command

    @abstractmethod
    def flags(self, workspace: Path, run_dir: Path) -> tuple[str, ...]:
        """The vendor's headless-output (and directory) flags."""

    def grant_args(self, session_id: str, rules: tuple[str, ...]) -> tuple[str, ...]:
        """The flags that resume run `session_id` with exactly `rules` allowed (none: not supported)."""
        return ()

    def stderr_refusals(self, stderr: str) -> tuple[permissions.Refusal, ...]:
        """Refusals the vendor reports only on its stderr (codex exec's approval rejections)."""
        return ()

    def build(
        self,
        spec: DelegateSettings | None,
        task: str,
        workspace: Path,
        run_dir: Path,
        grant: tuple[str, tuple[str, ...]] | None = None,
    ) -> Invocation:
        """The argv and cwd for one headless run (`grant`: resume that session with those rules)."""
        argv = [
            self.command(spec),
            *self.subcommand,
            *(self.grant_args(*grant) if grant else ()),
            *(spec.args if spec else ()),
            *self.flags(workspace, run_dir),
        ]
        if spec and spec.model:
            argv += [self.model_flag, spec.model]
        if spec and spec.unsafe_permissions:
            argv.append(self.unsafe_flag)
        argv += [*self.prompt_flag, self.prompt(task, workspace)]
        return Invocation(tuple(argv), run_dir if self.works_in_run_dir else workspace)

    @abstractmethod
    def parse(self, stdout: str, returncode: int | None) -> Outcome:
        """Read the vendor's output (and exit code; None when it was killed) into an Outcome."""

    def result_ready(self, stdout: str) -> bool:
        """True once the output holds the final result (the runner may then stop a lingering process)."""
        return False

    def progress(self, line: str) -> str | None:
        """What one complete line of output says the vendor is doing, for a streamed reply (or None:
        this vendor prints one result at the end)."""
        return None

    def prompt(self, task: str, workspace: Path) -> str:
        if not self.works_in_run_dir:
            return _prompt(task)
        return (
            f"{_prompt(task)}\n\nWork in the workspace {workspace} (also reachable as ./workspace); "
            f"read {self.context_file} in the current directory first."
        )


def _result_object(stdout: str) -> dict[str, Any] | None:
    for obj in reversed(_json_objects(stdout)):
        if obj.get("type") == "result":
            found: dict[str, Any] = obj
            return found
    return None


class ClaudeAdapter(Adapter):
    vendor = "claude"
    default_command = "claude"
    context_file = "glider-context.md"
    works_in_run_dir = False
    unsafe_flag = "--dangerously-skip-permissions"

    def flags(self, workspace: Path, run_dir: Path) -> tuple[str, ...]:
        return (
            "-p",
            "--output-format",
            "json",
            "--append-system-prompt-file",
            str(run_dir / self.context_file),
        )

    def grant_args(self, session_id: str, rules: tuple[str, ...]) -> tuple[str, ...]:
        # `--allowedTools` takes every following word: the `-p` of `flags` comes after it.
        return ("--resume", session_id, "--allowedTools", *rules) if rules else ()

    def parse(self, stdout: str, returncode: int | None) -> Outcome:
        obj = _result_object(stdout)
        if obj is None:
            return Outcome(False, f"{self.vendor} printed no result object (exit {returncode})")
        text = obj.get("result")
        text = text if isinstance(text, str) else ""
        ok = returncode == 0 and obj.get("is_error") is False and obj.get("subtype") == "success"
        detail: dict[str, Any] = {
            k: obj[k]
            for k in ("subtype", "is_error", "session_id", "num_turns", "terminal_reason")
            if k in obj
        }
        denials = obj.get("permission_denials")
        if isinstance(denials, list) and denials:
            detail["permission_denials"] = len(denials)
        refused = permissions.refusals(self.vendor, _json_objects(stdout))
        if refused:
            detail["refused"] = refused
        if not ok and not text:
            text = f"{self.vendor} failed: subtype={obj.get('subtype')!r}, exit {returncode}"
        return Outcome(ok, text, (), detail)


class CursorAgentAdapter(ClaudeAdapter):
    vendor = "cursor-agent"
    default_command = "cursor-agent"
    context_file = "AGENTS.md"
    works_in_run_dir = True
    unsafe_flag = "--force"

    def flags(self, workspace: Path, run_dir: Path) -> tuple[str, ...]:
        return ("-p", "--output-format", "stream-json", "--trust")

    def grant_args(self, session_id: str, rules: tuple[str, ...]) -> tuple[str, ...]:
        return ()

    def result_ready(self, stdout: str) -> bool:
        return _result_object(stdout) is not None


class AgyAdapter(Adapter):
    vendor = "agy"
    default_command = "agy"
    unsafe_flag = "--yolo"
    prompt_flag = ("-p",)

    def flags(self, workspace: Path, run_dir: Path) -> tuple[str, ...]:
        return ("--output-format", "json")

    def parse(self, stdout: str, returncode: int | None) -> Outcome:
        if not stdout.strip():
            return Outcome(False, f"agy printed nothing (exit {returncode})")
        objs = _json_objects(stdout)
        if not objs:
            return Outcome(False, f"agy printed no JSON (exit {returncode}): {stdout.strip()[:200]}")
        obj = objs[-1]
        err = obj.get("error")
        if err:
            msg = err.get("message") if isinstance(err, dict) else err
            return Outcome(False, f"agy failed: {msg}", (), {"exit": returncode})
        text = obj.get("response")
        if text is None:
            res = obj.get("result")
            text = res.get("response") if isinstance(res, dict) else res
        if not isinstance(text, str) or not text.strip():
            return Outcome(False, f"agy gave an empty response (exit {returncode})")
        ok = returncode == 0 and obj.get("is_error") is not True
        return Outcome(ok, text, (), {"exit": returncode})


class CodexAdapter(Adapter):
    vendor = "codex"
    default_command = "codex"
    context_limit = CODEX_AGENTS_MD_LIMIT
    subcommand = ("exec",)
    model_flag = "-m"
    unsafe_flag = "--dangerously-bypass-approvals-and-sandbox"

    def flags(self, workspace: Path, run_dir: Path) -> tuple[str, ...]:
        return ("--json", "-C", str(run_dir), "--skip-git-repo-check", "--add-dir", str(workspace))

    def stderr_refusals(self, stderr: str) -> tuple[permissions.Refusal, ...]:
        return permissions.codex_rejections(stderr)

    def progress(self, line: str) -> str | None:
        if '"item.' not in line:
            return None
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            return None
        item = ev.get("item") if isinstance(ev, dict) else None
        if not isinstance(item, dict):
            return None
        kind = item.get("type")
        if ev.get("type") == "item.started" and kind == "command_execution":
            return f"codex runs: {str(item.get('command', ''))[:200]}"
        if ev.get("type") == "item.completed" and kind == "file_change":
            paths = [c.get("path") for c in item.get("changes") or () if isinstance(c, dict)]
            return "codex changed: " + ", ".join(str(p) for p in paths if p)
        if ev.get("type") == "item.completed" and kind in ("agent_message", "reasoning"):
            return f"codex: {' '.join(str(item.get('text', '')).split())[:200]}"
        return None

    def parse(self, stdout: str, returncode: int | None) -> Outcome:
        messages: list[str] = []
        files: list[str] = []
        errors: list[str] = []
        completed = False
        objs = _json_objects(stdout)
        for ev in objs:
            kind = ev.get("type")
            raw_item = ev.get("item")
            item: dict[str, Any] = raw_item if isinstance(raw_item, dict) else {}
            if kind == "item.completed" and item.get("type") == "agent_message":
                if isinstance(item.get("text"), str):
                    messages.append(item["text"])
            elif kind == "item.completed" and item.get("type") == "file_change":
                for ch in item.get("changes") or ():
                    if isinstance(ch, dict) and isinstance(ch.get("path"), str) and ch["path"] not in files:
                        files.append(ch["path"])
            elif kind == "turn.completed":
                completed = True
            elif kind == "turn.failed":
                err = ev.get("error")
                errors.append(str(err.get("message") if isinstance(err, dict) else err))
            elif kind == "error":
                errors.append(str(ev.get("message", "error")))
        ok = returncode == 0 and completed and not errors
        text = messages[-1] if messages else ""
        if not ok and not text:
            text = f"codex failed: {'; '.join(errors) or 'no completed turn'} (exit {returncode})"
        detail: dict[str, Any] = {"errors": errors} if errors else {}
        refused = permissions.refusals(self.vendor, objs)
        if refused:
            detail["refused"] = refused
        return Outcome(ok, text, tuple(files), detail)


ADAPTERS: Mapping[str, Adapter] = {
    a.vendor: a for a in (ClaudeAdapter(), CursorAgentAdapter(), AgyAdapter(), CodexAdapter())
}


def adapter_for(vendor: str) -> Adapter:
    try:
        return ADAPTERS[vendor]
    except KeyError:
        raise DelegateError(
            f"unknown delegate vendor {vendor!r}", hint=f"expected one of: {', '.join(ADAPTERS)}"
        ) from None
