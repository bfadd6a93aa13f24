"""What opening a turn costs (issue 29): work done once per request, and only when it can matter.

The answers are those of the other turn tests; these count the work behind them: one credentials
hash per request, one first look at a request for `awaited_prompt` and `place`, no walk over every
remembered prompt when a family is evicted, and the regret words of a prompt read only when a
locally answered turn came before it.
"""

from __future__ import annotations

from typing import Any

import pytest

from family_helpers import Ids, cc, title_request, user
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest, Reason, RequestSummary, RouteDecision
from glider_cli.protocol.parse import parse_request
from glider_cli.turns import families, regret, request_kinds
from glider_cli.turns.families import FamilyIndex
from glider_cli.turns.lifecycle import Served, Turns

S1 = "11111111-1111-4111-8111-111111111111"


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of `module.name` (the real function still answers)."""
    calls = [0]
    real = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def keyed(text: str, key: str = "sk-one") -> tuple[ChatRequest, dict[str, Any]]:
    """A request with no session id: its session key is its credentials fingerprint."""
    body = {"model": "m", "max_tokens": 16, "messages": [user(text)]}
    return parse_request("anthropic", body, {"x-api-key": key}, lowered=True), body


def test_one_request_is_hashed_once_for_its_session_key(monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = counted(monkeypatch, request_kinds.Fingerprinter, "__call__")  # the index's keyed hash
    ix = FamilyIndex(Ids())
    r1, b1 = keyed("/cloud say hi")
    assert ix.awaited_prompt(r1, 0.0, b1) is None
    p1 = ix.place(r1, 0.0, body=b1)
    key = ix.prompt_key(r1)
    assert p1.new_turn and key is not None and key[0].startswith("creds:")
    assert hashed[0] == 1
    # The next request is hashed anew; the same key finds the same session key.
    r2, b2 = keyed("/cloud say hi again")
    ix.place(r2, 1.0, body=b2)
    assert ix.prompt_key(r2) == (key[0], "/cloud say hi again")
    assert hashed[0] == 2
    assert ix.get(p1.turn_id).creds == ix.fingerprint(r2)  # type: ignore[union-attr]
    other, _ = keyed("/cloud say hi", key="sk-two")
    assert ix.key_of(other) != key[0]


def test_awaited_prompt_and_place_read_the_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    looked = counted(monkeypatch, families, "answered_calls")
    titled = counted(monkeypatch, families, "is_title_request")
    ix = FamilyIndex(Ids())
    r, b = cc(S1, [user("fix the parser")])
    assert ix.awaited_prompt(r, 0.0, b) is None
    assert ix.place(r, 0.0, body=b).new_turn
    assert (looked[0], titled[0]) == (1, 1)
    # A title quoting a prompt not seen yet: awaited, then opened ahead of its turn, read once.
    t, tb = title_request(S1, "audit the lexer")
    assert ix.awaited_prompt(t, 1.0, tb) == (S1, "audit the lexer")
    p = ix.place(t, 1.0, body=tb)
    assert (p.kind, p.quoted) == ("title", "audit the lexer")
    assert (looked[0], titled[0]) == (2, 2)


class _Asks(dict[tuple[str, str], str]):
    walks = 0

    def items(self) -> Any:
        _Asks.walks += 1
        return super().items()


def test_an_evicted_family_takes_its_prompts_along_without_a_walk_over_all() -> None:
    ix = FamilyIndex(Ids(), max_families=3)
    ix._asks = asks = _Asks()
    for i in range(6):
        r, b = cc(f"s{i}", [user(f"prompt {i}")])
        ix.place(r, float(i), body=b)
    assert list(ix.families) == ["t4", "t5", "t6"]
    assert dict(asks) == {("s3", "prompt 3"): "t4", ("s4", "prompt 4"): "t5", ("s5", "prompt 5"): "t6"}
    # A title ahead of its turn, then the turn opens in its family; both keys go with it.
    t, tb = title_request("s9", "audit")
    ahead = ix.place(t, 7.0, body=tb).turn_id
    r, b = cc("s9", [user("audit")])
    assert ix.place(r, 8.0, body=b).turn_id == ahead
    # A prompt the evicted family opened with, typed again in a newer family, stays with that one.
    r, b = cc("s5", [user("prompt 5"), {"role": "assistant", "content": "ok"}, user("more")])
    ix.place(r, 9.0, body=b)
    for i in range(10, 13):
        r, b = cc(f"s{i}", [user(f"prompt {i}")])
        ix.place(r, float(i), body=b)
    assert ahead not in ix.families
    assert ("s9", "audit") not in asks
    assert set(asks.values()) <= set(ix.families)
    assert _Asks.walks == 0
    assert ix._asked_by.keys() <= ix.families.keys()


def _decision(target: str) -> RouteDecision:
    return RouteDecision(
        target=target,  # type: ignore[arg-type]
        rule="r",
        priority=1,
        backend="ollama" if target == "local" else "origin",
        model=None,
        adapter=None,
        strategy="single",
        delegate=None,
        request=RequestSummary(10, False, 0, "keywords"),
        trace=(Reason("r", 1, True, "matched"),),
    )


class _Fixed:
    def __init__(self) -> None:
        self.target = "cloud"

    def decide(self, request: Any, *, sticky: Any = None, gate: Any = None, every: bool = False) -> Any:
        return _decision(self.target)


def test_regret_reads_a_prompts_words_only_after_a_local_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    normed = counted(monkeypatch, regret, "_norm")
    clock = [100.0]
    router = _Fixed()
    turns = Turns(router, StickySettings(), ToolFollowupSettings(), clock=lambda: clock[0], new_id=Ids())
    texts = ["explain how the sticky families work", "explain how the sticky families work please"]
    history: list[dict[str, Any]] = []
    for text in texts:  # answered in the cloud: nothing to regret, nothing read
        history.append(user(text))
        chat, body = cc(S1, list(history))
        opened = turns.open(chat, body)
        turns.close(opened, Served("origin", "cloud", None, 200, 10, 5))
        history.append({"role": "assistant", "content": "ok"})
    assert normed[0] == 0
    router.target = "local"
    history.append(user("/local write a test for the parser's empty input"))
    chat, body = cc(S1, list(history))
    local = turns.open(chat, body)
    turns.close(local, Served("ollama", "local", "qwen", 200, 10, 5))
    assert normed[0] == 0
    history.append({"role": "assistant", "content": "ok"})
    history.append(user("/cloud write a test for the parser's empty input"))
    clock[0] += 30
    chat, body = cc(S1, list(history))
    again = turns.open(chat, body)
    kinds = [(k, dict(d)["kind"]) for k, d, _ in again.events if k == "LocalRegret"]
    assert kinds == [("LocalRegret", "repeat_cloud")]
    assert normed[0] == 2  # the new prompt's words and the local turn's, once each
