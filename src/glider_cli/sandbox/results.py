"""What a bounded script evaluation gives back: a Diagnostic for a script that cannot load, a
ScriptOutcome for a call. Both cross the worker's pipe as JSON (`to_dict` / `from_dict`)."""

from __future__ import annotations

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


# The outcome dict of a script that returned None, as the engine shares it between calls (never
# mutated: the in-process sandbox knows it by identity).
NO_MATCH: dict[str, Any] = {"matched": False, "action": None, "error": None}


class ScriptOutcome(Frozen):
    """What one call produced: a match with an optional action dict, no match, or an error."""

    matched: bool
    action: dict[str, Any] | None
    error: str | None

    def __init__(self, matched: bool, action: dict[str, Any] | None = None, error: str | None = None) -> None:
        self.__dict__.update(matched=matched, action=action, error=error)

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
