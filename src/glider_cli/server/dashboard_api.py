"""What the dashboard reads beyond the router, context and event APIs: the rules in force, continuity.

`dashboard_routes(config, router, paths) -> list[BaseRoute]`:

    GET /api/router/rules
        {"source", "profile", "files", "in_force", "rules": [...], "lint": LintReport.to_dict()}:
        `in_force` counts the enabled ones (`config.sequence.in_force`, as doctor and a reload do);
        `rules` is every rule of the router's sequence in priority order (the synthesized
        task_classifier and complexity rules included), each {name, priority, enabled, kind, target,
        backend, model, strategy, fallback, where, disabled_reason, shadowed}; `shadowed` is the
        lint finding that says the rule can never run, else null. Hit counts are the dashboard's to
        join from /api/events/stats.
    GET /api/continuity                      {"workspaces": [{workspace, record, entries, modified}]}
    GET /api/continuity/record?workspace=    what `glider continuity show --json` prints
    GET /api/continuity/block?workspace=&task=&vendor=claude
                                             what `glider continuity block --json` prints

The continuity calls only ever read `$GLIDER_HOME/continuity/`: `workspace` names a record, it is
not opened. A bad parameter is a 400, a record that cannot be read a 422, both `{"error": {...}}`.
"""

from __future__ import annotations

import json
import os
import re
from asyncio import to_thread as run_in_threadpool
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from glider_cli.errors import GliderError
from glider_cli.paths import Paths
from glider_cli.server.http_json import json_response

if TYPE_CHECKING:
    from glider_cli.config.model import Config
    from glider_cli.proxy import Decider

_HEADER = re.compile(rb"<!-- glider-continuity (\{.*?\}) -->")
_ENTRY = b"<!-- glider-entry "
MAX_TASK = 20_000


def _error(status: int, message: str, param: str | None = None) -> Response:
    body: dict[str, Any] = {"message": message}
    if param:
        body["param"] = param
    return json_response({"error": body}, status)


def rules_in_force(config: Config, router: Decider) -> dict[str, Any]:
    from glider_cli.app.lint import lint
    from glider_cli.router import Router

    compiled = router if isinstance(router, Router) else Router(config)
    report = lint(config)
    never = {i.rule: i.message for i in report.errors if i.rule and "can never run" in i.message}
    rules = [
        {
            "name": r.name,
            "priority": r.priority,
            "enabled": r.enabled,
            "kind": r.kind,
            "target": r.action.target,
            "backend": r.action.backend,
            "model": r.action.model,
            "strategy": r.action.strategy,
            "fallback": r.fallback,
            "where": r.where,
            "disabled_reason": None if r.enabled else r.disabled_reason,
            "shadowed": never.get(r.name),
        }
        for r in compiled.rules
    ]
    from glider_cli.config.sequence import in_force

    return {
        "source": config.source,
        "profile": config.profile,
        "files": list(config.files),
        "in_force": len(in_force(config)),
        "rules": rules,
        "lint": {"ok": report.ok, **report.to_dict()},
    }


def workspaces(paths: Paths) -> list[dict[str, Any]]:
    """The continuity records on disk, most recently changed first (read by their header line)."""
    out: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(paths.continuity))
    except FileNotFoundError:
        return out
    for entry in entries:
        if not entry.name.endswith(".md") or not entry.is_file():
            continue
        try:
            raw = Path(entry.path).read_bytes()
        except OSError:
            continue
        m = _HEADER.match(raw)
        try:
            ws = json.loads(m.group(1)).get("workspace") if m else None
        except ValueError:
            ws = None
        if not isinstance(ws, str):
            continue
        out.append(
            {
                "workspace": ws,
                "record": entry.path,
                "entries": raw.count(_ENTRY),
                "modified": entry.stat().st_mtime,
            }
        )
    out.sort(key=lambda w: -w["modified"])
    return out


def dashboard_routes(config: Config, router: Decider, paths: Paths) -> list[BaseRoute]:
    async def rules(request: Request) -> Response:
        # The rules in force: a config reload (`server.reload`) replaces `state.live`.
        live = getattr(request.app.state, "live", None)
        cfg, rt = (live.config, live.router) if live is not None else (config, router)
        return json_response(await run_in_threadpool(rules_in_force, cfg, rt))

    async def listing(request: Request) -> Response:
        return json_response({"workspaces": await run_in_threadpool(workspaces, paths)})

    def _workspace(request: Request) -> str | None:
        raw = request.query_params.get("workspace", "").strip()
        return raw if raw.startswith(("/", "~")) else None

    async def record(request: Request) -> Response:
        from glider_cli.delegate import continuity
        from glider_cli.delegate.workspace import normalise

        raw = _workspace(request)
        if raw is None:
            return _error(400, "workspace is required (an absolute path)", "workspace")

        def work() -> dict[str, Any]:
            ws = normalise(raw)
            rec = continuity.read(paths, ws)
            return {
                "workspace": str(ws),
                "record": str(continuity.record_path(paths, ws)),
                "entries": [e.to_dict() for e in rec.entries],
            }

        try:
            return json_response(await run_in_threadpool(work))
        except GliderError as exc:
            return _error(422, exc.message)

    async def block(request: Request) -> Response:
        from glider_cli.delegate import continuity, operations
        from glider_cli.delegate.workspace import normalise

        raw = _workspace(request)
        if raw is None:
            return _error(400, "workspace is required (an absolute path)", "workspace")
        task = request.query_params.get("task", "").strip()
        if not task or len(task) > MAX_TASK:
            return _error(400, f"task is required (at most {MAX_TASK} characters)", "task")
        vendor = request.query_params.get("vendor", "claude")

        def work() -> dict[str, Any]:
            ws = normalise(raw)
            rec = continuity.read(paths, ws)
            _, blk = operations.prepare_context(config.settings, vendor, task, ws, rec.entries)
            return {"workspace": str(ws), "task": task, "vendor": vendor, **blk.to_dict()}

        try:
            return json_response(await run_in_threadpool(work))
        except GliderError as exc:
            return _error(422, exc.message)

    return [
        Route("/api/router/rules", rules, methods=["GET"]),
        Route("/api/continuity", listing, methods=["GET"]),
        Route("/api/continuity/record", record, methods=["GET"]),
        Route("/api/continuity/block", block, methods=["GET"]),
    ]
