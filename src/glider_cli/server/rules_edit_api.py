"""The Rules page's editor: the config file it shows, changed in place (`app.rules_edit`).

    GET  /api/router/rules/file  {"path", "editable", "bundled", "profile", "text", "digest", "save_as"}
    POST /api/router/rules/edit  {"ops": [...], "save": false}  -> {"diff", "lint", "ok"}: a preview
                                 {"ops": [...], "save": true, "digest"} -> written, then reloaded:
                                 {"diff", "lint", "ok", "reload"}; 422 when lint finds errors
                                 (nothing written), 409 when the file changed since `digest` or the
                                 config in force is a bundled profile
    POST /api/router/rules/save-as {"ops": [...]} -> a new `$GLIDER_HOME/config.yaml` that `extends:`
                                 the bundled profile in force, with the ops applied; 409 when it exists

Contract:
- Only the file the config in force was loaded from is ever written, atomically (a temporary file
  beside it, then `os.replace`, its mode kept), and only its `routing.rules`; a bundled profile
  (package data) is never edited: the editor offers "save as my config" instead.
- Before anything is written the edited text is linted (`app.rules_edit.check`); a save then goes
  through the existing hot-reload path (`server.reload.Reloader.reload("dashboard")`), whose
  outcome is in the answer. `save-as` writes the new file only: the server keeps the profile it was
  started with until it is restarted without `--profile` (the answer says so).
- Every route is under `/api/`: `GLIDER_TOKEN` when it is set, and same-origin for a browser's POST
  (`server.security`). Bad input is a 400/422 `{"error": {...}}`, never a 500.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from glider_cli.errors import GliderError, RequestError
from glider_cli.server.http_json import error_response, json_object, json_response

if TYPE_CHECKING:
    from glider_cli.config.model import Config
    from glider_cli.server.reload import LiveConfig, Reloader


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _profile_rules(config: Config) -> tuple[str, ...]:
    """The rules this file does not define itself (its profile's): a `set` on one adds an override."""
    own = config.source
    return tuple(r.name for r in config.rules if r.file and r.file != own)


def _write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=".glider-rules-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rules_edit_routes(live: LiveConfig, reloader: Reloader | None, home: Path) -> list[BaseRoute]:
    save_as_path = home / "config.yaml"

    def bundled(config: Config) -> bool:
        return config.source.startswith("<")

    async def read_file(request: Request) -> Response:
        config = live.config
        if bundled(config):
            return json_response(
                {
                    "path": None,
                    "editable": False,
                    "bundled": True,
                    "profile": config.profile,
                    "text": None,
                    "digest": None,
                    "save_as": str(save_as_path),
                }
            )
        text = await asyncio.to_thread(Path(config.source).read_text, encoding="utf-8")
        return json_response(
            {
                "path": config.source,
                "editable": True,
                "bundled": False,
                "profile": config.profile,
                "text": text,
                "digest": _digest(text),
                "save_as": None,
            }
        )

    async def preview_or_save(request: Request) -> Response:
        from glider_cli.app import rules_edit

        config = live.config
        try:
            obj = await json_object(request)
            if bundled(config):
                return json_response(
                    {
                        "error": {
                            "message": f"the bundled profile {config.profile!r} is never edited; "
                            "save the changes as your own config (extends: the profile)",
                            "save_as": str(save_as_path),
                        }
                    },
                    409,
                )
            path = Path(config.source)
            text = await asyncio.to_thread(path.read_text, encoding="utf-8")
            save = obj.get("save") is True
            if save and obj.get("digest") != _digest(text):
                return error_response(
                    "openai_chat", 409, f"{path} changed since it was read: reload the page"
                )
            edited = rules_edit.edit(
                text, obj.get("ops"), profile_rules=_profile_rules(config), label=path.name
            )
            report = await asyncio.to_thread(rules_edit.check, path, edited.text)
        except RequestError as exc:
            return error_response("openai_chat", exc.status, exc.message)
        except GliderError as exc:
            return error_response("openai_chat", 422, exc.message)
        out: dict[str, Any] = {"diff": edited.diff, "lint": report.to_dict(), "ok": report.ok}
        if not save:
            return json_response(out)
        if not report.ok:
            return json_response(out, 422)
        await asyncio.to_thread(_write, path, edited.text)
        outcome = await reloader.reload("dashboard") if reloader is not None else None
        out["reload"] = outcome.to_dict() if outcome is not None else None
        return json_response(out)

    async def save_as(request: Request) -> Response:
        from glider_cli.app import rules_edit

        config = live.config
        try:
            obj = await json_object(request)
            if not bundled(config):
                raise RequestError(
                    f"the config in force is a file ({config.source}): edit it instead", status=409
                )
            if save_as_path.exists():
                raise RequestError(
                    f"{save_as_path} exists already: start glider serve with it and edit it", status=409
                )
            base = f"# Your Glider config, made on the dashboard's Rules page.\nextends: {config.profile}\n"
            edited = rules_edit.edit(
                base, obj.get("ops"), profile_rules=_profile_rules(config), label="config.yaml"
            )
            save_as_path.parent.mkdir(parents=True, exist_ok=True)
            report = await asyncio.to_thread(rules_edit.check, save_as_path, edited.text)
        except RequestError as exc:
            return error_response("openai_chat", exc.status, exc.message)
        except GliderError as exc:
            return error_response("openai_chat", 422, exc.message)
        out: dict[str, Any] = {
            "diff": edited.diff,
            "lint": report.to_dict(),
            "ok": report.ok,
            "path": str(save_as_path),
        }
        if not report.ok:
            return json_response(out, 422)
        await asyncio.to_thread(_write, save_as_path, edited.text)
        out["next"] = f"restart glider serve without --profile: it reads {save_as_path}"
        return json_response(out)

    return [
        Route("/api/router/rules/file", read_file, methods=["GET"]),
        Route("/api/router/rules/edit", preview_or_save, methods=["POST"]),
        Route("/api/router/rules/save-as", save_as, methods=["POST"]),
    ]
