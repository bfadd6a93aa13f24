"""Starlark evaluation (starlark-pyo3), inside the worker process only.

Contract:
- `load(id, source, filename, deadline_s)` parses and runs a script's top level once, under a load
  deadline, and keeps the frozen module; a syntax error, a load-time error (an undefined name...),
  a missing or non-function `evaluate`, a deadline or a panic is a diagnostic with line and column.
- `call(ids, payload)` evaluates the scripts `ids` in order on one request and returns one outcome
  dict per script it evaluated, stopping at the first match candidate (a dict whose `matched` is
  not False). Each script has its own deadline (the interpreter's cancel hook) and a call-stack limit;
  a script that raises, panics, runs out of memory or time is an outcome with `error`, and the call
  goes on with the next script.
- Outcomes are `ScriptOutcome.to_dict()` shapes, interpreted here (`results.interpret`: a wrong
  shape is an error, not a match) so only small, checked values leave the worker.

Values cross into Starlark as JSON, and every argument and byte costs, so the request is passed as
one string (a JSON header with the scalar fields, roles and message lengths, then the texts joined)
and rebuilt into structs once per call by a group module that loads each script's `evaluate`. The
group tells the engine which script starts (`glider_next_<i>`), so a deadline or a failure is charged
to the script that was running, and the progress board lets the supervisor do the same when it has
to kill the worker.
"""

from __future__ import annotations

import functools
import re
import time
from typing import TYPE_CHECKING

import starlark as sl

from glider_cli.sandbox.results import NO_MATCH, interpret
from glider_cli.sandbox.results import error_outcome as _error
from glider_cli.sandbox.results import short as _short

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_CALLSTACK = 64
_LOCATION = re.compile(r"-->\s*(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)")
_FATAL = (KeyboardInterrupt, SystemExit, GeneratorExit)
# Rebuilds `request` (a struct) from the one-string payload.
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
_PROBE = "type(evaluate)\n"


def _globals() -> sl.Globals:
    return sl.Globals.extended_by([sl.LibraryExtension.StructType, sl.LibraryExtension.Json])


def diagnostic(exc: BaseException) -> dict[str, Any]:
    """A Starlark error as {"line", "column", "message"} (0 when the error names no place)."""
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
        return _at(0, 0, message)
    return _at(int(loc.group("line")), int(loc.group("col")), message)


def _at(line: int, col: int, message: str) -> dict[str, Any]:
    return {"line": line, "column": col, "message": _short(message)}


def crash_message(exc: BaseException) -> str:
    """A panic or MemoryError in one line (a panic's text is the Rust message, then a backtrace)."""
    if isinstance(exc, MemoryError):
        return "ran out of memory"
    first = str(exc).strip().splitlines()
    return f"crashed the Starlark interpreter ({first[0] if first else type(exc).__name__})"


class _Loaded:
    __slots__ = ("deadline_s", "filename", "module")

    def __init__(self, module: sl.FrozenModule, filename: str, deadline_s: float) -> None:
        self.module = module
        self.filename = filename
        self.deadline_s = deadline_s


