"""Cursor requests in the shared core: placed in families by declared kind (not wording), the
composer_wrapup trigger by field, `complexity_source: cursor` from Cursor's hints."""

from __future__ import annotations

import itertools

import cursor_wire as wire

from glider_cli.config.load import load_config
from glider_cli.protocol.cursor.chat import title_chat, to_chat
from glider_cli.protocol.cursor.classify import classify
from glider_cli.router import Router
from glider_cli.turns.families import FamilyIndex

CID = "conv-1"


def _index() -> FamilyIndex:
    n = itertools.count()
    return FamilyIndex(lambda: f"t{next(n)}")


def test_declared_kinds_place_requests_without_reading_words() -> None:
    idx = _index()
    turn = to_chat(
        classify(wire.run_request(CID, wire.user_action("summarize the conversation so far"))), CID
    )
    first = idx.place(turn, 1.0)
    assert first.kind == "new_turn"  # a person's words that look like a summary are still a turn
    summary = idx.place(to_chat(classify(wire.run_request(CID, wire.action(4))), CID), 2.0)
    assert (summary.kind, summary.turn_id) == ("summary", first.turn_id)
    title = idx.place(title_chat("<session>hi</session>", CID), 3.0)
    assert (title.kind, title.turn_id) == ("title", first.turn_id)
    follow = idx.place(to_chat(classify(wire.run_request(CID, wire.action(12))), CID), 4.0)
    assert (follow.kind, follow.turn_id) == ("continuation", first.turn_id)
    sub = classify(wire.run_request("child", wire.user_action("go"), subagent_type="explore"))
    child = idx.place(to_chat(sub, CID), 5.0)
    assert (child.kind, child.turn_id) == ("subagent", first.turn_id)


def test_composer_wrapup_by_field_and_cursor_complexity() -> None:
    router = Router(load_config(profile="default"))
    summary = router.decide(to_chat(classify(wire.run_request(CID, wire.action(4))), CID))
    assert summary.rule == "composer_wrapup_origin"
    # Words alone do not make a Cursor request a wrap-up.
    worded = to_chat(classify(wire.run_request(CID, wire.user_action("summarize the changes you made"))), CID)
    assert router.decide(worded).rule != "composer_wrapup_origin"
    hinted = router.decide(
        to_chat(classify(wire.run_request(CID, wire.user_action("hi"), max_mode=True)), CID)
    )
    assert hinted.request.complexity_source == "cursor" and hinted.request.complexity_score >= 80
    ask = to_chat(classify(wire.run_request(CID, wire.user_action("hi", mode=2))), CID)
    assert ask.tool_names == () and router.decide(ask).request.complexity_source == "cursor"
    plain = router.decide(to_chat(classify(wire.run_request(CID, wire.user_action("hi", mode=0))), CID))
    assert plain.request.complexity_source == "heuristic"
