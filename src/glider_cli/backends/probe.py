"""What a backend can take: reachable or not (and why), the models it serves, its window, tools.

`probe(backend, client)` asks the server itself, where it says so:
- Ollama: `GET /api/tags` (the pulled models) and `POST /api/show` for the backend's model (its
  `<arch>.context_length` and `capabilities`, "tools" among them); a model that is not pulled is
  reported as such (Ollama answers 404).
- OpenAI-compatible servers (vLLM, llama.cpp, LM Studio): `GET <base>/models` (the served ids; vLLM
  adds `max_model_len`), then llama.cpp's own `GET /props` (`n_ctx`) when the first gave no window.
  When the backend's model is not among the listed ids, the server is asked who it is (`GET
  /openapi.json`): llama-cpp-python's server names itself there (`info.title` "🦙 llama.cpp Python
  API"), and it answers every model name with the model it loaded (an unknown name falls back to
  its default alias), so `any_model` is set and `serves()` is true for any name. Any other server
  (vLLM, the fakes, an unknown one) is taken at its list: vLLM answers an unlisted name with 404.
  The models' `owned_by` names the server, and with it the structured-output dialect it takes
  (`structured`, see `protocol.structured`): llama-cpp-python ("me") `json_object_schema`, vLLM and
  llama.cpp's server `json_schema`; another server: unknown (None), sent the OpenAI form.
- Cloud backends (anthropic, openai on a public host, origin) are not probed: their windows are far
  beyond any pack, they call tools, and a probe would spend a request of the user's quota.
`merge(probed, settings)` lays the config's `context_window` / `tools` over what was probed (the
config wins: a user who runs Ollama with a smaller `num_ctx` says so there). A value neither gives
is None: unknown, never guessed. `describe_error` names the real cause of a failed connection
(refused, DNS name not resolved, TLS verification failed, timeout) for `doctor`, `/healthz` and the
error a client gets when every attempt failed.

The probe speaks HTTP with aiohttp, which `glider serve` has loaded already for its upstream calls
(httpx here cost ~50 ms of every serve start-up, for a few requests at start; issue 29).
"""

from __future__ import annotations

import errno
import json
import socket
import ssl
import sys
import time
from typing import TYPE_CHECKING, Any

from glider_cli.backends.registry import Backend
from glider_cli.values import Frozen

if TYPE_CHECKING:
    import aiohttp

__all__ = ["Capability", "describe_error", "is_loopback", "merge", "probe", "probe_all"]

_LOOPBACK = ("127.", "localhost", "[::1]", "::1")
# What llama-cpp-python's FastAPI app calls itself in its OpenAPI document (llama_cpp/server/app.py).
_LLAMA_CPP_PYTHON_TITLE = "🦙 llama.cpp Python API"


class Capability(Frozen):
    """A backend's capabilities as last probed (None: unknown). `any_model`: the server answers
    every model name (llama-cpp-python), so no name is "not served"."""

    backend: str
    reachable: bool | None
    error: str | None
    models: tuple[str, ...] | None
    context_window: int | None
    tools: bool | None
    source: str
    probed_at: float | None
    any_model: bool | None
    structured: str | None

    def __init__(
        self,
        backend: str,
        reachable: bool | None = None,
        error: str | None = None,
        models: tuple[str, ...] | None = None,
        context_window: int | None = None,
        tools: bool | None = None,
        source: str = "unknown",
        probed_at: float | None = None,
        any_model: bool | None = None,
        structured: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.backend = backend
        s.reachable = reachable
        s.error = error
        s.models = models
        s.context_window = context_window
        s.tools = tools
        s.source = source
        s.probed_at = probed_at
        s.any_model = any_model
        s.structured = structured

    def serves(self, model: str | None) -> bool | None:
        """Whether `model` is among the served models (None: unknown, or no model named)."""
        if model is None:
            return None
        if self.any_model:
            return True
        if self.models is None:
            return None
        for m in self.models:
            short = m.rsplit("/", 1)[-1]  # a path (llama.cpp) or an org/name id (vLLM)
            if model in (m, short) or (":" not in model and m.split(":")[0] == model):
                return True
        return False

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "reachable": self.reachable,
            "error": self.error,
            "models": list(self.models) if self.models is not None else None,
            "context_window": self.context_window,
            "tools": self.tools,
            "structured_output": self.structured,
            "source": self.source,
            "any_model": bool(self.any_model),
        }


