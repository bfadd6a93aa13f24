"""Which record entries a delegate receives, and the block they make.

Contract (memory-and-context.md, "How Glider selects the entries"):
- The 2 most recent entries (the protected tail) always go in, whatever their score.
- Every other entry is scored against THIS delegate's task with BM25 (k1=1.2, b=0.75; IDF over the
  record, so a rare term weighs more than a frequent one). A term found in more than half of the
  entries weighs nothing at all: a common word of the task ("fix") scores no entry. An entry that
  shares no weighed term with the task scores 0 and stays out. For a slot, at equal score a delegate
  outcome (or a summary) wins over an ordinary turn (the "tie-break"), then the more recent entry.
- Ceilings, never targets: at most `max_entries` entries and `token_budget` tokens (4 characters per
  token) for the whole block, optionally at most `max_bytes` UTF-8 bytes (a vendor that reads only so
  much of its context file). Lower-ranked entries are dropped first; the tail is shortened last.
- An entry longer than `max_entry_chars` loses its middle; start and end stay, joined by a visible
  `[… N characters removed from the middle …]` marker.
- The block is titled "Earlier in the calling session" and reads in one order, by relevance: score,
  highest first; at equal score a delegate outcome (or a summary) before a turn, then the older
  first. The protected tail is in that order at its own score, its headings marked "most recent".

Pure: no I/O, no clock. `build_block` is what `glider continuity block` prints and what a delegate gets.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from glider_cli.config.settings import BackgroundSettings
from glider_cli.delegate.entry import Entry
from glider_cli.values import Frozen, init_fields

BLOCK_TITLE = "Earlier in the calling session"
PROTECTED_TAIL = 2
CHARS_PER_TOKEN = 4
K1 = 1.2
B = 0.75

_TOKEN_RE = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "us",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


class BlockItem(Frozen):
    """One entry as it goes into the block, with why it is there."""

    entry: Entry
    text: str
    score: float
    reason: str  # "protected tail" | "score" | "tie-break"
    truncated: bool

    def __init__(self, entry: Entry, text: str, score: float, reason: str, truncated: bool) -> None:
        init_fields(self, entry, text, score, reason, truncated)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.entry.id,
            "kind": self.entry.kind,
            "ts": self.entry.ts,
            "source_cli": self.entry.source_cli,
            "score": round(self.score, 4),
            "reason": self.reason,
            "truncated": self.truncated,
            "chars": len(self.text),
            "text": self.text,
        }


class Excluded(Frozen):
    entry: Entry
    score: float
    reason: str

    def __init__(self, entry: Entry, score: float, reason: str) -> None:
        init_fields(self, entry, score, reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.entry.id,
            "kind": self.entry.kind,
            "score": round(self.score, 4),
            "reason": self.reason,
        }


class Block(Frozen):
    text: str
    items: tuple[BlockItem, ...]
    excluded: tuple[Excluded, ...]
    tokens: int

    def __init__(
        self,
        text: str,
        items: tuple[BlockItem, ...],
        excluded: tuple[Excluded, ...],
        tokens: int,
    ) -> None:
        init_fields(self, text, items, excluded, tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": BLOCK_TITLE,
            "tokens": self.tokens,
            "items": [i.to_dict() for i in self.items],
            "excluded": [x.to_dict() for x in self.excluded],
            "text": self.text,
        }


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # Plural only: "panics" and "panic" are one term; anything smarter would need a real stemmer.
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return word


def _fold(raw: Counter[str]) -> dict[str, int]:
    # A plain dict with .get: Counter's `+=` on a new key goes through a Python-level __missing__,
    # which was most of a cold block build (bench/bench_continuity.py).
    out: dict[str, int] = {}
    get = out.get
    for tok, n in raw.items():
        if "." in tok:
            for part in tok.split("."):
                if part and part not in _STOPWORDS:
                    key = _stem(part)
                    out[key] = get(key, 0) + n
        if len(tok) > 1 and tok not in _STOPWORDS:
            key = _stem(tok)
            out[key] = get(key, 0) + n
    return out


def terms(text: str) -> list[str]:
    """Lower-case words (plural folded) and dotted names (`parser.go`), each dotted name also split."""
    return [t for t, n in _fold(Counter(_TOKEN_RE.findall(text.lower()))).items() for _ in range(n)]


@lru_cache(maxsize=1024)
def _doc_stats(text: str) -> tuple[Mapping[str, int], int]:
    # Entries never change once written, so a record's term counts are computed once per text; a block
    # build then only tokenises the entries added since the last one (bench/bench_continuity.py).
    tf = _fold(Counter(_TOKEN_RE.findall(text.lower())))
    return MappingProxyType(tf), sum(tf.values())


def clear_term_cache() -> None:
    """Forget the memoised term counts (benchmarks measure the cold path with it)."""
    _doc_stats.cache_clear()


def bm25_scores(query: str, docs: Sequence[str]) -> list[float]:
    """BM25 of each doc against the query, IDF taken over `docs`."""
    q = set(terms(query))
    if not q or not docs:
        return [0.0] * len(docs)
    stats = [_doc_stats(d) for d in docs]
    avg = (sum(length for _, length in stats) / len(stats)) or 1.0
    n = len(docs)
    idf = {}
    for t in q:
        df = sum(1 for tf, _ in stats if t in tf)
        # In most entries, a term tells them apart no more than a stopword does.
        idf[t] = 0.0 if df > n / 2 else math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    scores = []
    for tf, length in stats:
        s = 0.0
        norm = K1 * (1.0 - B + B * length / avg)
        for t in q:
            f = tf.get(t, 0)
            if f:
                s += idf[t] * f * (K1 + 1.0) / (f + norm)
        scores.append(s)
    return scores


def truncate_middle(text: str, max_chars: int) -> tuple[str, bool]:
    """Keep the start and the end of `text` within `max_chars`, with a visible marker in the middle."""
    if len(text) <= max_chars:
        return text, False
    removed = len(text)
    marker = ""
    for _ in range(3):  # the marker's own length depends on the count it shows
        marker = f"\n[… {removed} characters removed from the middle …]\n"
        keep = max(max_chars - len(marker), 0)
        removed = len(text) - keep
    keep = max(max_chars - len(marker), 0)
    if keep == 0:
        return marker.strip()[:max_chars], True
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + marker + (text[len(text) - tail :] if tail else ""), True


def _label(e: Entry) -> str:
    if e.kind == "delegate":
        status = "ok" if e.ok else "failed"
        files = f"; changed {', '.join(e.files)}" if e.files else ""
        return f"{e.delegate or 'delegate'} run, {status}{files} ({e.ts}, for {e.source_cli})"
    if e.kind == "summary":
        return f"summary ({e.ts})"
    return f"user turn ({e.ts}, {e.source_cli})"


_HEADER = (
    f"# {BLOCK_TITLE}\n\n"
    "Glider's continuity record for this workspace: what happened earlier in the session that sent "
    "you this task, most relevant first. The most recent entries are always here, marked as such.\n"
)


def _part(item: BlockItem) -> str:
    recent = " · most recent" if item.reason == "protected tail" else ""
    return f"\n## {_label(item.entry)}{recent}\n\n{item.text}\n"


def render(items: Sequence[BlockItem]) -> str:
    if not items:
        return ""
    return _HEADER + "".join(_part(it) for it in items)


class _Size:
    """The rendered block's size, kept as items are added, checked against the ceilings."""

    def __init__(self, token_budget: int, max_bytes: int | None) -> None:
        self.max_chars = token_budget * CHARS_PER_TOKEN
        self.max_bytes = max_bytes

    def measure(self, items: Sequence[BlockItem]) -> tuple[int, int]:
        parts = [_part(it) for it in items]
        chars = len(_HEADER) + sum(len(p) for p in parts)
        raw = len(_HEADER.encode()) + sum(len(p.encode()) for p in parts) if self.max_bytes is not None else 0
        return chars, raw

    def fits(self, chars: int, raw: int) -> bool:
        return chars <= self.max_chars and (self.max_bytes is None or raw <= self.max_bytes)


