"""A classified Cursor message as the router's request model (`domain.ChatRequest`, protocol `cursor`).

`to_chat(classified, session_id, kind)`: the person's text as the one user message of a new turn;
a follow-on, summary, title or subagent carries none of the person's text (no command can be read
from it) and is placed by its declared kind (`ChatRequest.client_kind`), not by wording. A turn in
Cursor's agent, plan or debug mode offers tools (`tool_names`: `cursor_agent_tools`, so the
classifier's tools rule sees them); the ask mode offers none. Cursor's hints (`max_mode`, the mode)
are the request's `client_hint` (`complexity_source: cursor`).
"""

from __future__ import annotations

from glider_cli.domain import ChatRequest, Message
from glider_cli.protocol.cursor.classify import Classified

TOOLS = ("cursor_agent_tools",)
_NO_TOOLS_MODES = frozenset({"ask"})
_KINDS = {
    "new_turn": "new_turn",
    "follow_on": "continuation",
    "summary": "summary",
    "subagent": "subagent",
    "title": "title",
}


def estimate(text: str) -> int:
    return len(text) // 4 + 1


def to_chat(c: Classified, session_id: str | None, kind: str | None = None) -> ChatRequest:
    declared = _KINDS.get(kind or c.kind, "continuation")
    if declared == "new_turn":
        messages: tuple[Message, ...] = (Message("user", c.text),)
    else:
        # No person's text: the message is an empty assistant turn (not a new user message).
        messages = (Message("assistant", ""),)
    tools = () if c.mode in _NO_TOOLS_MODES else TOOLS
    hint = c.hint or None
    return ChatRequest(
        "cursor",
        c.model_id or "",
        True,
        messages,
        tool_names=tools,
        estimated_tokens=estimate(c.text),
        session_id=session_id,
        client_kind=declared,
        client_hint=hint,
    )


def title_chat(text: str, session_id: str | None) -> ChatRequest:
    """A NameAgent request: the text it names is context, not something the person typed now."""
    return ChatRequest(
        "cursor",
        "",
        False,
        (Message("assistant", ""),),
        estimated_tokens=estimate(text),
        session_id=session_id,
        client_kind="title",
    )
