"""The rolling `[session summary]`: one entry at the head of a continuity record standing for everything
older than the entries the record still holds. Pure: no I/O, no clock.

Its `digest` (kept in the entry's metadata, so it is read back exactly, never re-read from prose):

    {"entries", "turns", "outcomes", "other"}   how many entries it stands for, by kind
    "first_ts", "last_ts"                       the span they cover
    "first_turns"   [{"ts", "text"}]            the session's first `FIRST_TURNS` user turns (one line each)
    "delegates"     [{"ts", "vendor", "ok", "source_cli", "files", "line"}]   EVERY delegate outcome
                                                folded in, verbatim: its files and one line of it
    "prose"         [{"source", "entries", "span", "text"}]   what a model wrote, newest last, at most
                                                `PROSE_KEPT` of them (older ones stay counted)

`fold(summary, covered, prose=None)` makes the new rolling summary from the current one (or None, or
a summary written before there was a digest: its text is kept as prose, as it was) and the entries it
now covers: counts add up, first turns stay the first, outcomes are appended verbatim, and a model's
prose for `covered` is added; nothing already in the summary is summarised again. `render(digest)` is
its text. `fit_ring(entries, size)` keeps a record within its ring: the oldest entries beyond `size`
are folded into the summary instead of being dropped, so no delegate outcome leaves the record
silently. `check(text, covered)` says why a model's summary cannot stand for `covered` (None if it
can): it must name every file the covered delegate runs changed (by path or file name), the vendor of
each covered run that changed none, and share a word with the covered turns (by its first five
letters: "refactored" is "refactor"'s), which a greeting or an unrelated answer does not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from glider_cli.delegate.entry import SUMMARY_MARK, Entry

FIRST_TURNS = 3
PROSE_KEPT = 3
LINE_CHARS = 300
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{3,}")
_COMMON = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "have",
        "what",
        "when",
        "where",
        "which",
        "there",
        "their",
        "then",
        "than",
        "they",
        "them",
        "will",
        "would",
        "could",
        "should",
        "about",
        "into",
        "also",
        "just",
        "like",
        "make",
        "need",
        "want",
        "please",
        "thanks",
        "thank",
        "some",
        "more",
        "over",
        "only",
        "very",
    ]
)


def _line(text: str, limit: int = LINE_CHARS) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _empty() -> dict[str, Any]:
    return {
        "entries": 0,
        "turns": 0,
        "outcomes": 0,
        "other": 0,
        "first_ts": None,
        "last_ts": None,
        "first_turns": [],
        "delegates": [],
        "prose": [],
    }


def digest_of(summary: Entry | None) -> dict[str, Any]:
    """The digest a summary carries; a summary from before digests is kept whole as prose."""
    if summary is None:
        return _empty()
    if summary.digest:
        d = _empty()
        d.update({k: v for k, v in summary.digest.items() if k in d})
        return d
    d = _empty()
    body = summary.text[len(SUMMARY_MARK) :].strip() if summary.is_summary else summary.text
    d["prose"] = [{"source": "earlier summary", "entries": 0, "span": summary.ts, "text": body}]
    d["first_ts"] = d["last_ts"] = summary.ts
    return d


def fold(summary: Entry | None, covered: Sequence[Entry], prose: tuple[str, str] | None = None) -> Entry:
    """The rolling summary once `covered` is folded in (see the module contract)."""
    d = digest_of(summary)
    turns = [e for e in covered if e.kind == "turn"]
    runs = [e for e in covered if e.kind == "delegate"]
    others = [e for e in covered if e.kind not in ("turn", "delegate")]
    for e in others:  # another summary (a record from before rolling summaries): carried, not re-read
        inner = digest_of(e)
        d["outcomes"] += inner["outcomes"]
        d["delegates"] += inner["delegates"]
        d["prose"] += inner["prose"]
        d["first_turns"] += inner["first_turns"]
        d["turns"] += inner["turns"]
    d["entries"] += len(covered)
    d["turns"] += len(turns)
    d["outcomes"] += len(runs)
    d["other"] += len(others)
    stamps = [t for t in (d["first_ts"], d["last_ts"], *(e.ts for e in covered)) if t]
    if stamps:
        d["first_ts"], d["last_ts"] = min(stamps), max(stamps)
    room = FIRST_TURNS - len(d["first_turns"])
    d["first_turns"] = [
        *d["first_turns"],
        *({"ts": e.ts, "text": _line(e.text)} for e in turns[: max(room, 0)]),
    ]
    for e in runs:
        d["delegates"].append(
            {
                "ts": e.ts,
                "vendor": e.delegate or "?",
                "ok": bool(e.ok),
                "source_cli": e.source_cli,
                "files": list(e.files),
                "line": _line(e.text),
            }
        )
    if prose is not None:
        span = f"{covered[0].ts} to {covered[-1].ts}" if covered else ""
        d["prose"] = [
            *d["prose"],
            {"source": prose[0], "entries": len(covered), "span": span, "text": prose[1]},
        ]
    d["prose"] = d["prose"][-PROSE_KEPT:]
    ts = d["last_ts"] or (covered[-1].ts if covered else summary.ts if summary else None)
    source = covered[-1].source_cli if covered else summary.source_cli if summary else "glider"
    return Entry(kind="summary", text=render(d), source_cli=source, ts=ts, digest=d)


def render(d: Mapping[str, Any]) -> str:
    out = [
        f"{SUMMARY_MARK} Removed {d['entries']} entries: {d['turns']} turns, {d['outcomes']} delegate "
        f"outcomes, {d['other']} other; from {d['first_ts']} to {d['last_ts']}."
    ]
    if d["first_turns"]:
        out.append("First turns:")
        out += [f"- [{t['ts']}] {t['text']}" for t in d["first_turns"]]
    for p in d["prose"]:
        who = (
            f"Summarised by {p['source']} from {p['entries']} entries, {p['span']}"
            if p["entries"]
            else p["source"]
        )
        out.append(f"{who}:\n{p['text'].strip()}")
    if d["delegates"]:
        out.append("Delegate outcomes (every one, oldest first):")
        for o in d["delegates"]:
            files = f"; files: {', '.join(o['files'])}" if o["files"] else "; no files changed"
            status = "ok" if o["ok"] else "failed"
            out.append(f"- [{o['ts']}] {o['vendor']} {status} for {o['source_cli']}{files}: {o['line']}")
    return "\n".join(out)


def fit_ring(entries: Sequence[Entry], size: int) -> tuple[Entry, ...]:
    """The record within `size` entries: the oldest beyond it are folded into the rolling summary."""
    if len(entries) <= size:
        return tuple(entries)
    head = entries[0] if entries[0].is_summary else None
    rest = list(entries[1:] if head is not None else entries)
    keep = max(size - 1, 0)
    spill, kept = rest[: len(rest) - keep], rest[len(rest) - keep :]
    return (fold(head, spill), *kept)


def _stems(text: str) -> set[str]:
    # Five letters are enough to tell "refactored" belongs to "refactor" and "modules" to "module".
    return {w.lower().strip(".-")[:5] for w in _WORD.findall(text) if w.lower() not in _COMMON}


def check(text: str, covered: Sequence[Entry]) -> str | None:
    """Why `text` cannot replace `covered` (see the module contract), or None."""
    low = text.lower()
    missing: list[str] = []
    for e in covered:
        if e.kind != "delegate":
            continue
        if not e.files and (e.delegate or "").lower() not in low:
            missing.append(f"the {e.delegate or 'delegate'} run of {e.ts}")
        for f in e.files:
            if f.lower() not in low and f.rsplit("/", 1)[-1].lower() not in low:
                missing.append(f)
    if missing:
        return "it does not mention " + ", ".join(dict.fromkeys(missing))
    turns = [e for e in covered if e.kind == "turn"]
    if turns:
        vocab = set().union(*(_stems(e.text) for e in turns))
        if vocab and not vocab & _stems(text):
            return "it shares no word with the turns it would replace"
    return None
