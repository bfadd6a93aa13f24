"""The router's JSON API: the same core calls as `glider route explain` and `glider lint`.

    POST /api/router/explain   {"protocol"?: "anthropic"|"openai_chat"|"openai_responses",
                                "request"?: {...client request body...}, "headers"?: {...}}
                               (without "request" the whole body is the client request; without
                               "protocol" it is guessed from the body; "all": true also runs the
                               rules below the winner, as `route explain --all`)
                               -> RouteDecision.to_dict()
    GET  /api/router/lint      -> {"ok", "source", "errors": [...], "warnings": [...]} for the config
                               in force (`lint.LintReport.to_dict()`, what `glider lint --json`
                               prints), plus "disk": the same for the file on disk now, "differs":
                               whether the files on disk are not the ones in force, and "reload": the
                               last reload's outcome (its errors when it was rejected), or null
    POST /api/router/reload    -> reload now (`server.reload`): 200 with the outcome when the new
                               config is in force, 422 with its errors when it was rejected
    POST /api/playground/parse {"source": "<starlark>", "filename"?: "rule.star"}
                               -> {"ok": bool, "errors": [{"line", "column", "message"}]}

Malformed input is a 400 (or 422 for a well-formed body with the wrong fields) in OpenAI error shape,
never a 500.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from glider_cli.errors import GliderError, RequestError
from glider_cli.server.http_json import error_response, json_object, json_response

if TYPE_CHECKING:
    from glider_cli.server.reload import LiveConfig, Reloader


def router_routes(live: LiveConfig, reloader: Reloader | None = None) -> list[BaseRoute]:
    async def explain(request: Request) -> Response:
        from glider_cli.protocol.parse import PROTOCOLS, guess_protocol, parse_request

        try:
            obj = await json_object(request)
            inner = obj.get("request", obj)
            if not isinstance(inner, dict):
                raise RequestError("'request' must be a JSON object", status=422)
            protocol = obj.get("protocol") or guess_protocol(inner)
            if protocol not in PROTOCOLS:
                raise RequestError(
                    f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}", status=422
                )
            raw_headers = obj.get("headers")
            headers = raw_headers if isinstance(raw_headers, dict) else {}
            chat = parse_request(protocol, inner, {str(k): str(v) for k, v in headers.items()})
            every = obj.get("all") is True
            decision = live.router.decide(chat, every=True) if every else live.router.decide(chat)
        except RequestError as exc:
            return error_response("openai_chat", exc.status, exc.message)
        except GliderError as exc:
            return error_response("openai_chat", 422, exc.message)
        return json_response(decision.to_dict())

    async def lint(request: Request) -> Response:
        from glider_cli.app.lint import lint as run_lint
        from glider_cli.app.lint import lint_on_disk

        # Lint reads script files and waits on the sandbox worker for script checks: off the event loop.
        config = live.config
        report = await asyncio.to_thread(run_lint, config)
        disk = await asyncio.to_thread(lint_on_disk, config)
        return json_response(
            {
                "ok": report.ok,
                **report.to_dict(),
                "disk": {"ok": disk.ok, **disk.to_dict()},
                "differs": await asyncio.to_thread(live.differs),
                "reload": live.last.to_dict() if live.last is not None else None,
            }
        )

    async def reload(request: Request) -> Response:
        if reloader is None:
            return error_response("openai_chat", 404, "this server does not reload its config")
        outcome = await reloader.reload("api")
        return json_response(outcome.to_dict(), status=200 if outcome.ok else 422)

    async def playground(request: Request) -> Response:
        from glider_cli.router.scripts import check_source

        try:
            obj = await json_object(request)
            source = obj.get("source")
            filename = obj.get("filename") or "playground.star"
            if not isinstance(source, str) or not isinstance(filename, str):
                raise RequestError("'source' (and 'filename') must be strings", status=422)
        except RequestError as exc:
            return error_response("openai_chat", exc.status, exc.message)
        # Parse and load happen in the checking sandbox (bounded in time and memory), and the wait
        # for it happens off the event loop.
        errors = [e.to_dict() for e in await asyncio.to_thread(check_source, source, filename)]
        return json_response({"ok": not errors, "errors": errors})

    return [
        Route("/api/router/explain", explain, methods=["POST"]),
        Route("/api/router/lint", lint, methods=["GET"]),
        Route("/api/router/reload", reload, methods=["POST"]),
        Route("/api/playground/parse", playground, methods=["POST"]),
    ]
