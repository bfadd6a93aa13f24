"""The summary sources compaction can use: `origin` (an agent CLI headless), `cloud` and `local` backends.

`sources_for(...)` maps each source name to a `Summarizer` (prompt -> text) or None when that source has
no configuration (compaction then skips it):
- `origin`: the front CLI of the session (the most frequent `source_cli` of the entries, mapped to a
  vendor: claude-code -> claude, codex -> codex, ...) when its command is on PATH. It runs headless in an
  empty private directory under `$GLIDER_HOME/run` through the same runner as a delegate, with the
  entries in its context file; its subscription pays, no API credits.
- `cloud` / `local`: the first backend of that side with a usable type and a `base_url` (and, when it
  names `api_key_env`, with that variable set in the passed environ). Anthropic backends get
  `POST /v1/messages`, openai backends `POST /v1/chat/completions`, ollama `POST /api/chat`. The
  request goes through the injectable `post` seam (default: a small sync httpx call with
  `trust_env=False`, so a `*_PROXY` variable cannot loop it back into glider). The key is only ever
  placed in the request header.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from glider_cli.config.settings import BackendSettings, Settings
from glider_cli.delegate import runner
from glider_cli.delegate.agents import ADAPTERS
from glider_cli.delegate.compaction import Summarizer
from glider_cli.paths import Paths

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


def _join(base: str, path: str) -> str:
    base = base.rstrip("/")
    if base.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    return base + path


def _one_turn(model: str, prompt: str) -> dict[str, Any]:
    """One user turn, capped at MAX_SUMMARY_TOKENS: the same body for Anthropic Messages and OpenAI Chat."""
    return {
        "model": model,
        "max_tokens": MAX_SUMMARY_TOKENS,
        "messages": [{"role": "user", "content": prompt}],
    }


def backend_summarizer(backend: BackendSettings, environ: Mapping[str, str], post: Post) -> Summarizer | None:
    if not backend.base_url or not backend.model:
        return None
    key = None
    if backend.api_key_env:
        key = environ.get(backend.api_key_env)
        if not key:
            return None
    base, model, timeout = backend.base_url, backend.model, backend.timeout.read
    headers = {k: v for k, v in backend.headers.items()}

    if backend.type == "anthropic":
        if key:
            headers["x-api-key"] = key
        headers.setdefault("anthropic-version", "2023-06-01")

        def anthropic(prompt: str) -> str:
            data = post(_join(base, "/v1/messages"), headers, _one_turn(model, prompt), timeout)
            return "".join(b.get("text", "") for b in data.get("content", []) if isinstance(b, dict))

        return anthropic
    if backend.type == "openai":
        if key:
            headers["authorization"] = f"Bearer {key}"

        def openai(prompt: str) -> str:
            data = post(_join(base, "/v1/chat/completions"), headers, _one_turn(model, prompt), timeout)
            content = data["choices"][0]["message"].get("content")
            return content if isinstance(content, str) else ""

        return openai
    if backend.type == "ollama":

        def ollama(prompt: str) -> str:
            body = {"model": model, "stream": False, "messages": [{"role": "user", "content": prompt}]}
            data = post(_join(base, "/api/chat"), headers, body, timeout)
            content = data.get("message", {}).get("content")
            return content if isinstance(content, str) else ""

        return ollama
    return None


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
    for side, types in _SIDE_TYPES.items():
        out[side] = None
        for b in settings.backends.values():
            if b.side == side and b.type in types:
                fn = backend_summarizer(b, environ, post)
                if fn is not None:
                    out[side] = fn
                    break
    return out
