"""`build_call(inb, decision, backend, local, count_tokens=, fallback_from=, escalated=)`: the request
as one backend gets it (`fallback_from`, `escalated`: what the attempt replaces, on its route).

- A local backend gets the pack (`proxy.local_path`: what a local model receives), not the client's
  whole request, unless the request is a count_tokens one or already built (`Inbound.pack` false).
- The model: `model_for` (the decision's model or adapter, the backend's, the client's).
- Same wire (or `origin`): the client's body passed through (the model replaced), to the client's
  path; a Gemini passthrough keeps the client's path with the model in it. Another wire: the body
  translated (`protocol.translate`), with the backend's `max_tokens` cap and the probed window.
- A local backend with a known window gets the output that window leaves after the pack
  (`LocalPath.output`, `backends.output_budget`): the client's `max_tokens` cut to it, translated or
  passed through (Anthropic `max_tokens`, OpenAI Chat `max_tokens` / `max_completion_tokens`); a body
  built elsewhere (`Inbound.pack` false: a Cursor loop step, a strategy's follow-up) keeps the
  backend's `max_tokens` cap alone.
- Structured output in the local server's own dialect (`protocol.structured`).
Pure but for the clock `Call` reads when made: no I/O.
"""

from __future__ import annotations

from typing import Any

import orjson

from glider_cli.backends.headers import upstream_headers
from glider_cli.backends.registry import Backend, model_for
from glider_cli.domain import RouteDecision
from glider_cli.protocol import gemini_request, structured
from glider_cli.proxy.calls import CLIENT_PATH, Call, Inbound
from glider_cli.proxy.local_path import LocalPath


def build_call(
    inb: Inbound,
    decision: RouteDecision,
    backend: Backend,
    local: LocalPath | None,
    *,
    count_tokens: bool = False,
    fallback_from: str | None = None,
    escalated: str | None = None,
) -> Call:
    model = model_for(backend, decision.backend, decision.model, decision.adapter, inb.chat.model)
    protocol, body = inb.protocol, inb.body
    raw = inb.raw
    cap = backend.max_tokens
    if backend.side == "local" and local is not None and not count_tokens and inb.pack:
        # What a local model receives: the pack, not the client's whole request (proxy.local_path).
        tokens = inb.chat.estimated_tokens
        packed = local.packed(protocol, body, inb.chat, backend.name, inb.packs)
        if packed is not None:
            body = packed.body
            raw = orjson.dumps(body)
            tokens = packed.report.tokens_after
        # The output its window leaves after what is sent, as the gate sized it (a body built
        # elsewhere, `inb.pack` false, keeps the backend's cap alone).
        budget = local.output(backend.name, inb.chat, tokens)
        if budget is not None and budget.given is not None:
            cap = budget.given
            if backend.wire == protocol:
                cut = _cut_max_tokens(protocol, body, cap)
                if cut is not body:
                    body, raw = cut, orjson.dumps(cut)
    dialect = local.dialect(backend.name) if backend.side == "local" and local else None
    if backend.kind == "origin" or backend.wire == protocol:
        if dialect is not None and protocol == "openai_chat":
            adapted = structured.for_dialect(body, dialect)
            if adapted is not body:
                body, raw = adapted, orjson.dumps(adapted)
        if protocol == "gemini":
            path = gemini_request.with_model(inb.path, model) if model else inb.path
        else:
            if model and body.get("model") != model:
                raw = orjson.dumps({**body, "model": model})
            path = CLIENT_PATH[protocol] + ("/count_tokens" if count_tokens else "")
        url = backend.url(protocol, path) + (f"?{inb.query}" if inb.query else "")
        headers = upstream_headers(inb.headers, backend, passthrough=True, lowered=True)
        return Call(
            backend, True, url, headers, raw, model or body.get("model"), fallback_from, escalated=escalated
        )
    from glider_cli.protocol import translate  # only a translated call needs it (not imported at start)

    window = local.window(backend.name) if local is not None else None
    tb = translate.request_to(
        backend.wire,
        protocol,
        body,
        model=model or inb.chat.model,
        max_tokens_cap=cap,
        num_ctx=window,
    )
    if dialect is not None and backend.wire == "openai_chat":
        tb = structured.for_dialect(tb, dialect)
    url = backend.url(protocol, translate.upstream_path(backend.wire))
    headers = upstream_headers(inb.headers, backend, passthrough=False, lowered=True)
    return Call(
        backend, False, url, headers, orjson.dumps(tb), tb.get("model"), fallback_from, escalated=escalated
    )


# Where a client protocol's body says its output ceiling (a passthrough to a local server of its wire).
_MAX_TOKENS_KEYS = {"anthropic": ("max_tokens",), "openai_chat": ("max_tokens", "max_completion_tokens")}


def _cut_max_tokens(protocol: str, body: dict[str, Any], cap: int) -> dict[str, Any]:
    """`body` with its output ceiling cut to `cap` (the same object when nothing changes)."""
    keys = _MAX_TOKENS_KEYS.get(protocol, ())
    given = [k for k in keys if k in body]
    over = [k for k in given if not isinstance(body[k], int) or body[k] > cap]
    if not keys or (given and not over):
        return body
    return {**body, **{k: cap for k in (over or keys[:1])}}