def is_loopback(url: str | None) -> bool:
    if not url:
        return False
    host = url.split("://", 1)[-1]
    return host.startswith(_LOOPBACK)


def describe_error(exc: BaseException) -> str:
    """The real cause of a failed request, in a few words."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, socket.gaierror):
            return "DNS name not resolved"
        if isinstance(cur, ssl.SSLCertVerificationError):
            return "TLS verification failed"
        if isinstance(cur, ssl.SSLError):
            return f"TLS error ({cur.reason or cur})"
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(cur, TimeoutError) or _httpx_timeout(cur):
            return "timeout"
        cur = cur.__cause__ or cur.__context__
    text = str(exc)
    low = text.lower()
    if "name or service not known" in low or "nodename nor servname" in low or "name resolution" in low:
        return "DNS name not resolved"
    if "certificate verify failed" in low:
        return "TLS verification failed"
    if "refused" in low:
        return "connection refused"
    return text or type(exc).__name__


def _httpx_timeout(exc: BaseException) -> bool:
    """An httpx timeout (httpx is used elsewhere, by the delegate summarizers; not imported for this)."""
    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(exc, httpx.TimeoutException)


class _StatusError(Exception):
    """An HTTP error status answered to a probe request."""

    def __init__(self, status: int, path: str) -> None:
        super().__init__(f"HTTP {status} from {path}")
        self.status = status
        self.path = path


class _Reply:
    def __init__(self, status: int, path: str, body: bytes) -> None:
        self.status_code = status
        self.path = path
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)  # a ValueError when it is not JSON

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise _StatusError(self.status_code, self.path)


class _Client:
    """The few calls the probe makes, on an aiohttp session (no redirects followed, no proxy)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def _ask(self, method: str, url: str, **kw: Any) -> _Reply:
        async with self.session.request(method, url, allow_redirects=False, **kw) as r:
            return _Reply(r.status, r.url.path, await r.read())

    async def get(self, url: str, headers: dict[str, str] | None = None) -> _Reply:
        return await self._ask("GET", url, headers=headers)

    async def post(self, url: str, json: Any = None) -> _Reply:
        return await self._ask("POST", url, json=json)


def _http_errors(*more: type[BaseException]) -> tuple[type[BaseException], ...]:
    """What a failed probe request raises (aiohttp's errors, a timeout), and `more`."""
    import aiohttp

    return (aiohttp.ClientError, TimeoutError, *more)


def _host_root(base: str) -> str:
    base = base.rstrip("/")
    return base[:-3] if base.endswith("/v1") else base


async def _ollama(backend: Backend, client: _Client) -> Capability:
    base = _host_root(backend.base_url or "")
    tags = await client.get(base + "/api/tags")
    tags.raise_for_status()
    models = tuple(m.get("name", "") for m in tags.json().get("models", []) if isinstance(m, dict))
    window: int | None = None
    tools: bool | None = None
    error: str | None = None
    if backend.model:
        listed = Capability(backend.name, models=models).serves(backend.model)
        if not listed:
            error = f"model {backend.model!r} is not pulled (ollama pull {backend.model})"
        show = await client.post(base + "/api/show", json={"model": backend.model}) if listed else None
        if show is not None and show.status_code < 400:
            data = show.json()
            info = data.get("model_info") or {}
            for key, value in info.items():
                if key.endswith(".context_length") and isinstance(value, int):
                    window = value
            caps = data.get("capabilities")
            if isinstance(caps, list):
                tools = "tools" in caps
    return Capability(backend.name, error is None, error, models, window, tools, "probe", time.time())


