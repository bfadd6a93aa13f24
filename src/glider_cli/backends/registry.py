"""Named upstream backends, resolved once from `Settings.backends` and an explicit environ.

Contract:
- A backend has a `kind` (ollama | openai | anthropic | origin), a `side` (local | cloud), a base URL
  (the kind's well-known default when the config gives none) and the wire protocol it speaks.
- API keys are read from the environment variable the config *names* (`api_key_env`) when the
  registry is built; the value lives only in memory, in `Backend.auth_headers()`, and is never part
  of `describe()` (what events, logs and `/healthz` show).
- `origin` forwards the client's own auth headers untouched, so it never carries a key of its own.
  Its upstream is the client protocol's own API (`ORIGIN_BASE_URL`): Anthropic, OpenAI, or Google's
  Gemini API for Gemini clients (whose key, `x-goog-api-key` or `?key=`, goes along as it came).
- Fallback: a backend's own `fallback` wins ("none" disables it); otherwise a local backend falls
  back to the default cloud backend and a cloud backend has none.
- The model a request carries (`model_for`): a decision's `adapter` / `model` apply only to the backend
  the decision was made for; any other backend (a fallback) uses its own `model`; a backend with no
  `model` (origin, a cloud backend left to the client) gets the model the client asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Literal

from glider_cli.config.settings import BackendSettings, BreakerSettings, Settings, Timeout
from glider_cli.errors import ConfigError

Kind = Literal["ollama", "openai", "anthropic", "origin"]
# What a backend speaks on the wire. "client" means: whatever the client spoke (origin).
Wire = Literal["ollama", "openai_chat", "anthropic", "client"]

KINDS: tuple[str, ...] = ("ollama", "openai", "anthropic", "origin")

_DEFAULT_BASE_URL: Mapping[str, str] = MappingProxyType(
    {
        "ollama": "http://127.0.0.1:11434",
        "openai": "https://api.openai.com/v1",
        "anthropic": "https://api.anthropic.com",
    }
)
# Origin's default upstream depends on which protocol the client spoke.
ORIGIN_BASE_URL: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "https://api.anthropic.com",
        "openai_chat": "https://api.openai.com",
        "openai_responses": "https://api.openai.com",
        "gemini": "https://generativelanguage.googleapis.com",
    }
)
_WIRE: Mapping[str, Wire] = MappingProxyType(
    {"ollama": "ollama", "openai": "openai_chat", "anthropic": "anthropic", "origin": "client"}
)


@dataclass(frozen=True)
class Backend:
    """One resolved backend. `_api_key` is private: read it only through `auth_headers()`."""

    name: str
    kind: Kind
    side: str
    base_url: str | None
    wire: Wire
    model: str | None = None
    timeout: Timeout = field(default_factory=Timeout)
    fallback: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    api_key_env: str | None = None
    max_tokens: int | None = None
    proxy: str | None = None
    ca_file: str | None = None
    breaker: BreakerSettings = field(default_factory=BreakerSettings)
    # A dataclass, not a values.Frozen: the key must stay out of repr() and comparisons.
    _api_key: str | None = field(default=None, repr=False, compare=False)

    @property
    def has_key(self) -> bool:
        return bool(self._api_key)

    def auth_headers(self) -> dict[str, str]:
        """The headers that carry this backend's own key (empty for origin and keyless servers)."""
        if not self._api_key:
            return {}
        if self.kind == "anthropic":
            return {"x-api-key": self._api_key}
        return {"authorization": f"Bearer {self._api_key}"}

    @cached_property
    def own_headers(self) -> tuple[tuple[str, str], ...]:
        """The headers this backend adds to every request: its configured ones (names lower-case),
        then the one that carries its key (`auth_headers`)."""
        return (*((k.lower(), v) for k, v in self.headers.items()), *self.auth_headers().items())

    @cached_property
    def _base(self) -> tuple[str, bool] | None:
        """The configured base URL without its trailing `/`, and whether it ends in `/v1` (None: none
        configured, an origin's, which depends on the client's protocol)."""
        if not self.base_url:
            return None
        base = self.base_url.rstrip("/")
        return base, base.endswith("/v1")

    def url(self, client_protocol: str, path: str) -> str:
        """The absolute upstream URL for `path` ("/v1/messages", "/chat/completions", "/api/chat" ...)."""
        configured = self._base
        if configured is None:
            # ORIGIN_BASE_URL's are hosts (no trailing `/`, no `/v1`).
            return ORIGIN_BASE_URL.get(client_protocol, "https://api.anthropic.com") + path
        base, v1 = configured
        # An openai-compatible base URL conventionally ends in /v1 and the path is relative to it;
        # for anthropic and origin the base is the host and the path carries /v1.
        if v1 and path.startswith("/v1/"):
            path = path[3:]
        return base + path

    def describe(self) -> dict[str, object]:
        """What may be shown or logged: never the key, only the name of its variable."""
        return {
            "name": self.name,
            "type": self.kind,
            "side": self.side,
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "api_key_set": self.has_key,
            "fallback": self.fallback,
        }


