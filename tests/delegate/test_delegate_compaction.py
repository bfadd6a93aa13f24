"""Compaction: threshold and tail, each source failing in turn, the digest, the never-re-summarise mark."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from fake_upstream import FakeUpstream
from glider_cli.config.settings import BackendSettings, ContextSettings, Settings, SummarySettings
from glider_cli.delegate import compaction, continuity, operations, summarizers
from glider_cli.delegate.compaction import SUMMARY_MARK, Compactor, compact, digest, summarise
from glider_cli.delegate.entry import Entry
from glider_cli.paths import resolve


def _fill(ws: Path, n: int, *, outcome_every: int = 10) -> None:
    p = resolve()
    for i in range(n):
        if i % outcome_every == 5:
            e = Entry(
                kind="delegate",
                text=f"Task: step {i}\nResult: done",
                source_cli="claude-code",
                delegate="agy",
                ok=i % 2 == 1,
                files=(f"f{i}.go",),
            )
        else:
            e = Entry(kind="turn", text=f"turn number {i}", source_cli="claude-code")
        continuity.append(p, ws, e)


def _fails(prompt: str) -> str:
    raise RuntimeError("source down")


def _answers(name: str):
    def fn(prompt: str) -> str:
        assert "turn number 0" in prompt
        # A summary that stands for what it replaces: the turns, and every delegate run's files.
        return f"summary by {name}: turn number 0 to 20; agy changed f5.go, then f15.go"

    return fn


def test_nothing_below_threshold(tmp_path: Path) -> None:
    _fill(tmp_path, 40)
    res = compact(resolve(), tmp_path, SummarySettings(), lambda _: {})
    assert not res.compacted
    assert len(continuity.read(resolve(), tmp_path).entries) == 40


def test_digest_when_disabled_keeps_first_turns_and_every_outcome(tmp_path: Path) -> None:
    _fill(tmp_path, 45)
    res = compact(resolve(), tmp_path, SummarySettings(enabled=False), lambda _: {"origin": _answers("o")})
    assert res.compacted and res.source == "digest" and res.removed == 25
    entries = continuity.read(resolve(), tmp_path).entries
    assert len(entries) == 21
    s = entries[0]
    assert s.kind == "summary" and s.text.startswith(SUMMARY_MARK)
    assert "turn number 0" in s.text and "turn number 2" in s.text
    for i in (5, 15):
        assert f"Task: step {i}" in s.text and f"f{i}.go" in s.text
    assert "Removed 25 entries" in s.text
    assert [e.text for e in entries[1:]] == [
        f"turn number {i}" if i % 10 != 5 else e.text for i, e in zip(range(25, 45), entries[1:], strict=True)
    ]


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ({"origin": _answers("origin"), "cloud": _answers("cloud"), "local": _answers("local")}, "origin"),
        ({"origin": _fails, "cloud": _answers("cloud"), "local": _answers("local")}, "cloud"),
        ({"origin": _fails, "cloud": _fails, "local": _answers("local")}, "local"),
        ({"origin": _fails, "cloud": _fails, "local": _fails}, "digest"),
        ({"origin": None, "cloud": None, "local": _answers("local")}, "local"),  # unconfigured: skipped
        ({"origin": lambda p: "   ", "cloud": None, "local": None}, "digest"),  # empty answer: failed
    ],
)
def test_each_source_failing_in_turn(tmp_path: Path, sources, expected: str) -> None:
    _fill(tmp_path, 41)
    res = compact(resolve(), tmp_path, SummarySettings(), lambda _: sources)
    assert res.compacted and res.source == expected
    s = continuity.read(resolve(), tmp_path).entries[0]
    assert s.text.startswith(SUMMARY_MARK)
    if expected != "digest":
        assert f"summary by {expected}" in s.text
        assert f"Summarised by {expected} from 21 entries" in s.text
    statuses = [(a.source, a.status) for a in res.attempts]
    if expected == "digest":
        assert all(status != "used" for _, status in statuses)
    else:
        assert statuses[-1] == (expected, "used")


def test_none_stops_the_list(tmp_path: Path) -> None:
    _fill(tmp_path, 41)
    res = compact(
        resolve(),
        tmp_path,
        SummarySettings(sources=("none", "local")),
        lambda _: {"local": _answers("local")},
    )
    assert res.source == "digest"
    assert [(a.source, a.status) for a in res.attempts] == [("none", "skipped")]


def test_one_rolling_summary_carries_the_first_forward_and_never_summarises_it(tmp_path: Path) -> None:
    _fill(tmp_path, 41)
    compact(resolve(), tmp_path, SummarySettings(enabled=False), lambda _: {})
    first = continuity.read(resolve(), tmp_path).entries[0]
    _fill(tmp_path, 25)
    seen: list[str] = []

    def spy(prompt: str) -> str:
        seen.append(prompt)
        files = re.findall(r"files: (\S+):", prompt)  # a careful model names every changed file
        return f"second summary: turn number 0 to 25 again; agy changed {', '.join(files)}"

    res = compact(resolve(), tmp_path, SummarySettings(sources=("local",)), lambda _: {"local": spy})
    assert res.compacted and res.source == "local"
    assert SUMMARY_MARK not in seen[0] and "Removed" not in seen[0]  # the summary is not in the prompt
    entries = continuity.read(resolve(), tmp_path).entries
    assert [e.is_summary for e in entries].count(True) == 1 and entries[0].is_summary
    rolled = entries[0]
    assert rolled.digest is not None and first.digest is not None
    # The first summary's digest is carried forward as it was, then extended.
    assert rolled.digest["delegates"][: len(first.digest["delegates"])] == first.digest["delegates"]
    assert rolled.digest["first_turns"] == first.digest["first_turns"]
    assert rolled.digest["entries"] == first.digest["entries"] + res.removed
    assert "second summary" in rolled.text
    assert not compaction.needs_compaction([first] * 50)  # only summaries before the tail: nothing to do


def test_a_model_summary_that_drops_an_outcome_is_refused(tmp_path: Path) -> None:
    _fill(tmp_path, 41)
    res = compact(
        resolve(),
        tmp_path,
        SummarySettings(sources=("local", "cloud")),
        lambda _: {
            "local": lambda p: "Hi from the fake upstream.",
            "cloud": lambda p: "turn number talk, f5.go",
        },
    )
    assert res.source == "digest"
    assert [(a.source, a.status) for a in res.attempts] == [("local", "failed"), ("cloud", "failed")]
    assert "f5.go" in res.attempts[0].detail and "f15.go" in res.attempts[1].detail
    s = continuity.read(resolve(), tmp_path).entries[0]
    assert "Hi from the fake upstream" not in s.text and "f5.go" in s.text and "f15.go" in s.text


def test_entries_appended_during_a_slow_summary_are_kept(tmp_path: Path) -> None:
    _fill(tmp_path, 41)
    p = resolve()

    def slow(prompt: str) -> str:
        continuity.append(p, tmp_path, Entry(kind="turn", text="arrived meanwhile", source_cli="codex"))
        return "ok summary"

    compact(p, tmp_path, SummarySettings(sources=("local",)), lambda _: {"local": slow})
    texts = [e.text for e in continuity.read(p, tmp_path).entries]
    assert texts[-1] == "arrived meanwhile"
    assert len(texts) == 22


def test_digest_counts() -> None:
    d = digest([Entry(kind="turn", text="a", source_cli="x"), Entry(kind="turn", text="b", source_cli="x")])
    assert d.startswith(SUMMARY_MARK) and "Removed 2 entries: 2 turns, 0 delegate outcomes" in d


def test_summarise_never_raises_on_odd_failures() -> None:
    def boom(prompt: str) -> str:
        raise KeyError("choices")

    _text, used, attempts = summarise(
        [Entry(kind="turn", text="x", source_cli="c")],
        SummarySettings(),
        {"origin": boom, "cloud": boom, "local": boom},
    )
    assert used == "digest" and [a.status for a in attempts] == ["failed"] * 3


def test_compactor_runs_in_the_background(tmp_path: Path) -> None:
    _fill(tmp_path, 41)
    gate = threading.Event()
    ran_on: list[str] = []

    def one_pass(ws: str) -> object:
        gate.wait(30)
        ran_on.append(threading.current_thread().name)
        return compact(resolve(), ws, SummarySettings(enabled=False), lambda _: {})

    c = Compactor(one_pass)
    assert c.schedule(tmp_path)
    assert not c.schedule(tmp_path)  # coalesced while waiting
    assert len(continuity.read(resolve(), tmp_path).entries) == 41  # the caller was not held up
    gate.set()
    c.wait()
    c.close()
    assert ran_on == ["glider-compaction"]
    assert len(continuity.read(resolve(), tmp_path).entries) == 21


def test_compactor_reports_errors_and_keeps_working(tmp_path: Path) -> None:
    errors: list[str] = []
    calls: list[str] = []

    def one_pass(ws: str) -> object:
        calls.append(ws)
        if len(calls) == 1:
            raise OSError("disk full")
        return None

    c = Compactor(one_pass, lambda ws, exc: errors.append(str(exc)))
    c.schedule("a")
    c.wait()
    c.schedule("b")
    c.wait()
    c.close()
    assert errors == ["disk full"] and calls == ["a", "b"]


# ---- summary sources over real HTTP (tests/fake_upstream.py on 127.0.0.1)


def _settings(url: str, *types: tuple[str, str, str | None]) -> Settings:
    backends = {
        name: BackendSettings(name=name, type=t, side=side, base_url=url, model="fake-model", api_key_env=env)
        for name, (t, side, env) in zip(("b1", "b2", "b3"), [(t, s, e) for t, s, e in types], strict=False)
    }
    return Settings(backends=backends)


def test_cloud_anthropic_and_local_ollama_over_http(tmp_path: Path) -> None:
    with FakeUpstream() as fake:
        s = _settings(fake.url, ("anthropic", "cloud", "TEST_KEY"), ("ollama", "local", None))
        src = summarizers.sources_for(s, resolve(), {"TEST_KEY": "sk-test", "PATH": ""}, "claude-code")
        assert src["origin"] is None  # no claude on this PATH: skipped
        assert src["cloud"] is not None and src["local"] is not None
        assert "hello from fake anthropic" in src["cloud"]("summarise")
        req = fake.requests[-1]
        assert req.path == "/v1/messages" and req.headers["x-api-key"] == "sk-test"
        assert "hello from fake ollama" in src["local"]("summarise")
        assert fake.requests[-1].path == "/api/chat"
        # Built by protocol.translate like every call to a local backend: the summary's length is capped.
        assert fake.requests[-1].body["options"]["num_predict"] == summarizers.MAX_SUMMARY_TOKENS


def test_openai_backend_and_failure_falls_through(tmp_path: Path) -> None:
    with FakeUpstream() as fake:
        s = _settings(fake.url + "/v1", ("openai", "cloud", None))
        src = summarizers.sources_for(s, resolve(), {"PATH": ""}, "codex")
        assert src["cloud"] is not None
        assert "hello from fake openai_chat" in src["cloud"]("summarise")
        assert fake.requests[-1].path == "/v1/chat/completions"
        fake.set_fault(status=500)
        _fill(tmp_path, 41)
        res = compact(resolve(), tmp_path, SummarySettings(), lambda _: src)
        assert res.source == "digest"
        assert ("cloud", "failed") in [(a.source, a.status) for a in res.attempts]


def test_missing_key_means_not_configured() -> None:
    s = _settings("http://127.0.0.1:9", ("anthropic", "cloud", "ABSENT_KEY"))
    assert summarizers.sources_for(s, resolve(), {"PATH": ""}, "x")["cloud"] is None


def test_origin_source_runs_the_front_cli_headless(fake_agents, tmp_path: Path) -> None:
    env = fake_agents.mode("ok", FAKE_AGENT_REPLY="origin wrote this summary")
    src = summarizers.sources_for(Settings(), resolve(), env, "claude-code")
    assert src["origin"] is not None
    assert src["origin"]("summarise these entries") == "origin wrote this summary"
    assert not any(resolve().run.iterdir())
    assert summarizers.vendor_for_cli("codex_exec") == "codex"
    assert summarizers.vendor_for_cli("python-sdk") is None


def test_six_hundred_turns_keep_every_delegate_outcome_in_one_rolling_summary(tmp_path: Path) -> None:
    p = resolve()
    settings = Settings(context=ContextSettings(summary=SummarySettings(sources=("local",))))
    calls: list[int] = []

    def model(prompt: str) -> str:
        # A slow local model that is sometimes useless ("Hi ...") and otherwise careful.
        calls.append(len(prompt))
        time.sleep(0.01)
        if len(calls) % 3 == 0:
            return "Hi from the fake upstream."
        files = re.findall(r"files: (\S+):", prompt)
        return f"The turns went on about module work; delegates changed {', '.join(files) or 'nothing'}."

    compactor = Compactor(
        lambda ws: compact(p, ws, settings.context.summary, lambda _: {"local": model}),
    )
    outcome_turns = (5, 50, 100, 101, 230, 275, 420, 599)
    for i in range(640):
        operations.record_turn(
            p, settings, tmp_path, f"turn {i}: refactor module m{i % 37}", "claude-code", compactor=compactor
        )
        if i in outcome_turns:
            entry = Entry(
                kind="delegate",
                text=f"Task: fix bug {i}\nResult: fixed bug {i}",
                source_cli="claude-code",
                delegate="agy",
                ok=True,
                files=(f"pkg/bug{i}.go",),
            )
            continuity.append(p, tmp_path, entry)
            if compaction.needs_compaction(continuity.read(p, tmp_path).entries):
                compactor.schedule(continuity.read(p, tmp_path).workspace)
    compactor.wait()
    compactor.close()

    record = continuity.read(p, tmp_path)
    entries = record.entries
    assert len(entries) <= continuity.RING_SIZE
    assert [e.is_summary for e in entries] == [True] + [False] * (len(entries) - 1)
    head = entries[0]
    assert head.digest is not None
    # Every entry ever written is either still there or counted by the one summary.
    assert head.digest["entries"] + len(entries) - 1 == 640 + len(outcome_turns)
    # Every delegate outcome is still in the record: as an entry, or verbatim in the summary.
    whole = "\n".join(e.text for e in entries)
    for i in outcome_turns:
        assert f"pkg/bug{i}.go" in whole and f"Task: fix bug {i} Result: fixed bug {i}" in whole.replace(
            "\n", " "
        )
    carried = [d["files"] for d in head.digest["delegates"]]
    assert carried == [[f"pkg/bug{i}.go"] for i in outcome_turns if f"Task: fix bug {i}\n" not in whole]
    # Compaction ran once per ~20 turns, not on every turn; useless answers were never kept.
    assert 20 <= len(calls) <= 640 // compaction.MIN_NEW
    assert "Hi from the fake upstream" not in whole
    assert head.digest["prose"] and {x["source"] for x in head.digest["prose"]} == {"local"}
    assert len(head.digest["prose"]) <= 3  # the newest prose, not a pile of summaries
    assert head.digest["first_turns"][0]["text"].startswith("turn 0:")


def test_a_greeting_cannot_stand_for_turns() -> None:
    from glider_cli.delegate.rolling import check

    turns = [Entry(kind="turn", text="make the login button blue", source_cli="x")]
    assert check("Hi from the fake upstream.", turns) is not None
    assert check("The user asked for a blue login button.", turns) is None
