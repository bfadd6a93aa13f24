"""Titles (`NameAgent`, and the legacy `AiService/NameTab`) of the Cursor proxy (part of
`cursor.runs.CursorRuns`, see its contract): each read as its own method's request (a NameTab's text
is its last human message; one with none, or a body that cannot be read, passes through unread),
placed in the conversation whose new turn typed their text, else the one seen last, and decided by
the rules with the family's stickiness; a title of a family held local is named by the local model,
answered in its method's response (`NameAgentResponse`, `NameTabResponse`), and does not reach
Cursor (a local failure falls back to Cursor unless `fallback: none`)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.forward import relay
from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.upstream import Network
from glider_cli.errors import BackendError
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.cursor.chat import title_chat
from glider_cli.protocol.cursor.classify import NAME_TAB, title_text
from glider_cli.turns.lifecycle import Opened

if TYPE_CHECKING:
    from glider_cli.cursor.runs import Run

_PROTO = [(b"content-type", b"application/proto")]


class Titles:
    network: Network
    adapter: CursorAdapter
    asked: OrderedDict[str, str]
    last_conversation: str | None

    # CursorRuns's own: the outcome of a local answer, and of one Cursor served.
    _close_local: Callable[..., None]
    _origin_end: Callable[[Run], Callable[[int, bool, float], None]]

    # ------------------------------------------------------------------ titles

    async def _title(self, req: HttpRequest) -> HttpResponse:
        text = title_text(req.path, req.body, req.header("content-encoding"))
        if text is None:
            return await relay(self.network, req)
        # The conversation whose turn typed this text, else the one seen last (it names none itself).
        session = self.asked.get(text.strip()) or self.last_conversation
        legacy = req.path.split("?", 1)[0] == NAME_TAB
        what = {"kind": "title", "why": "NameTab" if legacy else "NameAgent", "request_id": None}
        opened = self.adapter.open(title_chat(text, session), local_ok=True, what=what)
        from glider_cli.cursor.runs import Run

        run = Run("title")
        run.opened = opened
        if opened is not None and opened.decision.target == "local":
            answer = await self._local_title(run, opened, text, legacy)
            if answer is not None:
                return answer
        return await relay(self.network, req, self._origin_end(run))

    async def _local_title(self, run: Run, opened: Opened, text: str, legacy: bool) -> HttpResponse | None:
        """A title of a family held local, named by the local model; None: Cursor names it (fallback)."""
        backend = self.adapter.local_backend(opened)
        started = time.perf_counter()
        prompt = f"{TITLE_PROMPT}\n\n{text[:2000]}"
        try:
            name = "".join([p async for p in self.adapter.local_text(opened, backend, prompt, run.usage)])
        except BackendError as exc:
            fallback = self.adapter.fallback_allowed(opened, backend)
            self.adapter.failed(opened, backend, exc, fallback)
            if fallback:
                run.fallback_from = backend.name
                return None
            self._close_local(run, opened, 502, started, complete=False)
            return HttpResponse(
                503, [(b"content-type", b"application/json")], w.unary_error("unavailable", exc.message)
            )
        self._close_local(run, opened, 200, started, complete=True)
        title = _title_line(name) or "Chat"
        body = w.name_tab(title, "named by the local model") if legacy else w.name_agent(title)
        return HttpResponse(200, list(_PROTO), body)


TITLE_PROMPT = "Write a title of at most six words for this request. Answer with the title only."


def _title_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip().strip("\"'#*").strip()
        if line:
            return line[:80]
    return ""
