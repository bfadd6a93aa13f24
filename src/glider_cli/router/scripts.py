"""Starlark rule scripts: compiled once and called in the sandbox worker, except Glider's own.

Contract:
- A script defines `evaluate(request)`. `request` has the spec's fields with attribute access:
  `model`, `stream`, `messages` (each `.role`, `.content`), `estimated_tokens`, `has_tools`,
  `complexity_score`, `complexity_source`, and `temperature` / `max_tokens` only when the client sent
  them (`complexity_score` / `complexity_source` are worked out only when the word `complexity`
  appears in one of the config's scripts: a script that names neither does not pay for them). It
  returns None (no match) or a dict: `matched` (default True when a dict is returned) and
  `action` (`target`, `backend`, `model`, `adapter`, `strategy`), which wins over the rule's action.
- `Script(source, filename)` loads the file once in the routing sandbox (sandbox.supervisor), or
  in `sandbox=` (the router passes `sandbox.inprocess.bundled_sandbox()` for the bundled profiles'
  scripts, which are Glider's own code: evaluated in-process, no pipe round trip; a bundled script
  in the subset `sandbox.native` takes does not come here at all: the router runs it as Python,
  `router.triggers.NativeScriptMatcher`, with the same fields and the same outcomes); a
  syntax error, a load-time error (an undefined name...), a missing `evaluate`, or a top level that
  runs out of time or memory raises ScriptError with line and column.
- `Script.call` and `ScriptGroup.call` are bounded: each script has a wall-clock deadline and a
  call-stack limit, the worker's memory is capped, and the caller waits at most the deadlines plus
  the sandbox's grace. Any failure (a raise, a panic, an out-of-memory, a deadline, a dead worker)
  is returned as `ScriptOutcome.error`, never raised: a broken script is "no match" and routing
  goes on.
- `check_source` (lint, the playground) loads in the checking sandbox, apart from routing's.

The request is handed over as one string (`ScriptPayload`: a JSON header with the scalar fields,
roles and message lengths, then the texts joined), built once per decision and shared by every
script rule; adjacent script rules share one round trip to the worker (`ScriptGroup`).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import orjson

from glider_cli.sandbox.results import Diagnostic, LoadFailed, ScriptError, ScriptOutcome
from glider_cli.sandbox.supervisor import DEFAULT_DEADLINE_S, Sandbox, checking_sandbox, routing_sandbox
from glider_cli.values import Frozen

if TYPE_CHECKING:
    from glider_cli.sandbox.inprocess import InProcessSandbox

__all__ = [
    "DEFAULT_DEADLINE_S",
    "Diagnostic",
    "Script",
    "ScriptError",
    "ScriptGroup",
    "ScriptOutcome",
    "ScriptPayload",
    "build_payload",
    "check_source",
]

_set = object.__setattr__


class ScriptPayload(Frozen):
    """The request as the one string a script call receives (built once per decision).

    A JSON header line (`fields`, `roles`, `lens`: each message's length in code points) followed by
    the message texts joined: one argument costs far less to hand over than a list of dicts.
    """

    data: str

    def __init__(self, data: str) -> None:
        _set(self, "data", data)


def check_source(
    source: str, filename: str, *, sandbox: Sandbox | InProcessSandbox | None = None
) -> list[Diagnostic]:
    """Every problem that stops the script from loading (empty when it is fine).

    Used by `glider lint` and `POST /api/playground/parse`; bounded like a routing call.
    """
    return (sandbox or checking_sandbox()).check(source, filename)


class Script:
    """A compiled script: loaded once in the sandbox, called many times."""

    def __init__(
        self,
        source: str,
        filename: str,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        sandbox: Sandbox | InProcessSandbox | None = None,
    ) -> None:
        self.sandbox: Sandbox | InProcessSandbox = sandbox or routing_sandbox()
        try:
            self.id = self.sandbox.load(source, filename, deadline_s=deadline_s)
        except LoadFailed as exc:
            raise ScriptError(filename, exc.diagnostic) from None
        weakref.finalize(self, self.sandbox.forget, self.id)
        self.filename = filename
        self.deadline_s = deadline_s

    def call(self, payload: ScriptPayload) -> ScriptOutcome:
        return self.sandbox.call((self.id,), payload.data)[0]


class ScriptGroup:
    """Adjacent script rules evaluated in one round trip, so the request is handed over once.

    `call` returns one outcome per member evaluated, in order, up to the first match candidate (a
    failing member is an outcome with `error`, and the members after it still run); a member past
    the end of the list was not evaluated, and the caller calls it on its own.
    """

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = scripts
        self.sandbox = scripts[0].sandbox
        if any(s.sandbox is not self.sandbox for s in scripts):
            raise ValueError("the scripts of a group must share one sandbox")
        self.ids = tuple(s.id for s in scripts)
        self.deadline_s = sum(s.deadline_s for s in scripts)

    def call(self, payload: ScriptPayload) -> list[ScriptOutcome] | None:
        return self.sandbox.call(self.ids, payload.data)


def build_payload(fields: dict[str, Any], roles: list[str], contents: list[str]) -> ScriptPayload:
    """The call argument for one request. `fields` holds the scalar request fields."""
    head = orjson.dumps({"fields": fields, "roles": roles, "lens": [len(c) for c in contents]})
    return ScriptPayload(head.decode() + "\n" + "".join(contents))