async def _openai(backend: Backend, client: _Client) -> Capability:
    base = (backend.base_url or "").rstrip("/")
    url = base + "/models" if base.endswith("/v1") else base + "/v1/models"
    resp = await client.get(url, headers=backend.auth_headers())
    resp.raise_for_status()
    data = resp.json().get("data", [])
    models = tuple(str(m.get("id", "")) for m in data if isinstance(m, dict))
    owners = {m.get("owned_by") for m in data if isinstance(m, dict)}
    # llama-cpp-python's server lists its models as owned by "me"; vLLM's by "vllm", llama.cpp's by
    # "llamacpp": those two take the OpenAI `json_schema` response format as it is.
    structured = (
        "json_object_schema" if "me" in owners else "json_schema" if owners & {"vllm", "llamacpp"} else None
    )
    window: int | None = None
    for m in data:
        if not isinstance(m, dict):
            continue
        ours = backend.model is None or m.get("id") == backend.model or window is None
        if isinstance(m.get("max_model_len"), int) and ours:
            window = m["max_model_len"]
    if window is None:
        try:
            props = await client.get(_host_root(base) + "/props")
            if props.status_code < 400:
                body = props.json()
                gen = body.get("default_generation_settings") or {}
                n = body.get("n_ctx") or gen.get("n_ctx")
                window = n if isinstance(n, int) else None
        except _http_errors(ValueError):
            pass
    any_model = None
    if backend.model and not Capability(backend.name, models=models).serves(backend.model):
        any_model = await _answers_any_model(base, client) or None
    return Capability(
        backend.name, True, None, models, window, None, "probe", time.time(), any_model, structured
    )


async def _answers_any_model(base: str, client: _Client) -> bool:
    """Whether the server says it is llama-cpp-python (which serves every model name it is asked)."""
    try:
        resp = await client.get(_host_root(base) + "/openapi.json")
        info = resp.json().get("info") if resp.status_code < 400 else None
    except _http_errors(ValueError, AttributeError):
        return False
    return isinstance(info, dict) and info.get("title") == _LLAMA_CPP_PYTHON_TITLE


async def probe(backend: Backend, client: _Client) -> Capability:
    """Ask a local backend what it serves; cloud backends are described, not asked."""
    if backend.side != "local":
        return Capability(backend.name, None, None, None, None, True, "cloud")
    try:
        if backend.kind == "ollama":
            return await _ollama(backend, client)
        if backend.kind == "openai":
            return await _openai(backend, client)
        return Capability(backend.name, None, None, None, None, None, "not probed")
    except _StatusError as exc:
        why = f"HTTP {exc.status} from {exc.path}"
        return Capability(backend.name, False, why, source="probe", probed_at=time.time())
    except _http_errors(OSError, ValueError) as exc:
        return Capability(backend.name, False, describe_error(exc), source="probe", probed_at=time.time())


async def probe_all(backends: list[Backend], *, timeout: float = 2.0) -> dict[str, Capability]:
    """Probe every backend at once (loopback only: trust_env off, so no proxy is consulted)."""
    import asyncio

    import aiohttp

    from glider_cli import __version__

    headers = {"user-agent": f"glider/{__version__} (capability probe)"}
    # As the httpx client it replaced: `timeout` bounds each phase (connect, each read), not the whole.
    limits = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
    async with aiohttp.ClientSession(timeout=limits, trust_env=False, headers=headers) as session:
        found = await asyncio.gather(*(probe(b, _Client(session)) for b in backends))
    return {c.backend: c for c in found}


def merge(
    probed: Capability, context_window: int | None, tools: bool | None, structured: bool | None = None
) -> Capability:
    """The config's `context_window` / `tools` / `structured_output` over the probe's (the config wins;
    `structured_output: false` makes the dialect "none", true keeps the probed one)."""
    window = context_window if context_window is not None else probed.context_window
    can_tools = tools if tools is not None else probed.tools
    dialect = "none" if structured is False else probed.structured
    source = probed.source
    if context_window is not None or tools is not None or structured is not None:
        asked = probed.source not in ("unknown", "not probed", "cloud")
        source = f"{probed.source}+config" if asked else "config"
    return Capability(
        probed.backend,
        probed.reachable,
        probed.error,
        probed.models,
        window,
        can_tools,
        source,
        probed.probed_at,
        probed.any_model,
        dialect,
    )
