"""The summary sources compaction can use: `origin` (an agent CLI headless), `cloud` and `local` backends.

`sources_for(...)` maps each source name to a `Summarizer` (prompt -> text) or None when that source has
no configuration (compaction then skips it):
- `origin`: the front CLI of the session (the most frequent `source_cli` of the entries, mapped to a
  vendor: claude-code -> claude, codex -> codex, ...) when its command is on PATH. It runs headless in an
  empty private directory under `$GLIDER_HOME/run` through the same runner as a delegate, with the
  entries in its context file; its subscription pays, no API credits.
- `cloud` / `local`: the first backend of that side with a usable type and a `base_url` (and, when it
  names `api_key_env`, with that variable set in the passed environ). The call is made as every model
  call is: the backend resolved by `backends.registry` (URL, key), its headers by
  `backends.headers.upstream_headers` (the key only ever in a header), a one-turn Anthropic request
  translated to the backend's wire and its reply read back by `protocol.translate` (anthropic
  `POST /v1/messages`, openai `POST /v1/chat/completions`, ollama `POST /api/chat`). The request goes
  through the injectable `post` seam (default: a small sync httpx call with `trust_env=False`, so a
  `*_PROXY` variable cannot loop it back into glider): compaction runs off the event loop.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from glider_cli.backends.headers import upstream_headers
from glider_cli.backends.registry import Backend, BackendRegistry
from glider_cli.config.settings import Settings
from glider_cli.delegate import runner
from glider_cli.delegate.agents import ADAPTERS
from glider_cli.delegate.compaction import Summarizer
from glider_cli.paths import Paths
from glider_cli.protocol import translate

Post = Callable[[str, Mapping[str, str], Mapping[str, Any], float], Any]
MAX_SUMMARY_TOKENS = 1024
ORIGIN_TIMEOUT = 180.0

_SIDE_TYPES = {"cloud": ("anthropic", "openai"), "local": ("ollama", "openai")}


def httpx_post(url: str, headers: Mapping[str, str], body: Mapping[str, Any], timeout: float) -> Any:
    import httpx

    with httpx.Client(trust_env=False, timeout=httpx.Timeout(timeout, connect=5.0)) as client:
        resp = client.post(url, headers=dict(headers), json=dict(body))
        resp.raise_for_status()
        return resp.json()


def vendor_for_cli(source_cli: str) -> str | None:
    """The delegate vendor that is the same product as a front CLI name (`claude-code` -> `claude`)."""
    s = source_cli.lower()
    for key, vendor in (
        ("claude", "claude"),
        ("codex", "codex"),
        ("cursor", "cursor-agent"),
        ("agy", "agy"),
        ("antigravity", "agy"),
    ):
        if key in s:
            return vendor
    return None


def _one_turn(model: str, prompt: str) -> dict[str, Any]:
    """One user turn in Anthropic's Messages shape, capped at MAX_SUMMARY_TOKENS."""
    return {
        "model": model,
        "max_tokens": MAX_SUMMARY_TOKENS,
        "messages": [{"role": "user", "content": prompt}],
    }


def backend_summarizer(backend: Backend, post: Post) -> Summarizer | None:
    """A summarizer over `backend` (resolved by `backends.registry`), or None when it cannot be one."""
    if backend.kind == "origin" or not backend.base_url or not backend.model:
        return None
    if backend.api_key_env and not backend.has_key:
        return None
    model, timeout = backend.model, backend.timeout.read
    url = backend.url("anthropic", translate.upstream_path(backend.wire))
    headers = upstream_headers((), backend, passthrough=False)

    def summarize(prompt: str) -> str:
        body = translate.request_to(
            backend.wire,
            "anthropic",
            _one_turn(model, prompt),
            model=model,
            max_tokens_cap=backend.max_tokens,
        )
        data = post(url, headers, body, timeout)
        reply = translate.response_to("anthropic", backend.wire, data, model=model)
        return "".join(b.get("text", "") for b in reply.get("content", []) if isinstance(b, dict))

    return summarize


def origin_summarizer(
    settings: Settings, paths: Paths, environ: Mapping[str, str], origin_cli: str
) -> Summarizer | None:
    vendor = vendor_for_cli(origin_cli)
    if vendor is None:
        return None
    adapter = ADAPTERS[vendor]
    spec = settings.delegate.get(vendor)
    if shutil.which(adapter.command(spec), path=environ.get("PATH")) is None:
        return None
    timeout = min(spec.timeout, ORIGIN_TIMEOUT) if spec else ORIGIN_TIMEOUT

    def origin(prompt: str) -> str:
        paths.run.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = Path(tempfile.mkdtemp(prefix="summary-", dir=paths.run))
        try:
            res = runner.run(
                adapter,
                spec,
                "Follow the summary instructions in your context file and answer with the summary only.",
                scratch,
                prompt,
                paths.run,
                timeout=timeout,
                environ=environ,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if not res.ok:
            raise RuntimeError(f"{vendor}: {res.text[:200]}")
        return res.text

    return origin


def sources_for(
    settings: Settings, paths: Paths, environ: Mapping[str, str], origin_cli: str, *, post: Post = httpx_post
) -> dict[str, Summarizer | None]:
    out: dict[str, Summarizer | None] = {"origin": origin_summarizer(settings, paths, environ, origin_cli)}
    registry = BackendRegistry.from_settings(settings, environ)
    for side, types in _SIDE_TYPES.items():
        out[side] = None
        for b in settings.backends.values():
            # A base_url of the config's own: a backend left to its kind's default is no summary source.
            if b.side == side and b.type in types and b.base_url:
                fn = backend_summarizer(registry.get(b.name), post)
                if fn is not None:
                    out[side] = fn
                    break
    return out
