"""A turn event's *digest*: the few values the turn views read, made once when the event is written.

    [offset, length, id, ts, type, turn_id, extra]

`extra` holds only what the views read (see `_extra`, a table by event type): the user's words
(`asked`, cleaned and cut as an episode shows them; `text`, the longer form the graph searches), the
turn keys (`goal`, `plan`, `clone_path`), `session`, the rendered `routed` / `outcome` / `fallback`
lines of an episode (of the turn's main requests only; `fallback` also for an `Escalated` event:
`after escalation A -> B (reason)`), `side` and `rule` of a decision; for a side request (a title,
utility call or summary riding along the turn: `side_kind`), `aside` instead: [kind, "r" (its
decision) or "o" (its outcome), the line], which an episode lists under the turn (an
`UpstreamFailed` is the outcome until its request's own outcome event follows); the `strategy` of a
decision that is not `single` (its plan's, when it has one), a strategy member call's `member` side
(and `judge` when it was a model judge's call), `egress` for an event whose request left the machine
(`store.views.egress`: a cloud outcome, a cloud member or a failure at a cloud backend, a delegate
run), `files` (as written, at most `MAX_FILES`), the `workspace` relative files are under, and a
note's `note` text.
`digest(event, offset, length)` and `digest_of(...)` (the writer's, from the fields it has) make one,
`digests_of(staged, datas, lines, base)` those of the writer's usual batch (offsets from its first
line, plus `base`);
`store.index.turnfold.TurnFold` folds them per turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from glider_cli.domain import model_label
from glider_cli.store.eventlog import events as ev

ASK_CHARS = 200
TEXT_CHARS = 500
# Files a fold remembers (an episode shows the first 20 of them, by first mention).
MAX_FILES = 200
TURN_KEYS = ("goal", "plan", "clone_path")

# (offset in its day file, length in bytes, id, ts, type, turn id, extra)
Digest = list[Any]


def _where(d: Mapping[str, Any]) -> str:
    """`backend/model`, either left out when it is empty."""
    backend = d.get("backend")
    model = d.get("model")
    label = model_label(str(model)) if model else None
    if not backend:
        return label or ""
    return str(backend) + "/" + label if label else str(backend)


def routed_line(d: Mapping[str, Any]) -> str:
    target = d.get("target") or "?"
    where = _where(d)
    s = f"{target}" + (f" via {where}" if where else "")
    if d.get("delegate"):
        s += f" delegate {d['delegate']}"
    if d.get("rule"):
        s += f" (rule {d['rule']})"
    return s


def side_kind(d: Mapping[str, Any]) -> str | None:
    """The kind of side request an event belongs to (`events.SIDE_REQUEST_KINDS`: an outcome's
    `request_kind`, a decision's `family.kind`), None for one of the turn's main requests."""
    kind = d.get("request_kind")
    if kind is None:
        fam = d.get("family")
        kind = fam.get("kind") if type(fam) is dict or isinstance(fam, Mapping) else None
    return kind if isinstance(kind, str) and kind in ev.SIDE_REQUEST_KINDS else None


def _error(d: Mapping[str, Any]) -> str:
    return str(d.get("error") or "").splitlines()[0][:120] if d.get("error") else ""


def outcome_line(t: str, d: Mapping[str, Any]) -> str:
    """An outcome event as a turn's summary says it: answered (with the status and the output tokens),
    refused, failed, cut, or left by the client; never `answered` for a request nothing answered."""
    line, counted = _outcome_head(t, d)
    return _with_tokens(line, d) if counted else line


def _with_tokens(line: str, d: Mapping[str, Any]) -> str:
    out = d.get("output_tokens")
    return f"{line}, {out} tokens out" if out is not None else line


def _outcome_head(t: str, d: Mapping[str, Any]) -> tuple[str, bool]:
    """`outcome_line` up to its output tokens, and whether they follow it: the count is the one part
    of the line that changes with every request (`digests_of` remembers the rest)."""
    status = f" status {d['status']}" if d.get("status") is not None else ""
    how = d.get("outcome")
    local = t == ev.FULFILLED_LOCAL
    where = _where(d) if local else str(d.get("backend") or "origin")
    if how == "abandoned":  # a Cursor run whose stream the client never opened
        return f"abandoned: the client never read the answer{' of ' + where if where else ''}{status}", False
    if t in (ev.FULFILLED_LOCAL, ev.ORIGIN_PASSTHROUGH):
        at = f" at {where}" if where else ""
        if how == "refused":  # the capability gate: no backend was asked
            err = _error(d)
            return "refused" + (" locally" if local else "") + (f": {err}" if err else ""), False
        if how == "failed" and d.get("status") != 200:  # every attempt failed: no answer
            return f"failed{at}{status}" + (f": {_error(d)}" if d.get("error") else ""), False
        if how in ("failed", "cut"):
            return f"{'cut short' if how == 'cut' else 'failed mid-stream'}{at}{status}", True
        if d.get("client_disconnected"):
            if not d.get("status"):
                return f"the client left before {where or 'the backend'} answered", False
            return f"the client left during the answer{' of ' + where if where else ''}{status}", True
        if local:
            return f"answered locally{' by ' + where if where else ''}{status}", True
        return f"answered by {where}{status}", True
    if t == ev.UPSTREAM_FAILED:
        err = _error(d)
        return f"failed at {d.get('backend') or 'upstream'}{status}{': ' + err if err else ''}", False
    summary = str(d.get("summary") or "").splitlines()[0][:120] if d.get("summary") else ""
    changed = changed_line(d)
    line = f"delegated to {d.get('vendor') or '?'} exit {d.get('exit_code')}"
    return line + (f": {summary}" if summary else "") + (f"; changed {changed}" if changed else ""), False


def changed_line(d: Mapping[str, Any]) -> str | None:
    """A `DelegateRun`'s changes in the workspace (`delegate.changes`): `2 files +3 −1`, `nothing`;
    None when the event does not say (older events, a run that could not snapshot)."""
    c = d.get("changes")
    if not isinstance(c, Mapping) or c.get("source") in (None, "none"):
        return None
    files = c.get("files")
    n = len(files) if isinstance(files, list) else 0
    if not n:
        return "nothing"
    return f"{n} file{'s' if n != 1 else ''} +{c.get('added', 0)} −{c.get('removed', 0)}"


def left_machine(t: Any, d: Mapping[str, Any]) -> bool:
    """Whether this event's request left the machine (see `store.views.egress`)."""
    if t == ev.ORIGIN_PASSTHROUGH or t == ev.DELEGATE_RUN:
        return True
    return (t == ev.STRATEGY_MEMBER or t == ev.UPSTREAM_FAILED) and d.get("side") == "cloud"


def _asked(ask: str, limit: int) -> str:
    """`" ".join(ask.split())[:limit]`, cleaning no more of a long `ask` than it takes: the words of
    a prefix are the first words of the whole (the last one perhaps cut), so a prefix that cleans
    to `limit` characters or more gives them. A prefix with no whitespace but single spaces inside
    (`isprintable` rules out every other whitespace character) is as cleaned already."""
    n = 2 * limit
    while True:
        head = ask[:n]
        if head.isprintable() and "  " not in head and head[0] != " " and head[-1] != " ":
            asked = head
        else:
            asked = " ".join(head.split())
        if len(asked) >= limit or n >= len(ask):
            return asked[:limit]
        n *= 4


def _opened(d: Mapping[str, Any]) -> dict[str, Any]:
    x: dict[str, Any] = {}
    ask = d.get("goal") or d.get("ask") or ""
    if ask:
        run = d.get("delegate_of")
        mark = f"[delegate run of turn {str(run)[:12]}] " if run else ""
        x["asked"] = mark + _asked(str(ask), ASK_CHARS - len(mark))
        if isinstance(ask, str):
            x["text"] = ask[:TEXT_CHARS]
    if isinstance(d.get("session_id"), str) and d["session_id"]:
        x["session"] = d["session_id"]
    return _turn_keys(d, x)


def _turn_keys(d: Mapping[str, Any], x: dict[str, Any]) -> dict[str, Any]:
    for k in TURN_KEYS:
        v = d.get(k)
        if isinstance(v, str) and v:
            x[k] = v
    return x


def _decided(d: Mapping[str, Any]) -> dict[str, Any]:
    kind = side_kind(d)
    if kind is not None:
        return {"aside": [kind, "r", routed_line(d)]}
    x: dict[str, Any] = {"routed": routed_line(d), "side": d.get("target"), "rule": d.get("rule")}
    plan = d.get("plan")
    strategy = plan.get("strategy") if isinstance(plan, dict) else None
    strategy = strategy or d.get("strategy")
    if isinstance(strategy, str) and strategy and strategy != "single":
        x["strategy"] = strategy
    return x


def _member(d: Mapping[str, Any]) -> dict[str, Any]:
    x: dict[str, Any] = {"member": str(d.get("side") or "")}
    if d.get("role") == "judge":
        x["judge"] = True
    if d.get("side") == "cloud":
        x["egress"] = True
    return x


def _fallback(d: Mapping[str, Any]) -> dict[str, Any]:
    return {"fallback": f" after fallback {d.get('from')} -> {d.get('to')}"}


def _escalated(d: Mapping[str, Any]) -> dict[str, Any]:
    """An escalation is shown where a fallback is (it is one, for an answer that could not be used)."""
    return {"fallback": f" after escalation {d.get('from')} -> {d.get('to')} ({d.get('reason')})"}


# An outcome's part of `extra` before its token count: (side kind, the line up to the count,
# whether the count follows, whether the request left the machine).
_OutcomeParts = tuple["str | None", str, bool, bool]


def _outcome_parts(t: str, d: Mapping[str, Any]) -> _OutcomeParts:
    line, counted = _outcome_head(t, d)
    return side_kind(d), line, counted, left_machine(t, d)


def _outcome_extra(p: _OutcomeParts, d: Mapping[str, Any]) -> dict[str, Any]:
    kind, line, counted, egress = p
    if counted:
        line = _with_tokens(line, d)
    x: dict[str, Any] = {"outcome": line} if kind is None else {"aside": [kind, "o", line]}
    if egress:
        x["egress"] = True
    return x


def _outcome(t: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def extra(d: Mapping[str, Any]) -> dict[str, Any]:
        return _outcome_extra(_outcome_parts(t, d), d)

    return extra


def _note(d: Mapping[str, Any]) -> dict[str, Any]:
    return {"note": d["text"]} if isinstance(d.get("text"), str) else {}


# An event type's part of `extra`, in the order the keys are written (then `files` and `workspace`
# for any type); a type not listed has none.
_EXTRA: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    ev.TURN_OPENED: _opened,
    ev.ROUTE_DECIDED: _decided,
    ev.STRATEGY_MEMBER: _member,
    ev.FALLBACK_USED: _fallback,
    ev.ESCALATED: _escalated,
    **{t: _outcome(t) for t in ev.OUTCOME_TYPES},
    ev.NOTE: _note,
    ev.TURN_CONTEXT: lambda d: _turn_keys(d, {}),
}


def _extra(t: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    part = _EXTRA.get(t) if type(t) is str else None
    x = {} if part is None else part(d)
    return _with_files(x, d) if "files" in d else x


def _with_files(x: dict[str, Any], d: Mapping[str, Any]) -> dict[str, Any]:
    """`x` with the event's `files` (and `workspace`) added when it names any (a copy: a part
    `digests_of` remembered is shared)."""
    files = d.get("files")
    if isinstance(files, list):
        fs = [f for f in files if isinstance(f, str) and f]
        if fs:
            x = dict(x)
            x["files"] = list(dict.fromkeys(fs))[:MAX_FILES]
            if isinstance(d.get("workspace"), str) and d["workspace"]:
                x["workspace"] = d["workspace"]
    return x


def digest(event: Mapping[str, Any], offset: int = -1, length: int = 0) -> Digest:
    """The digest of one event (its turn id may be None: such events are in no fold)."""
    d = event.get("data") or {}
    t = event.get("type")
    return [offset, length, str(event.get("id")), str(event.get("ts")), t, event.get("turn_id"), _extra(t, d)]


def digest_of(id_: str, ts: str, type_: str, turn_id: str | None, data: Mapping[str, Any]) -> Digest:
    """`digest` of the event made of these fields (as the event writer has them), before its offset
    and length are known."""
    return [-1, 0, id_, ts, type_, turn_id, _extra(type_, data)]


# `digests_of` remembers the parts of `extra` that repeat from request to request (a rule's
# decision; an outcome's line up to its token count), keyed by the values they are made of. Only
# for data encoded strictly as JSON (the writer's usual batch): every string is a `str`, so a key
# stored only when its values are strings or None (an outcome's status also an int, its type in the
# key) is hit only by those same values, never by `1 == 1.0 == True`. Nested records other than a
# dict or None, and unhashable values, are not remembered. A remembered dict is shared: no one
# changes a digest's `extra` (`_with_files` copies).
_MEMO_MAX = 512
_STR_OR_NONE = frozenset((str, type(None)))
_decided_memo: dict[tuple[Any, ...], dict[str, Any]] = {}
_outcome_memo: dict[tuple[Any, ...], _OutcomeParts] = {}


def _remember(memo: dict[Any, Any], key: tuple[Any, ...], value: Any, plain: tuple[Any, ...]) -> Any:
    """`value`, kept under `key` when each of `plain` is a string or None."""
    if _STR_OR_NONE.issuperset(map(type, plain)):
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[key] = value
    return value


def _decided_remembered(d: Mapping[str, Any]) -> dict[str, Any]:
    g = d.get
    fam, plan = g("family"), g("plan")
    if fam is None:
        fk = None
    elif type(fam) is dict:
        fk = fam.get("kind")
    else:
        return _decided(d)
    if plan is None:
        ps = None
    elif type(plan) is dict:
        ps = plan.get("strategy")
    else:
        return _decided(d)
    key = (
        g("request_kind"), fk, g("target"), g("backend"), g("model"), g("delegate"), g("rule"), ps,
        g("strategy"),
    )  # fmt: skip
    try:
        x = _decided_memo.get(key)
    except TypeError:  # a list or a dict among them
        return _decided(d)
    return x if x is not None else _remember(_decided_memo, key, _decided(d), key)


def _outcome_remembered(t: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def extra(d: Mapping[str, Any]) -> dict[str, Any]:
        g = d.get
        fam = g("family")
        if fam is None:
            fk = None
        elif type(fam) is dict:
            fk = fam.get("kind")
        else:
            return _outcome_extra(_outcome_parts(t, d), d)
        status = g("status")
        # The type, the status (and its type) and whether the client left, then the values that must
        # be strings or None (`key[4:]`).
        key = (
            t, status, type(status), not g("client_disconnected"),
            g("request_kind"), fk, g("outcome"), g("backend"), g("model"), g("error"), g("side"),
        )  # fmt: skip
        try:
            p = _outcome_memo.get(key)
        except TypeError:
            return _outcome_extra(_outcome_parts(t, d), d)
        if p is None:
            p = _outcome_parts(t, d)
            if status is None or type(status) is int:
                _remember(_outcome_memo, key, p, key[4:])
        # `_outcome_extra`, without its calls.
        kind, line, counted, egress = p
        if counted:
            out = g("output_tokens")
            if out is not None:
                line = f"{line}, {out} tokens out"
        x: dict[str, Any] = {"outcome": line} if kind is None else {"aside": [kind, "o", line]}
        if egress:
            x["egress"] = True
        return x

    return extra


def _opened_plain(d: Mapping[str, Any]) -> dict[str, Any]:
    """`_opened` of data encoded strictly as JSON (every string a `str`), without its calls for
    the usual plain ask."""
    g = d.get
    goal = g("goal")
    ask = goal or g("ask")
    if ask:
        if type(ask) is not str or g("delegate_of"):
            return _opened(d)
        x: dict[str, Any] = {"asked": _asked(ask, ASK_CHARS), "text": ask[:TEXT_CHARS]}
    else:
        x = {}
    v = g("session_id")
    if v and type(v) is str:
        x["session"] = v
    # `_turn_keys`, unrolled.
    if goal and type(goal) is str:
        x["goal"] = goal
    v = g("plan")
    if v and type(v) is str:
        x["plan"] = v
    v = g("clone_path")
    if v and type(v) is str:
        x["clone_path"] = v
    return x


# `_EXTRA` as `digests_of` uses it: the parts that repeat are remembered (a delegate run's line is
# of its own run's values: nothing repeats).
_EXTRA_REMEMBERED: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    **_EXTRA,
    ev.TURN_OPENED: _opened_plain,
    ev.ROUTE_DECIDED: _decided_remembered,
    **{t: _outcome_remembered(t) for t in ev.OUTCOME_TYPES if t != ev.DELEGATE_RUN},
}


# The `extra` of an event whose type has none: one dict, shared (no one changes a digest's `extra`).
_NO_EXTRA: dict[str, Any] = {}


def digests_of(
    staged: Iterable[tuple[str, str, tuple[str, Any, str | None]]],
    datas: Iterable[Mapping[str, Any]],
    lines: Iterable[bytes],
    base: int = 0,
) -> list[Digest]:
    """The digests of the stamped events (id, ts, (type, data as staged, turn_id)) that have a turn,
    in one go, their data as made and encoded strictly as JSON (`datas`) and their `lines` as
    written, in the same order: each digest's offset is its line's from the first line's plus `base`
    (where the writer expects them to start: `IndexAppender.record` makes it the file's). The same
    digests as `digest_of` gives."""
    out: list[Digest] = []
    append = out.append
    parts = _EXTRA_REMEMBERED
    off = base
    # Of one length (the writer's batch): zip without `strict=`, whose keyword alone costs a call
    # ~1.5k instructions on the write path.
    for (id_, ts, (t, _, turn)), d, line in zip(staged, datas, lines):  # noqa: B905
        n = len(line)
        if turn:
            part = parts.get(t) if type(t) is str else None
            x = _NO_EXTRA if part is None else part(d)
            append([off, n, id_, ts, t, turn, _with_files(x, d) if "files" in d else x])
        off += n
    return out
