"""What a bounded script evaluation gives back: a Diagnostic for a script that cannot load, a
ScriptOutcome for a call. Both cross the worker's pipe as JSON (`to_dict` / `from_dict`).
`ScriptError` is the exception a script that cannot load raises where it is compiled (here, not in
`router.scripts`, so a config whose scripts all run as Python never imports the worker's supervisor)."""

from __future__ import annotations

import json
from typing import Any

from glider_cli.values import Frozen, init_fields


class Diagnostic(Frozen):
    """One problem in a script: 1-based line and column (0 when unknown) and a one-line message."""

    line: int
    col: int
    message: str

    def __init__(self, line: int, col: int, message: str) -> None:
        init_fields(self, line, col, message)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.col, "message": self.message}

    @classmethod
    def from_dict(cls, raw: Any) -> Diagnostic:
        if not isinstance(raw, dict):
            return cls(0, 0, "the script worker sent a malformed diagnostic")
        line, col, message = raw.get("line"), raw.get("column"), raw.get("message")
        return cls(
            line if isinstance(line, int) else 0,
            col if isinstance(col, int) else 0,
            message if isinstance(message, str) else "unknown error",
        )


class ScriptError(Exception):
    """A script that cannot be loaded. `diagnostic` says where."""

    def __init__(self, filename: str, diagnostic: Diagnostic) -> None:
        super().__init__(f"{filename}:{diagnostic.line}:{diagnostic.col}: {diagnostic.message}")
        self.filename = filename
        self.diagnostic = diagnostic


MAX_ACTION_BYTES = 16 << 10
MAX_MESSAGE = 400  # a script's own text (`fail(...)`) is in its error messages: keep replies small

# The outcome dict of a script that returned None, as the engine shares it between calls (never
# mutated: the in-process sandbox knows it by identity).
NO_MATCH: dict[str, Any] = {"matched": False, "action": None, "error": None}


def interpret(result: Any) -> dict[str, Any]:
    """What evaluate() returned as an outcome dict (a wrong shape is an error, not a match). The
    Starlark engine and the native evaluator (sandbox.native) read a result alike through this."""
    if result is None:
        return NO_MATCH
    if not isinstance(result, dict):
        return error_outcome(f"returned a {type(result).__name__}, expected None or a dict")
    matched = result.get("matched", True)
    if not isinstance(matched, bool):
        return error_outcome("returned a non-boolean 'matched'")
    action = result.get("action")
    if action is not None and not isinstance(action, dict):
        return error_outcome("returned an 'action' that is not a dict")
    if matched and action is not None and len(json.dumps(action)) > MAX_ACTION_BYTES:
        return error_outcome(f"returned an action larger than {MAX_ACTION_BYTES >> 10} KiB")
    return {"matched": matched, "action": action if matched else None, "error": None}


def error_outcome(message: str) -> dict[str, Any]:
    return {"matched": False, "action": None, "error": short(message)}


def short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


class ScriptOutcome(Frozen):
    """What one call produced: a match with an optional action dict, no match, or an error."""

    matched: bool
    action: dict[str, Any] | None
    error: str | None

    def __init__(self, matched: bool, action: dict[str, Any] | None = None, error: str | None = None) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.matched = matched
        s.action = action
        s.error = error

    def to_dict(self) -> dict[str, Any]:
        return {"matched": self.matched, "action": self.action, "error": self.error}

    @classmethod
    def from_dict(cls, raw: Any) -> ScriptOutcome:
        if not isinstance(raw, dict):
            return cls(False, error="the script worker sent a malformed outcome")
        matched, action, error = raw.get("matched"), raw.get("action"), raw.get("error")
        if isinstance(error, str):
            return cls(False, error=error)
        if not isinstance(matched, bool) or (action is not None and not isinstance(action, dict)):
            return cls(False, error="the script worker sent a malformed outcome")
        return cls(matched, action if matched else None)


class LoadFailed(Exception):
    """A script that cannot be loaded (a syntax or load-time error, no `evaluate`, a bomb at load)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
