"""The dashboard's routes: four pages under `/ui/`, their static files, the token hand-over.

`ui_routes(token) -> list[BaseRoute]` (`token` is GLIDER_TOKEN or None):

    GET /ui                      307 to /ui/
    GET /ui/ | /ui/rules | /ui/sessions | /ui/context
                                 `page.html` with the page's name and title filled in (fixed strings;
                                 everything else the page shows is fetched from /api/* by its script
                                 and written with textContent, never as HTML)
    GET|HEAD /ui/static/<file>   the files of `static/` (package data), with ETag / Last-Modified

A page asked for with `?token=…`: when the server has a GLIDER_TOKEN and the value matches (constant
time), a 303 to the same page without the query and `Set-Cookie: <security.token_cookie(port)>=…;
HttpOnly; SameSite=Strict; Path=/` (the browser then authenticates /api/* with the cookie; the token
never stays in the address bar or history); a wrong value gets a 401 page. With no GLIDER_TOKEN the
query is dropped by the same redirect.

Every response here carries a strict Content-Security-Policy (scripts, styles and fetches from this
origin only, no inline script, no framing), `X-Content-Type-Options: nosniff` and
`Referrer-Policy: no-referrer`. `wants_page(request)` says whether a `GET /` comes from a browser
(`Accept` names text/html), which `create_app` then redirects here.
"""

from __future__ import annotations

import hmac
from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from glider_cli.server.security import token_cookie

PAGES = {"": "Overview", "rules": "Rules", "sessions": "Sessions", "context": "Context"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


@cache
def _shell() -> str:
    return (resources.files(__package__) / "page.html").read_text(encoding="utf-8")


def render(page: str) -> bytes:
    """The shell for one page of `PAGES` (its key: "" is the Overview)."""
    name = page or "overview"
    return _shell().replace("{{page}}", name).replace("{{title}}", PAGES[page]).encode()


def wants_page(request: Request) -> bool:
    return request.method == "GET" and "text/html" in request.headers.get("accept", "")


class _Static:
    """The static files with the dashboard's security headers; the file server is made on the first
    request (finding the package directory is I/O, and building the app does none)."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            self.app = StaticFiles(packages=[(__package__ or "glider_cli.server.ui", "static")])

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, sending)


def _secured(r: Response) -> Response:
    r.raw_headers.extend(HEADERS)
    return r


def _page_response(body: bytes, status: int = 200) -> Response:
    r = Response(body, status_code=status, media_type="text/html; charset=utf-8")
    r.headers["cache-control"] = "no-store"
    return _secured(r)


def ui_routes(token: str | None) -> list[BaseRoute]:
    secret = token.encode() if token else None

    def page(name: str) -> Route:
        async def endpoint(request: Request) -> Response:
            given = request.query_params.get("token")
            if given is None:
                return _page_response(render(name))
            clean = request.url.path
            if secret is None:
                return _secured(RedirectResponse(clean, status_code=303))
            if not hmac.compare_digest(given.encode(), secret):
                return _page_response(b"<!doctype html><title>Glider</title><p>Wrong token.</p>\n", 401)
            server = request.scope.get("server")
            r = RedirectResponse(clean, status_code=303)
            r.set_cookie(
                token_cookie(server[1] if server else None),
                given,
                httponly=True,
                samesite="strict",
                path="/",
            )
            return _secured(r)

        path = "/ui/" + name
        return Route(path, endpoint, methods=["GET"], name=f"ui-{name or 'overview'}")

    async def bare(request: Request) -> Response:
        return _secured(RedirectResponse("/ui/", status_code=307))

    routes: list[BaseRoute] = [Route("/ui", bare, methods=["GET"])]
    routes += [page(name) for name in PAGES]
    routes.append(Mount("/ui/static", app=_Static(), name="ui-static"))
    return routes