class Evaluator:
    """Loaded scripts and the group modules built over them (see the module contract)."""

    def __init__(self, mark: Callable[[int], None] | None = None) -> None:
        self._globals = _globals()
        self._scripts: dict[int, _Loaded] = {}
        self._groups: dict[tuple[int, ...], _Group] = {}
        self._mark = mark or (lambda index: None)
        self._deadline = 0.0
        self._current = 0
        self._limits: tuple[float, ...] = ()
        self._options = sl.EvalOptions(check_cancelled=self._cancelled, max_callstack_size=MAX_CALLSTACK)

    def _cancelled(self) -> bool:
        return time.monotonic() > self._deadline

    def _enter(self, index: int) -> str:
        """Called by a group module as each script starts: its own deadline begins now. Returns ""
        (what Starlark is handed back crosses as JSON: a string is the shortest way through)."""
        if index != self._current:
            self._current = index
            self._deadline = time.monotonic() + self._limits[index]
            self._mark(index)
        return ""

    # -- loading -----------------------------------------------------------------------------------

    def _load(self, source: str, filename: str, deadline_s: float) -> sl.FrozenModule:
        """The frozen module, or raise _LoadError(diagnostic)."""
        self._deadline = time.monotonic() + deadline_s
        try:
            module = sl.Module()
            sl.eval_with(self._options, module, sl.parse(filename, source), self._globals)
        except sl.StarlarkError as exc:
            diag = diagnostic(exc)
            if "cancelled" in diag["message"].lower():
                diag["message"] = f"loading took longer than {deadline_s * 1000:.0f} ms"
            raise _LoadError(diag) from None
        except BaseException as exc:
            if isinstance(exc, _FATAL):
                raise
            raise _LoadError(_at(1, 1, crash_message(exc) + " while loading")) from None
        try:
            kind = sl.eval(module, sl.parse("<probe>", _PROBE), self._globals)
        except sl.StarlarkError:
            # The script alone loaded, so the only thing the probe can miss is `evaluate` itself.
            raise _LoadError(_at(1, 1, "the script defines no evaluate(request) function")) from None
        if kind != "function":
            raise _LoadError(_at(1, 1, f"evaluate must be a function, not a {kind}"))
        return module.freeze()

    def load(self, sid: int, source: str, filename: str, deadline_s: float, load_s: float) -> dict[str, Any]:
        try:
            module = self._load(source, filename, load_s)
        except _LoadError as exc:
            return {"diagnostic": exc.diagnostic}
        self._scripts[sid] = _Loaded(module, filename, deadline_s)
        return {"ok": True}

    def check(self, source: str, filename: str, load_s: float) -> dict[str, Any]:
        try:
            self._load(source, filename, load_s)
        except _LoadError as exc:
            return {"diagnostics": [exc.diagnostic]}
        return {"diagnostics": []}

    def drop(self, ids: list[int]) -> None:
        gone = set(ids)
        for sid in gone:
            self._scripts.pop(sid, None)
        for key in [k for k in self._groups if gone.intersection(k)]:
            del self._groups[key]

    # -- calling -----------------------------------------------------------------------------------

    def _group(self, ids: tuple[int, ...]) -> _Group | None:
        """The group module over scripts `ids` with their deadlines, built on first use (None when
        one of them is not loaded). `drop` removes every group a dropped script belongs to, so a
        cached group's scripts are all loaded."""
        group = self._groups.get(ids)
        if group is not None:
            return group
        if any(sid not in self._scripts for sid in ids):
            return None
        by_name = {f"m{i}": self._scripts[sid].module for i, sid in enumerate(ids)}
        loads = "".join(f'load("m{i}", e{i} = "evaluate")\n' for i in range(len(ids)))
        members = ", ".join(f"e{i}" for i in range(len(ids)))
        # The engine starts the clock of the first script itself (`call`): only the scripts after it
        # tell it they start, each through a callback of its own that takes no argument (every
        # argument crosses to Python as JSON, which costs more than the call).
        starts = "".join(f"glider_next_{i}, " for i in range(1, len(ids)))
        source = (
            f"{loads}_members = [{members}]\n_starts = [None, {starts}]\n\n"
            f"def glider_group(payload, start = 0):{_BUILD_REQUEST}"
            f"    for i in range(start, {len(ids)}):\n"
            "        if i != start:\n"
            "            _starts[i]()\n"
            "        r = _members[i](request)\n"
            "        if r != None:\n"
            "            return [i, r]\n"
            "    return None\n"
        )
        module = sl.Module()
        for i in range(1, len(ids)):
            module.add_callable(f"glider_next_{i}", functools.partial(self._enter, i))
        sl.eval(module, sl.parse("<script group>", source), self._globals, sl.FileLoader(by_name.__getitem__))
        group = _Group(module.freeze(), tuple(self._scripts[sid].deadline_s for sid in ids))
        self._groups[ids] = group
        return group

    def call(
        self, ids: tuple[int, ...], payload: str, partial: Callable[[int, dict[str, Any]], None]
    ) -> list[dict[str, Any]]:
        """One outcome per script evaluated (see the contract). `partial(index, outcome)` is told
        of every outcome the call goes on past, before it goes on."""
        group = self._group(ids)
        if group is None:
            missing = next(sid for sid in ids if sid not in self._scripts)
            return [_error(f"not evaluated: script {missing} is not loaded in the worker")] * len(ids)
        self._limits = group.limits
        module = group.module
        out: list[dict[str, Any]] = []
        start = 0
        while start < len(ids):
            self._current = start
            self._deadline = time.monotonic() + self._limits[start]
            self._mark(start)
            try:
                # Every argument crosses as JSON: `start` only when the call resumes after a failure.
                found: Any = (
                    module.call_with(self._options, "glider_group", payload, start)
                    if start
                    else module.call_with(self._options, "glider_group", payload)
                ).value
            except BaseException as exc:
                if isinstance(exc, _FATAL):
                    raise
                index = self._current
                out.extend(NO_MATCH for _ in range(index - start))
                outcome = self._failure(exc, index)
                out.append(outcome)
                partial(index, outcome)
                start = index + 1
                continue
            if found is None:
                if not out and start == 0:  # the common case: no script matched, none failed
                    return group.no_match
                out.extend(NO_MATCH for _ in range(len(ids) - start))
                break
            index, result = int(found[0]), found[1]
            out.extend(NO_MATCH for _ in range(index - start))
            outcome = interpret(result)
            out.append(outcome)
            if outcome["matched"]:
                break
            if outcome["error"] is not None:
                partial(index, outcome)
            start = index + 1
        return out

    def _failure(self, exc: BaseException, index: int) -> dict[str, Any]:
        if not isinstance(exc, sl.StarlarkError):
            return _error(crash_message(exc))
        diag = diagnostic(exc)
        if "cancelled" in diag["message"].lower():
            where = f" (line {diag['line']})" if diag["line"] else ""
            return _error(f"stopped after {self._limits[index] * 1000:.0f} ms{where}")
        where = f" (line {diag['line']})" if diag["line"] else ""
        return _error(f"raised: {diag['message']}{where}")


class _Group:
    """A group module, its scripts' deadlines, and its outcome list when none matches (shared,
    like `NO_MATCH`: callers only read it)."""

    __slots__ = ("limits", "module", "no_match")

    def __init__(self, module: sl.FrozenModule, limits: tuple[float, ...]) -> None:
        self.module = module
        self.limits = limits
        self.no_match = [NO_MATCH] * len(limits)


class _LoadError(Exception):
    def __init__(self, diag: dict[str, Any]) -> None:
        super().__init__(diag["message"])
        self.diagnostic = diag
