"""The continuity record: exact format, ring, corrupt files kept aside, concurrent writers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glider_cli.delegate import continuity
from glider_cli.delegate.continuity import CorruptRecord, Record
from glider_cli.delegate.entry import Entry
from glider_cli.paths import Paths, resolve

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(
    ws=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
    items=st.lists(
        st.tuples(
            st.sampled_from(["turn", "delegate", "summary"]),
            texts,
            st.lists(st.text(max_size=20), max_size=3),
        ),
        max_size=6,
    ),
)
@settings(max_examples=150, deadline=None)
def test_parse_serialize_exact(ws: str, items: list[tuple[str, str, list[str]]]) -> None:
    entries = tuple(
        Entry(
            kind=k,
            text=t,
            source_cli="claude-code",
            delegate="agy" if k == "delegate" else None,
            ok=True if k == "delegate" else None,
            files=tuple(f) if k == "delegate" else (),
        )  # type: ignore[arg-type]
        for k, t, f in items
    )
    rec = Record(workspace="/" + ws, entries=entries)
    text = continuity.serialize(rec)
    assert continuity.parse(text) == rec
    assert continuity.serialize(continuity.parse(text)) == text


def test_tricky_text_survives() -> None:
    nasty = '---\n<!-- glider-entry {"id":"x"} -->\n### turn · x · y\n\n-->\r\n\n\n'
    rec = Record("/w", (Entry(kind="turn", text=nasty, source_cli="codex"),))
    assert continuity.parse(continuity.serialize(rec)) == rec


def test_readable_markdown() -> None:
    e = Entry(
        kind="delegate",
        text="Task: fix\nResult: done",
        source_cli="claude-code",
        delegate="agy",
        ok=True,
        files=("a.go",),
        ts="2026-11-29T10:00:00Z",
        id="abc",
    )
    text = continuity.serialize(Record("/home/u/proj", (e,)))
    assert "# Continuity record: proj" in text
    assert "### delegate · 2026-11-29T10:00:00Z · claude-code · agy ok\n\nTask: fix\nResult: done\n" in text


def test_record_path_name_and_hash(tmp_path: Path) -> None:
    p = resolve()
    a = continuity.record_path(p, tmp_path / "my proj")
    b = continuity.record_path(p, tmp_path / "other" / "my proj")
    assert a.parent == p.continuity
    assert a.name.startswith("my_proj-") and a.suffix == ".md"
    assert a != b


def test_append_and_read(tmp_path: Path) -> None:
    p = resolve()
    continuity.append(p, tmp_path, Entry(kind="turn", text="one", source_cli="claude-code"))
    continuity.append(p, tmp_path, Entry(kind="turn", text="two", source_cli="claude-code"))
    assert [e.text for e in continuity.read(p, tmp_path).entries] == ["one", "two"]
    assert continuity.read(p, tmp_path / "nothing-here").entries == ()


def test_ring_of_60_keeps_a_leading_summary(tmp_path: Path) -> None:
    p = resolve()
    continuity.append(p, tmp_path, Entry(kind="summary", text="[session summary] old", source_cli="x"))
    for i in range(70):
        continuity.append(p, tmp_path, Entry(kind="turn", text=f"t{i}", source_cli="x"))
    entries = continuity.read(p, tmp_path).entries
    assert len(entries) == continuity.RING_SIZE
    assert entries[0].is_summary
    assert entries[1].text == "t11" and entries[-1].text == "t69"


def test_corrupt_record_is_kept_aside_and_reported(tmp_path: Path) -> None:
    p = resolve()
    continuity.append(p, tmp_path, Entry(kind="turn", text="precious", source_cli="x"))
    path = continuity.record_path(p, tmp_path)
    path.write_text(path.read_text().replace('"chars":8', '"chars":99'))
    with pytest.raises(CorruptRecord, match="corrupt"):
        continuity.read(p, tmp_path)
    assert path.exists()  # a reader never moves it
    res = continuity.append(p, tmp_path, Entry(kind="turn", text="new", source_cli="x"))
    assert res.set_aside is not None and res.set_aside.exists()
    assert "precious" in res.set_aside.read_text()
    assert [e.text for e in continuity.read(p, tmp_path).entries] == ["new"]


def _writer(home: str, ws: str, n: int, tag: str) -> None:
    p = Paths(home=Path(home))
    for i in range(n):
        continuity.append(p, ws, Entry(kind="turn", text=f"{tag}-{i}", source_cli=tag))


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    p = resolve()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(p.home), str(tmp_path), 12, f"w{k}")) for k in range(4)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(120)
        assert pr.exitcode == 0
    texts_ = {e.text for e in continuity.read(p, tmp_path).entries}
    assert texts_ == {f"w{k}-{i}" for k in range(4) for i in range(12)}


def test_secrets_in_an_entry_never_reach_the_file(tmp_path: Path) -> None:
    p = resolve({"GLIDER_HOME": str(tmp_path / "home")})
    ws = tmp_path / "ws"
    ws.mkdir()
    key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    continuity.append(p, ws, Entry(kind="turn", text=f"use {key} and {token} please", source_cli="codex"))
    continuity.append(
        p, ws, Entry(kind="delegate", text=f"done with {key}", source_cli="codex", delegate="agy", ok=True)
    )
    on_disk = b"".join(f.read_bytes() for f in p.home.rglob("*") if f.is_file())
    assert key.encode() not in on_disk and token.encode() not in on_disk
    entries = continuity.read(p, ws).entries
    assert entries[0].text == "use [REDACTED] and [REDACTED] please"
    assert entries[1].text == "done with [REDACTED]"