def build_block(
    entries: Sequence[Entry],
    task: str,
    settings: BackgroundSettings,
    *,
    max_bytes: int | None = None,
) -> Block:
    """Select, order and render the block a delegate for `task` receives (see the module contract)."""
    entries = list(entries)
    tail_n = min(PROTECTED_TAIL, len(entries), max(settings.max_entries, 0))
    tail = entries[len(entries) - tail_n :] if tail_n else []
    body = entries[: len(entries) - tail_n]
    scores = bm25_scores(task, [e.text for e in entries])
    excluded: list[Excluded] = []
    ranked: list[tuple[float, bool, int, Entry]] = []
    for i, e in enumerate(body):
        s = scores[i]
        if s <= 0.0:
            excluded.append(Excluded(e, 0.0, "no term shared with the task"))
        else:
            ranked.append((s, e.kind != "turn", i, e))
    ranked.sort(key=lambda r: (-r[0], not r[1], -r[2]))
    turn_scores = {round(s, 9) for s, is_outcome, _, _ in ranked if not is_outcome}

    def make(e: Entry, score: float, reason: str, limit: int) -> BlockItem:
        text, cut = truncate_middle(e.text, limit)
        return BlockItem(e, text, score, reason, cut)

    tail_items = [
        make(e, scores[len(body) + j], "protected tail", settings.max_entry_chars) for j, e in enumerate(tail)
    ]
    room = max(settings.max_entries - len(tail_items), 0)
    chosen: list[BlockItem] = []
    size = _Size(settings.token_budget, max_bytes)
    chars, raw = size.measure(tail_items)
    for s, is_outcome, _, e in ranked:
        if len(chosen) >= room:
            excluded.append(Excluded(e, s, f"max_entries ({settings.max_entries}) reached"))
            continue
        reason = "tie-break" if is_outcome and round(s, 9) in turn_scores else "score"
        item = make(e, s, reason, settings.max_entry_chars)
        part = _part(item)
        more_raw = len(part.encode()) if max_bytes is not None else 0
        if size.fits(chars + len(part), raw + more_raw):
            chosen.append(item)
            chars, raw = chars + len(part), raw + more_raw
        else:
            excluded.append(Excluded(e, s, "token budget or size cap reached"))
    # The tail goes in whatever its size; if it alone exceeds a ceiling, shorten it, oldest first.
    for j in range(len(tail_items)):
        while not size.fits(*size.measure([*chosen, *tail_items])):
            it = tail_items[j]
            if len(it.text) <= 64:
                break
            text, _ = truncate_middle(it.entry.text, max(len(it.text) * 3 // 4, 64))
            tail_items[j] = BlockItem(it.entry, text, it.score, it.reason, True)
    where = {id(e): i for i, e in enumerate(entries)}
    items = tuple(
        sorted(
            [*chosen, *tail_items],
            key=lambda it: (-round(it.score, 9), it.entry.kind == "turn", where[id(it.entry)]),
        )
    )
    text = render(items)
    return Block(
        text=text, items=items, excluded=tuple(excluded), tokens=math.ceil(len(text) / CHARS_PER_TOKEN)
    )
