"""JSON in and out of Glider's own Starlette routes (info, router API, context API).

The model endpoints do not use these: they are raw ASGI (`server.asgi`), off Starlette's Request and
Response objects. Contract:
- `json_response(value, status=200)`: the value as compact JSON (orjson); anything that is not JSON
  by nature (a Path, a datetime) is written as its `str()`.
- `error_response(protocol, status, message)`: the error body of `protocol` (`protocol.error_bodies`) with
  that status.
- `json_object(request, *, empty=False)`: the request body as a JSON object, else RequestError
  (status 400) saying what it was instead. With `empty=True` an empty body is `{}`.
- `EXCEPTION_HANDLERS`: the app's Starlette `exception_handlers` (`server.app`), so a route raises and
  never answers its own errors: `BadParam` (a bad query parameter or body field) is a 400
  `{"error": {"message", "param"?, "position"?}}`, a `RequestError` its status with
  `{"error": {"message"}}`, a `QueryError` a 400 (with its `position`), a `StoreError` a 500.
  A route that answers in a client protocol's shape (the router API) catches its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from glider_cli.errors import QueryError, RequestError, StoreError
from glider_cli.protocol.error_bodies import error_bytes

JSON = "application/json"


def json_response(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value, default=str), status_code=status, media_type=JSON)


def error_response(protocol: str, status: int, message: str) -> Response:
    return Response(error_bytes(protocol, status, message), status_code=status, media_type=JSON)


async def json_object(request: Request, *, empty: bool = False) -> dict[str, Any]:
    raw = await request.body()
    if empty and not raw:
        return {}
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RequestError(f"the body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RequestError("the body must be a JSON object")
    return obj


class BadParam(Exception):
    """A bad query parameter or body field of one of Glider's own JSON routes (a 400)."""

    def __init__(self, message: str, param: str | None = None, position: int | None = None) -> None:
        super().__init__(message)
        self.body: dict[str, Any] = {"message": message}
        if param is not None:
            self.body["param"] = param
        if position is not None:
            self.body["position"] = position


def error_json(status: int, body: dict[str, Any]) -> Response:
    return json_response({"error": body}, status)


async def _bad_param(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadParam)
    return error_json(400, exc.body)


async def _request_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)  # the body is not a JSON object
    return error_json(exc.status, {"message": exc.message})


async def _query_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, QueryError)
    body: dict[str, Any] = {"message": exc.message}
    if exc.position is not None:
        body["position"] = exc.position
    return error_json(400, body)


async def _store_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StoreError)
    return error_json(500, {"message": exc.message})


Handler = Callable[[Request, Exception], Awaitable[Response]]
EXCEPTION_HANDLERS: Mapping[Any, Handler] = {
    BadParam: _bad_param,
    RequestError: _request_error,
    QueryError: _query_error,
    StoreError: _store_error,
}
