"""Starlark rule scripts (starlark-pyo3): check, compile once, call with a deadline.

Contract:
- A script defines `evaluate(request)`. `request` has the spec's fields with attribute access:
  `model`, `stream`, `messages` (each `.role`, `.content`), `estimated_tokens`, `has_tools`,
  `complexity_score`, `complexity_source`, and `temperature` / `max_tokens` only when the client sent
  them. It returns None (no match) or a dict: `matched` (default True when a dict is returned) and
  `action` (`target`, `backend`, `model`, `adapter`, `strategy`), which wins over the rule's action.
- `compile_script` parses and loads the file once into a frozen module; a syntax error, a load-time
  error (an undefined name...) or a missing `evaluate` raises ScriptError with line and column.
- `Script.call` is bounded: a wall-clock deadline (checked by the interpreter's cancel hook) and a
  call-stack limit. Any failure is returned as `ScriptOutcome.error`, never raised: a broken
  script is "no match" and routing goes on.

Values cross into Starlark as JSON, and every argument and byte costs, so the request is passed as
one string (a JSON header with the scalar fields, roles and message lengths, then the texts joined)
and rebuilt into structs by a prelude appended after the user's code (which keeps its line numbers).
The payload is built once per decision and shared by every script rule.
"""

from __future__ import annotations

import re
import time
from typing import Any

import orjson
import starlark as sl

from glider_cli.values import Frozen, init_fields

_set = object.__setattr__

DEFAULT_DEADLINE_S = 0.05
MAX_CALLSTACK = 64
_ENTRY = "glider_entry"
# Rebuilds `request` (a struct) from the one-string payload; shared by the prelude and the group.
_BUILD_REQUEST = """
    nl = payload.find("\\n")
    head = json.decode(payload[:nl])
    fields = head["fields"]
    roles = head["roles"]
    lens = head["lens"]
    messages = []
    pos = nl + 1
    for i in range(len(roles)):
        end = pos + lens[i]
        messages.append(struct(role = roles[i], content = payload[pos:end]))
        pos = end
    fields["messages"] = messages
    request = struct(**fields)
"""
_PRELUDE = f"""

def {_ENTRY}(payload):{_BUILD_REQUEST}    return evaluate(request)

def {_ENTRY}_kind():
    return type(evaluate)
"""
_LOCATION = re.compile(r"-->\s*(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)")


class Diagnostic(Frozen):
    """One problem in a script: 1-based line and column (0 when unknown) and a one-line message."""

    line: int
    col: int
    message: str

    def __init__(self, line: int, col: int, message: str) -> None:
        init_fields(self, line, col, message)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.col, "message": self.message}


class ScriptError(Exception):
    """A script that cannot be loaded. `diagnostic` says where."""

    def __init__(self, filename: str, diagnostic: Diagnostic) -> None:
        super().__init__(f"{filename}:{diagnostic.line}:{diagnostic.col}: {diagnostic.message}")
        self.filename = filename
        self.diagnostic = diagnostic


class ScriptPayload(Frozen):
    """The request as the one string a script call receives (built once per decision).

    A JSON header line (`fields`, `roles`, `lens`: each message's length in code points) followed by
    the message texts joined: one argument costs far less to hand over than a list of dicts.
    """

    data: str

    def __init__(self, data: str) -> None:
        _set(self, "data", data)


class ScriptOutcome(Frozen):
    """What one call produced: a match with an optional action dict, no match, or an error."""

    matched: bool
    action: dict[str, Any] | None
    error: str | None

    def __init__(self, matched: bool, action: dict[str, Any] | None = None, error: str | None = None) -> None:
        self.__dict__.update(matched=matched, action=action, error=error)


def _globals() -> sl.Globals:
    return sl.Globals.extended_by([sl.LibraryExtension.StructType, sl.LibraryExtension.Json])


def _diagnostic(exc: BaseException) -> Diagnostic:
    text = str(exc)
    loc = _LOCATION.search(text)
    message = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("error:"):
            message = stripped[len("error:") :].strip()
            break
    if not message:
        message = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if loc is None:
        return Diagnostic(0, 0, message)
    return Diagnostic(int(loc.group("line")), int(loc.group("col")), message)


def _load(source: str, filename: str) -> sl.FrozenModule:
    ast = sl.parse(filename, source)
    module = sl.Module()
    sl.eval(module, ast, _globals())
    return module.freeze()


def _check_loaded(source: str, filename: str) -> None:
    """Raise ScriptError unless `source` parses, loads and defines a callable `evaluate`."""
    try:
        _load(source, filename)
    except sl.StarlarkError as exc:
        raise ScriptError(filename, _diagnostic(exc)) from None
    try:
        probe = _load(source + "\n\ndef glider_kind():\n    return type(evaluate)\n", filename)
        kind = probe.call("glider_kind")
    except sl.StarlarkError:
        # The script alone loaded, so the only thing the probe can miss is `evaluate` itself.
        raise ScriptError(
            filename, Diagnostic(1, 1, "the script defines no evaluate(request) function")
        ) from None
    if kind != "function":
        raise ScriptError(filename, Diagnostic(1, 1, f"evaluate must be a function, not a {kind}"))