def _resolve(bs: BackendSettings, environ: Mapping[str, str]) -> Backend:
    if bs.type not in KINDS:
        raise ConfigError(
            f"unknown backend type {bs.type!r}; expected one of {', '.join(KINDS)}", key=f"backends.{bs.name}"
        )
    if bs.side not in ("local", "cloud"):
        raise ConfigError(f"side must be local or cloud, not {bs.side!r}", key=f"backends.{bs.name}.side")
    kind: Kind = bs.type  # type: ignore[assignment]
    key = environ.get(bs.api_key_env) if bs.api_key_env and kind != "origin" else None
    return Backend(
        name=bs.name,
        kind=kind,
        side=bs.side,
        base_url=bs.base_url or _DEFAULT_BASE_URL.get(kind),
        wire=_WIRE[kind],
        model=bs.model,
        timeout=bs.timeout,
        fallback=bs.fallback,
        # As every header value Glider handles: the wire's bytes (here UTF-8) decoded as latin-1.
        headers=MappingProxyType({k: v.encode().decode("latin-1") for k, v in bs.headers.items()}),
        api_key_env=bs.api_key_env,
        max_tokens=bs.max_tokens,
        proxy=bs.proxy,
        ca_file=bs.ca_file,
        breaker=bs.breaker,
        _api_key=key or None,
    )


def model_for(
    backend: Backend,
    decided_for: str | None,
    decision_model: str | None,
    decision_adapter: str | None,
    client_model: str,
) -> str:
    """The model name a request to `backend` carries.

    `decided_for` is the backend the decision named. For that backend: the decision's adapter (a vLLM
    LoRA adapter is addressed by its name), else the decision's model, else the backend's own model.
    For any other backend (a fallback) the decision's choice means nothing (a local model's name sent
    to the cloud is a 404): its own model. Without one, the client's: `origin` and a cloud backend
    with no `model` serve what the client asked for.
    """
    if backend.name == decided_for:
        return decision_adapter or decision_model or backend.model or client_model
    return backend.model or client_model


class BackendRegistry:
    """The configured backends by name, plus the defaults per side and the fallback rule."""

    def __init__(
        self,
        backends: Mapping[str, BackendSettings],
        environ: Mapping[str, str],
        *,
        defaults: Mapping[str, str | None] | None = None,
    ) -> None:
        self._by_name: dict[str, Backend] = {name: _resolve(bs, environ) for name, bs in backends.items()}
        self._defaults = {side: name for side, name in (defaults or {}).items() if name}
        for side, name in self._defaults.items():
            if name not in self._by_name:
                raise ConfigError(f"default {side} backend {name!r} is not configured", key="backends")
        for b in self._by_name.values():
            if b.fallback and b.fallback != "none" and b.fallback not in self._by_name:
                raise ConfigError(
                    f"fallback names unknown backend {b.fallback!r}", key=f"backends.{b.name}.fallback"
                )

    @classmethod
    def from_settings(
        cls, settings: Settings, environ: Mapping[str, str], defaults: Mapping[str, str | None] | None = None
    ) -> BackendRegistry:
        return cls(settings.backends, environ, defaults=defaults)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def get(self, name: str) -> Backend:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name) or "none configured"
            raise ConfigError(f"unknown backend {name!r} (known: {known})", key="backends") from None

    def default_for(self, side: str) -> Backend | None:
        """The configured default for `side`, else the first backend serving it (config order), or None."""
        if side in self._defaults:
            return self._by_name[self._defaults[side]]
        for b in self._by_name.values():
            if b.side == side:
                return b
        return None

    def choose(self, side: str, name: str | None) -> Backend:
        """The backend a decision names, else the default for its side."""
        if name:
            b = self._by_name.get(name)
            return b if b is not None else self.get(name)  # get: the error naming the known ones
        b = self.default_for(side)
        if b is None:
            raise ConfigError(f"no backend serves the {side} side", key="backends")
        return b

    def fallback_for(self, backend: Backend, rule_fallback: str | None = None) -> Backend | None:
        """Where a failed request goes next: the rule's `fallback`, then the backend's, then the default.

        "none" at either level disables fallback. The default is local -> the default cloud backend.
        """
        explicit = rule_fallback if rule_fallback is not None else backend.fallback
        if explicit == "none":
            return None
        if explicit:
            target = self.get(explicit)
            return None if target.name == backend.name else target
        if backend.side == "local":
            return self.default_for("cloud")
        return None

    def describe(self) -> list[dict[str, object]]:
        return [b.describe() for b in self._by_name.values()]

    def backends(self) -> tuple[Backend, ...]:
        return tuple(self._by_name.values())
