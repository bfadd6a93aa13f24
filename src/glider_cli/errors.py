"""Glider's one exception tree.

    GliderError
    ├── ConfigError            a config or profile file is wrong (names file, rule, key)
    │   ├── ProfileError       an unknown bundled profile, an unreadable file
    │   └── RuleError          one rule is wrong
    ├── StoreError             the on-disk stores (a line that cannot be read back is skipped and
    │                          counted, not raised)
    ├── RoutingError           no decision could be made
    │   ├── NoRoute
    │   └── GateRefused        an explicit /local its local backend cannot take (window, tools)
    ├── RequestError           a malformed client request (the proxy maps it to a protocol 4xx)
    ├── QueryError             a malformed `context query` (points at the bad token)
    ├── BackendError           an upstream failed
    │   ├── BackendTimeout
    │   ├── UpstreamStatus     the upstream answered with an error status
    │   └── BackendOpen        not tried: its circuit breaker is open (`backends.breaker`)
    └── DelegateError          a delegate CLI could not be run

`cli.py` catches GliderError once: `Error: <message>` (and the hint) on stderr, exit 1.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import Any


class GliderError(Exception):
    """Base of every error Glider reports to a user."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class ConfigError(GliderError):
    """A configuration file is wrong. Carries where: file, rule, key (any may be None)."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        rule: str | None = None,
        key: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = file
        self.rule = rule
        self.key = key
        self.line = line
        where = []
        if file:
            where.append(f"{file}:{line}" if line else file)
        if rule:
            where.append(f"rule {rule!r}")
        if key:
            where.append(f"key {key!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message, hint=hint)
        self.detail = message


class ProfileError(ConfigError):
    """A profile cannot be found or read."""


class RuleError(ConfigError):
    """One routing rule is wrong."""


class StoreError(GliderError):
    """The on-disk stores could not be read or written."""


class RoutingError(GliderError):
    """The router could not decide."""


class NoRoute(RoutingError):
    """No rule matched and there is no default."""


class GateRefused(RoutingError):
    """An explicit local command (`/local`, `/fast`) whose local backend cannot take the request (a
    capability gate: the window, tools) and whose rule names no `fallback`. The client gets a
    protocol-shaped 400 naming the gate and the figures: Glider never moves it to the cloud itself.
    `rule` and `backend` name the rule and the local backend the gate refused (None: no single one).
    `events` is what the request leaves in the log and `kind` its family kind: the router raises it
    without them, `turns.lifecycle` raises it again with them (`recorded`)."""

    status = 400

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        rule: str | None = None,
        backend: str | None = None,
        events: list[tuple[str, Any, str | None]] | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.rule = rule
        self.backend = backend
        self.events: list[tuple[str, Any, str | None]] = [] if events is None else events
        self.kind = kind

    def recorded(self, events: list[tuple[str, Any, str | None]], kind: str | None) -> GateRefused:
        """The same refusal, carrying the events that record it and its family kind."""
        return GateRefused(
            self.message, hint=self.hint, rule=self.rule, backend=self.backend, events=events, kind=kind
        )


class RequestError(GliderError):
    """A client request is malformed. `status` is the HTTP status the proxy answers with."""

    def __init__(self, message: str, *, status: int = 400, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class QueryError(GliderError):
    """A context query is malformed; `position` is the offset of the bad token."""

    def __init__(self, message: str, *, position: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.position = position


class BackendError(GliderError):
    """An upstream backend failed."""


class BackendTimeout(BackendError):
    """The upstream did not answer in time."""


class UpstreamStatus(BackendError):
    """The upstream answered with an error status."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: bytes = b"",
        hint: str | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.body = body
        self.headers = headers  # the upstream's response headers, as received


class ReplyUnusable(BackendError):
    """The backend answered, but with a reply its turn cannot use (`proxy.escalate`): not passed on."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the reply could not be used ({reason})")
        self.reason = reason


class BackendOpen(BackendError):
    """The backend was not tried: its circuit breaker is open. `retry_after`: seconds until a request
    may try it again."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DelegateError(GliderError):
    """A delegate CLI could not be run."""