def check_source(source: str, filename: str) -> list[Diagnostic]:
    """Every problem that stops the script from loading (empty when it is fine).

    Used by `glider lint` and `POST /api/playground/parse`. Does no I/O.
    """
    try:
        _check_loaded(source, filename)
    except ScriptError as exc:
        return [exc.diagnostic]
    return []


class Script:
    """A compiled script: parsed and loaded once, called many times."""

    def __init__(self, source: str, filename: str, *, deadline_s: float = DEFAULT_DEADLINE_S) -> None:
        # Fast path: one load of the script with the prelude. Only when that fails is the script
        # loaded alone, which gives the diagnostic with the script's own line and column.
        try:
            self._module = _load(source + _PRELUDE, filename)
            kind = self._module.call(f"{_ENTRY}_kind")
        except sl.StarlarkError as exc:
            _check_loaded(source, filename)
            raise ScriptError(filename, _diagnostic(exc)) from None  # a clash with the prelude's names
        if kind != "function":
            raise ScriptError(filename, Diagnostic(1, 1, f"evaluate must be a function, not a {kind}"))
        self.filename = filename
        self.deadline_s = deadline_s

    def call(self, payload: ScriptPayload) -> ScriptOutcome:
        deadline = time.monotonic() + self.deadline_s
        options = sl.EvalOptions(
            check_cancelled=lambda: time.monotonic() > deadline, max_callstack_size=MAX_CALLSTACK
        )
        try:
            result = self._module.call_with(options, _ENTRY, payload.data).value
        except sl.StarlarkError as exc:
            diag = _diagnostic(exc)
            if "cancelled" in diag.message.lower():
                return ScriptOutcome(
                    False, error=f"stopped after {self.deadline_s * 1000:.0f} ms (line {diag.line})"
                )
            where = f" (line {diag.line})" if diag.line else ""
            return ScriptOutcome(False, error=f"raised: {diag.message}{where}")
        return interpret(result)


class ScriptGroup:
    """Adjacent script rules evaluated in one interpreter call, so the request is handed over once.

    The group module loads each member's `evaluate`, builds the request struct once, and calls the
    members in order until one returns a match candidate (a dict whose `matched` is not False).
    `call` returns one outcome per member evaluated, or None when the call failed as a whole (a member
    raised or the deadline passed): the caller then calls the members one by one, so each failure is
    attributed to its own script.
    """

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = scripts
        self.deadline_s = sum(s.deadline_s for s in scripts)
        by_name = {f"member{i}": s._module for i, s in enumerate(scripts)}
        loads = "".join(f'load("member{i}", e{i} = "evaluate")\n' for i in range(len(scripts)))
        calls = "".join(
            f"    r = e{i}(request)\n    out.append(r)\n"
            '    if type(r) == "dict" and r.get("matched", True) != False:\n        return out\n'
            for i in range(len(scripts))
        )
        source = f"{loads}\ndef glider_group(payload):{_BUILD_REQUEST}    out = []\n{calls}    return out\n"
        module = sl.Module()
        sl.eval(module, sl.parse("<script group>", source), _globals(), sl.FileLoader(by_name.__getitem__))
        self._module = module.freeze()

    def call(self, payload: ScriptPayload) -> list[ScriptOutcome] | None:
        deadline = time.monotonic() + self.deadline_s
        options = sl.EvalOptions(
            check_cancelled=lambda: time.monotonic() > deadline, max_callstack_size=MAX_CALLSTACK
        )
        try:
            results = self._module.call_with(options, "glider_group", payload.data).value
        except sl.StarlarkError:
            return None
        if not isinstance(results, list):
            return None
        return [interpret(r) for r in results]


def interpret(result: Any) -> ScriptOutcome:
    """Turn what evaluate() returned into an outcome (a wrong shape is an error, not a match)."""
    if result is None:
        return ScriptOutcome(False)
    if not isinstance(result, dict):
        return ScriptOutcome(False, error=f"returned a {type(result).__name__}, expected None or a dict")
    matched = result.get("matched", True)
    if not isinstance(matched, bool):
        return ScriptOutcome(False, error="returned a non-boolean 'matched'")
    action = result.get("action")
    if action is not None and not isinstance(action, dict):
        return ScriptOutcome(False, error="returned an 'action' that is not a dict")
    return ScriptOutcome(matched, action if matched else None)


def build_payload(fields: dict[str, Any], roles: list[str], contents: list[str]) -> ScriptPayload:
    """The call argument for one request. `fields` holds the scalar request fields."""
    head = orjson.dumps({"fields": fields, "roles": roles, "lens": [len(c) for c in contents]})
    return ScriptPayload(head.decode() + "\n" + "".join(contents))
