"""Keyword search over entities: a BM25 inverted index with fuzzy fallback for unknown terms.

- Each entity is a document made of its name, relative path, qualified name and text (note text,
  a turn's ask). Tokens are lower-cased `\\w+` runs plus their camelCase / snake_case parts, so
  `IndexTree`, `index_tree` and `index` all find `index_tree`.
- A query term made of several tokens (`core.py`) needs all of them. Scores are BM25 (k1=1.2,
  b=0.75): rare terms weigh more. An exact name match adds the term's idf once more.
- A term with no posting is matched to the closest vocabulary token (rapidfuzz ratio ≥ 80, terms of
  4+ characters); the substitution is reported to the caller.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from rapidfuzz import fuzz, process

from glider_cli.store import gcpause
from glider_cli.store.entities.graph import Entity, Graph
from glider_cli.values import Frozen

K1 = 1.2
B = 0.75
FUZZY_CUTOFF = 80.0

_WORDS = re.compile(r"\w+", re.UNICODE)
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    out: list[str] = []
    for w in _WORDS.findall(text):
        lw = w.lower()
        out.append(lw)
        parts = _PARTS.findall(w)
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


def entity_text(e: Entity) -> str:
    d = e.data
    bits = [e.name]
    for k in ("rel", "qualname", "text", "ask"):
        v = d.get(k)
        if isinstance(v, str) and v:
            bits.append(v)
    return " ".join(bits)


class Hit(Frozen):
    entity: Entity
    score: float
    matched: tuple[str, ...]

    def __init__(self, entity: Entity, score: float, matched: tuple[str, ...]) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.entity = entity
        s.score = score
        s.matched = matched


class SearchIndex:
    """Built once from a graph; `search` is read-only and thread-safe."""

    def __init__(self, graph: Graph) -> None:
        with gcpause.paused():
            self._build(graph)

    def _build(self, graph: Graph) -> None:
        self.version = graph.version
        self.docs: list[Entity] = []
        self.postings: dict[str, dict[int, int]] = {}
        lengths: list[int] = []
        for e in graph.entities.values():
            i = len(self.docs)
            self.docs.append(e)
            toks = tokens(entity_text(e))
            lengths.append(len(toks))
            for t in toks:
                p = self.postings.get(t)
                if p is None:
                    self.postings[t] = {i: 1}
                else:
                    p[i] = p.get(i, 0) + 1
        n = len(self.docs)
        avg = (sum(lengths) / n) if n else 1.0
        self._norm = [K1 * (1 - B + B * ln / (avg or 1.0)) for ln in lengths]
        self._names = [e.name.lower() for e in self.docs]
        self._vocab: list[str] | None = None
        self.n = n

    def idf(self, token: str) -> float:
        df = len(self.postings.get(token, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def fuzzy(self, term: str) -> tuple[str, float] | None:
        if len(term) < 4:
            return None
        if self._vocab is None:
            self._vocab = list(self.postings)
        best = process.extractOne(term, self._vocab, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
        return (best[0], float(best[1])) if best else None

    def term_scores(self, term: str) -> dict[int, float]:
        """BM25 score per document for one query term (all its tokens must match)."""
        toks = [w.lower() for w in _WORDS.findall(term)] or [term]
        if len(toks) == 1 and toks[0] not in self.postings:
            # `writer_cache` or `EventWriter` as typed: fall back to all of its parts.
            parts = tokens(term)[1:]
            if len(parts) > 1 and all(p in self.postings for p in parts):
                toks = parts
        result: dict[int, float] | None = None
        for t in toks:
            posting = self.postings.get(t)
            if not posting:
                return {}
            idf = self.idf(t)
            k1p = K1 + 1
            norm = self._norm
            scores = {d: idf * tf * k1p / (tf + norm[d]) for d, tf in posting.items()}
            if len(toks) == 1:
                names = self._names
                for d in scores:
                    if names[d] == t:
                        scores[d] += idf
            if result is None:
                result = scores
            else:
                result = {d: s + scores[d] for d, s in result.items() if d in scores}
        return result or {}

    def search(
        self,
        groups: Iterable[Iterable[str]],
        *,
        accept: Callable[[Entity], bool] | None = None,
        limit: int = 20,
    ) -> tuple[list[Hit], dict[str, str]]:
        """Documents matching every group (any term of a group); returns hits and fuzzy substitutions."""
        with gcpause.paused():
            return self._search(groups, accept, limit)

    def _search(
        self, groups: Iterable[Iterable[str]], accept: Callable[[Entity], bool] | None, limit: int
    ) -> tuple[list[Hit], dict[str, str]]:
        fuzzy: dict[str, str] = {}
        total: dict[int, float] | None = None
        matched: dict[int, list[str]] = {}
        for group in groups:
            gscores: dict[int, float] = {}
            for term in group:
                scores = self.term_scores(term)
                used = term
                if not scores:
                    sub = self.fuzzy(term)
                    if sub is None:
                        continue
                    fuzzy[term] = sub[0]
                    used = sub[0]
                    scores = {d: s * sub[1] / 100 for d, s in self.term_scores(sub[0]).items()}
                for d, s in scores.items():
                    gscores[d] = gscores.get(d, 0.0) + s
                    matched.setdefault(d, []).append(used)
            if total is None:
                total = gscores
            else:
                total = {d: s + gscores[d] for d, s in total.items() if d in gscores}
            if not total:
                return [], fuzzy
        if not total:
            return [], fuzzy
        docs = self.docs
        pool = total.items() if accept is None else [(d, s) for d, s in total.items() if accept(docs[d])]
        ranked = heapq.nsmallest(limit, pool, key=lambda kv: (-kv[1], docs[kv[0]].id))
        hits = [Hit(docs[d], round(s, 4), tuple(dict.fromkeys(matched.get(d, ())))) for d, s in ranked]
        return hits, fuzzy
