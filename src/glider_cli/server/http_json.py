"""JSON in and out of Glider's own Starlette routes (info, router API, context API).

The model endpoints do not use these: they are raw ASGI (`server.asgi`), off Starlette's Request and
Response objects. Contract:
- `json_response(value, status=200)`: the value as compact JSON (orjson); anything that is not JSON
  by nature (a Path, a datetime) is written as its `str()`.
- `error_response(protocol, status, message)`: the error body of `protocol` (`protocol.errors`) with
  that status.
- `json_object(request, *, empty=False)`: the request body as a JSON object, else RequestError
  (status 400) saying what it was instead. With `empty=True` an empty body is `{}`.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from glider_cli.errors import RequestError
from glider_cli.protocol.errors import error_bytes

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
