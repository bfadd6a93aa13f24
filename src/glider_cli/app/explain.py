"""`glider route explain` as a core function: build a request, load the config, decide.

`explain(ExplainInput)` returns the RouteDecision the proxy would make (the same record it logs as
a `RouteDecided` event) and the config it came from. A MESSAGE becomes a one-message Anthropic
request; `--request` takes a whole body in any of the three shapes (guessed unless `protocol` is
given), or the raw bytes of a Cursor request (a BidiAppend body or a run request's
AgentClientMessage; a file that is not JSON text, or `--protocol cursor`), classified by field;
`tools` adds a tool to the request and `tokens` replaces the token estimate; `client` (`--client
claude-code|codex|gemini`) sends the MESSAGE as that client does, with its system prompt and tools
(`app.explain_client`), and `differs` says where the answer is another: with `--client`, for the
message alone; for a bare MESSAGE, for each client that would send it; `every`
(`--all`) also runs the rules below the winner and says which would have matched too (the decision
is the same). Reading the request file is the only I/O. A strategy that operates
(`orchestration.<strategy>.enabled`) adds its plan (`router.plan`: members, judge, budgets) to
the record under `plan`, as `serve` logs it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glider_cli.domain import ChatRequest, RouteDecision
from glider_cli.errors import RequestError
from glider_cli.values import Frozen, init_fields, replace

_PROBE_TOOL = {
    "name": "Bash",
    "description": "Run a shell command (added by route explain --tools).",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}


class ExplainInput(Frozen):
    message: str | None
    request_file: str | None
    protocol: str | None
    tools: bool
    tokens: int | None
    config: str | None
    profile: str | None
    every: bool
    client: str | None

    def __init__(
        self,
        message: str | None = None,
        request_file: str | None = None,
        protocol: str | None = None,
        tools: bool = False,
        tokens: int | None = None,
        config: str | None = None,
        profile: str | None = None,
        every: bool = False,
        client: str | None = None,
    ) -> None:
        init_fields(self, message, request_file, protocol, tools, tokens, config, profile, every, client)


class LoadedRequest(Frozen):
    """A request read from a file: its body, plus the protocol and headers a capture records."""

    body: dict[str, Any]
    protocol: str | None
    headers: dict[str, str] | None

    def __init__(
        self, body: dict[str, Any], protocol: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        init_fields(self, body, protocol, headers)


def _from_capture(data: dict[str, Any], path: str) -> LoadedRequest:
    """The first request with a JSON body in a capture (`{"requests": [{method, path, headers, body}]}`)."""
    from glider_cli.protocol.parse import protocol_for_path

    for req in data["requests"]:
        if isinstance(req, dict) and isinstance(req.get("body"), dict):
            raw = req.get("headers") or {}
            pairs = raw.items() if isinstance(raw, dict) else raw
            headers = {str(k): str(v) for k, v in pairs}
            route = req.get("path")
            return LoadedRequest(
                req["body"], protocol_for_path(route) if isinstance(route, str) else None, headers
            )
    raise RequestError(f"{path} is a capture without any request that has a JSON body")


def read_request(path: str) -> LoadedRequest:
    """A request body from a JSON file (`-` is stdin): a bare body, `{"body": ...}`, or a capture."""
    import sys

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RequestError(f"cannot read request file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RequestError(f"request file {path} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RequestError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RequestError(f"{path} must hold a JSON object (a request body)")
    if isinstance(data.get("requests"), list) and "messages" not in data and "input" not in data:
        return _from_capture(data, path)
    if isinstance(data.get("body"), dict) and "messages" not in data and "input" not in data:
        return LoadedRequest(data["body"])
    return LoadedRequest(data)


def _cursor_request(path: str) -> tuple[ChatRequest, dict[str, Any]]:
    """A Cursor request from its raw bytes: a BidiAppend body (gzip or not) or one AgentClientMessage
    (a run request), classified by field as the Cursor proxy does (needs `glider[cursor]`)."""
    import gzip
    import sys

    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise RequestError(f"cannot read request file {path}: {exc.strerror or exc}") from None
    try:
        from glider_cli.protocol.cursor.chat import to_chat
        from glider_cli.protocol.cursor.classify import classify, decode_append
    except ImportError:
        raise RequestError(
            "reading a Cursor request needs the cursor extra: pip install 'glider-cli[cursor]'"
        ) from None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    app = decode_append(raw)
    info = classify(app.message if app is not None else raw)
    if info.kind in ("passthrough", "run_traffic"):
        raise RequestError(f"{path}: not a Cursor request Glider routes ({info.why}); it passes through")
    what = {"kind": info.kind, "why": info.why}
    return to_chat(info, info.conversation_id), what


def build_request(inp: ExplainInput) -> ChatRequest:
    return _build(inp)[0]


def _build(inp: ExplainInput) -> tuple[ChatRequest, dict[str, Any], str]:
    """The request, and the body and protocol it was read from (for the local pack)."""
    from glider_cli.protocol.parse import guess_protocol, parse_request

    if inp.message is not None and inp.request_file is not None:
        raise RequestError("give a MESSAGE or --request FILE, not both")
    if inp.request_file is not None and (inp.protocol == "cursor" or _binary(inp.request_file)):
        request, what = _cursor_request(inp.request_file)
        return request, {"cursor": what}, "cursor"
    if inp.client is not None:
        from glider_cli.app.explain_client import client_request

        if inp.message is None or inp.request_file is not None:
            raise RequestError("--client explains a MESSAGE as that client sends it: give a MESSAGE")
        loaded = LoadedRequest(*client_request(inp.client, inp.message))
    elif inp.request_file is not None:
        loaded = read_request(inp.request_file)
    elif inp.message is not None:
        loaded = LoadedRequest(
            {"model": "glider-explain", "messages": [{"role": "user", "content": inp.message}]}
        )
    else:
        raise RequestError("give a MESSAGE to explain, or --request FILE with a request body")
    body = loaded.body
    protocol = inp.protocol or loaded.protocol or guess_protocol(body)
    if inp.tools:
        body = dict(body)
        tool: dict[str, Any] = _PROBE_TOOL
        if protocol == "openai_chat":
            tool = {
                "type": "function",
                "function": {"name": "Bash", "parameters": _PROBE_TOOL["input_schema"]},
            }
        elif protocol == "openai_responses":
            tool = {"type": "function", "name": "Bash", "parameters": _PROBE_TOOL["input_schema"]}
        body["tools"] = [*(body.get("tools") or []), tool]
    request = parse_request(protocol, body, loaded.headers)
    if inp.tokens is not None:
        if inp.tokens < 0:
            raise RequestError("--tokens must not be negative")
        request = replace(request, estimated_tokens=inp.tokens)
    return request, dict(body), protocol


def _binary(path: str) -> bool:
    """A file that is not UTF-8 JSON text (Cursor's protobuf bytes); stdin is only read as Cursor's
    with `--protocol cursor`."""
    if path == "-":
        return False
    try:
        head = Path(path).read_bytes()[:4096]
    except OSError:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return not text.lstrip().startswith("{")


class Explained(Frozen):
    """A decision and the config that made it (`source`: a path or `<bundled:NAME>`); for a local
    decision, the pack its backend would receive (`turns.pack`'s report: sizes and parts, with no
    episodes: offline there is no session) and what is known of the backend's capabilities (the
    config's `context_window` / `tools`; offline, nothing is probed, so the rest is unknown), with,
    when the window is known, the output the request gets (`output`: `backends.output_budget`, the
    client's `max_tokens` cut to what the window leaves after the pack, or the gate's refusal)."""

    decision: RouteDecision
    source: str
    pack: Mapping[str, Any] | None
    capabilities: Mapping[str, Any] | None
    differs: tuple[Mapping[str, Any], ...]

    def __init__(
        self,
        decision: RouteDecision,
        source: str,
        pack: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        differs: tuple[Mapping[str, Any], ...] = (),
    ) -> None:
        init_fields(self, decision, source, pack, capabilities, differs)

    def to_dict(self) -> dict[str, Any]:
        d = self.decision.to_dict()
        if self.differs:
            d["differs"] = [dict(x) for x in self.differs]
        if self.pack is not None:
            d["pack"] = dict(self.pack)
        if self.capabilities is not None:
            d["capabilities"] = dict(self.capabilities)
        return d


def explain(inp: ExplainInput, *, environ: Mapping[str, str] | None = None) -> Explained:
    from glider_cli.config.load import load_config
    from glider_cli.router.decide import Router
    from glider_cli.router.plan import plan_for

    # No script worker is started here: the bundled profiles' scripts run in-process, and a user's
    # script starts the worker when the router loads it (issue 29).
    request, body, protocol = _build(inp)
    config = load_config(config=inp.config, profile=inp.profile, environ=environ)
    router = Router(config)
    decision = router.decide(request, every=inp.every)
    differs = _differs(inp, router, decision)
    if protocol == "cursor":  # what the proxy would log: the client and what the Cursor message was
        decision = replace(decision, extra={**decision.extra, "client": "cursor", "cursor": body["cursor"]})
    sides = {name: b.side for name, b in config.settings.backends.items()}
    defaults = {side: config.default_backend(side) for side in ("local", "cloud")}
    plan = plan_for(decision, config.settings.orchestration, sides, defaults)
    if plan is not None:
        decision = replace(decision, plan=plan.to_dict())
    bs = config.settings.backends.get(decision.backend or "")
    if decision.target != "local" or bs is None:
        return Explained(decision, config.source, differs=differs)
    caps: dict[str, Any] = {"backend": bs.name, "model": decision.model or bs.model}
    caps.update(context_window=bs.context_window, tools=bs.tools, source="config")
    if bs.context_window is None and bs.tools is None:
        caps["source"] = "not probed offline; `glider doctor` asks the server"
    packed = None
    from glider_cli.turns.pack import PACKABLE, pack

    if protocol in PACKABLE:
        packed = pack(protocol, body, config.settings.transform, tools=bs.tools is not False).report.to_dict()
    if bs.context_window is not None:  # the output the request gets, as `glider serve`'s gate gives it
        from glider_cli.backends.output_budget import output_budget

        tokens = packed["tokens_after"] if packed is not None else request.estimated_tokens
        what = f"pack {tokens:,} tokens" if packed is not None else f"request {tokens:,} tokens"
        budget = output_budget(bs.context_window, tokens, request.max_tokens, bs.max_tokens, what=what)
        caps["output"] = budget.to_dict()
    return Explained(decision, config.source, packed, caps, differs)


def _differs(inp: ExplainInput, router: Any, decision: RouteDecision) -> tuple[dict[str, Any], ...]:
    """Where the same MESSAGE is decided otherwise: with `--client`, the message alone (`as`:
    "message", no tools); for a bare MESSAGE, each client that sends it with its tools (`as`: the
    client). Each: {as, rule, target, backend, tools, tokens}. Nothing for `--request` or `--tools`."""
    from glider_cli.app.explain_client import CLIENTS

    if inp.message is None or inp.request_file is not None or inp.tools:
        return ()
    views = ["message"] if inp.client is not None else list(CLIENTS)
    out = []
    for view in views:
        other = replace(inp, client=None if view == "message" else view, tokens=None, every=False)
        req = _build(other)[0]
        d = router.decide(req)
        if (d.rule, d.target, d.backend) != (decision.rule, decision.target, decision.backend):
            out.append(
                {
                    "as": view,
                    "rule": d.rule,
                    "target": d.target,
                    "backend": d.backend,
                    "tools": len(req.tool_names),
                    "tokens": req.estimated_tokens,
                }
            )
    return tuple(out)
