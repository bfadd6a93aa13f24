"""Titles (`NameAgent`, and the legacy `AiService/NameTab`) of the Cursor proxy: each read as its own
method's request (a NameTab's text is its last human message; one with none, or a body that cannot be
read, passes through unread), placed in the conversation whose new turn typed their text, else the
one seen last (a title names none itself), and decided by the rules with the family's stickiness; a
title of a family held local is named by the local model, answered in its method's response
(`NameAgentResponse`, `NameTabResponse`), and does not reach Cursor (a local failure falls back to
Cursor unless `fallback: none`). Its outcome is recorded as a run's is (`cursor.run.Outcome`).

`Titles(network, adapter)`: `conversation_seen(conversation, typed)` is told of every turn the proxy
decides (`typed`: a new user turn's text); `handle(request)` answers a title request.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.forward import relay
from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.run import Outcome
from glider_cli.cursor.upstream import Network
from glider_cli.errors import BackendError
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.cursor.chat import title_chat
from glider_cli.protocol.cursor.classify import NAME_TAB, title_text
from glider_cli.protocol.token_counts import Usage

_PROTO = [(b"content-type", b"application/proto")]
ASKED = 256  # the new user turns whose text is remembered
TITLE_PROMPT = "Write a title of at most six words for this request. Answer with the title only."


class Titles:
    def __init__(self, network: Network, adapter: CursorAdapter) -> None:
        self.network = network
        self.adapter = adapter
        # The text of recent new user turns -> their conversation (a title request names none).
        self._asked: OrderedDict[str, str] = OrderedDict()
        self._last: str | None = None

    def conversation_seen(self, conversation: str, typed: str = "") -> None:
        """A turn of `conversation` was decided; `typed`: the text of a new user turn."""
        self._last = conversation
        if typed.strip():
            self._asked[typed.strip()] = conversation
            while len(self._asked) > ASKED:
                self._asked.popitem(last=False)

    async def handle(self, req: HttpRequest) -> HttpResponse:
        text = title_text(req.path, req.body, req.header("content-encoding"))
        if text is None:
            return await relay(self.network, req)
        # The conversation whose turn typed this text, else the one seen last (it names none itself).
        session = self._asked.get(text.strip()) or self._last
        legacy = req.path.split("?", 1)[0] == NAME_TAB
        what = {"kind": "title", "why": "NameTab" if legacy else "NameAgent", "request_id": None}
        opened = self.adapter.open(title_chat(text, session), local_ok=True, what=what)
        if opened is None:
            return await relay(self.network, req)
        outcome = Outcome(self.adapter, opened)
        if opened.decision.target == "local":
            answer = await self._local(outcome, text, legacy)
            if answer is not None:
                return answer
        return await relay(self.network, req, outcome.origin_end())

    async def _local(self, outcome: Outcome, text: str, legacy: bool) -> HttpResponse | None:
        """A title of a family held local, named by the local model; None: Cursor names it (fallback)."""
        opened = outcome.opened
        backend = self.adapter.local_backend(opened)
        started = time.perf_counter()
        prompt = f"{TITLE_PROMPT}\n\n{text[:2000]}"
        usage = Usage()
        try:
            name = "".join([p async for p in self.adapter.local_text(opened, backend, prompt, usage)])
        except BackendError as exc:
            fallback = self.adapter.fallback_allowed(opened, backend)
            self.adapter.failed(opened, backend, exc, fallback)
            if fallback:
                outcome.fell_back(backend.name)
                return None
            outcome.local(usage, 502, _ms(started), complete=False)
            return HttpResponse(
                503, [(b"content-type", b"application/json")], w.unary_error("unavailable", exc.message)
            )
        outcome.local(usage, 200, _ms(started), complete=True)
        title = _title_line(name) or "Chat"
        body = w.name_tab(title, "named by the local model") if legacy else w.name_agent(title)
        return HttpResponse(200, list(_PROTO), body)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _title_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip().strip("\"'#*").strip()
        if line:
            return line[:80]
    return ""
