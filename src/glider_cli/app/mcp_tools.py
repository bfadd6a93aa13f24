"""The tools and resources Glider offers agents over MCP, as plain calls on the store (no SDK here).

`server.mcp_server` puts them on the wire (`glider mcp` on stdio, `glider serve`'s `/mcp`); this module
is what they do. Every tool answers an `Answer`: `text` a model reads, `structured` (a JSON object: the
MCP result's `structuredContent`) and `is_error` (a bad argument, an unknown turn, a workspace that is
not one: the message says what to change; never an exception out of `call`).

Tools (each input schema is in `TOOLS`; every tool takes an optional `workspace`):
- `context_query(query)`: the spec's query language, parsed and answered by exactly what
  `glider context query` uses (`ContextStore.query`: `store.queries.query_parse` and `.query`), then
  narrowed to the workspace (`app.mcp_scope`): a result whose path lies outside it, or that belongs to a
  turn of another workspace, is left out (`omitted` counts them); a query in one turn of another
  workspace, or a graph query anchored on an entity outside it, is an error.
- `continuity(task?)`: the block a delegate for `task` would be given now in the workspace
  (`delegate.operations.block_for` over the workspace's continuity record, as `glider continuity block`
  does); with no task, ranked against the newest user turn of the record.
- `recent_turns(limit?)`: the workspace's last turns from the store index (`ContextStore.folds`):
  where each went, by which rule, its outcome (a delegate run's says what it changed) and its files.
- `route_explain(message, tools?, tokens?, profile?)`: `app.explain` (`glider route explain`).
Resources: `glider://workspace/continuity` (the record, Markdown) and `glider://workspace/turns` (the
turn index: `recent_turns` of up to `TURNS_MAX`, JSON), for the server's default workspace.

Nothing secret leaves: the store and the record are redacted before they reach disk, and every answer
goes through `store.eventlog.redact.redact` once more. Calls are serialised (one lock): the store's
caches and the turn index are read by one call at a time, as by one CLI command.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from glider_cli.app.mcp_scope import Owners, ScopeError, inside, workspace_for
from glider_cli.config.settings import Settings
from glider_cli.errors import GliderError
from glider_cli.paths import Paths
from glider_cli.store.context_store import ContextStore
from glider_cli.store.eventlog.redact import redact
from glider_cli.values import Frozen, init_fields

MAX_QUERY_CHARS = 2_000
MAX_TASK_CHARS = 8_000
MAX_MESSAGE_CHARS = 100_000
TURNS_DEFAULT = 10
TURNS_MAX = 50
CONTINUITY_URI = "glider://workspace/continuity"
TURNS_URI = "glider://workspace/turns"

_WORKSPACE = {
    "type": "string",
    "description": "Absolute path of another project to ask about. Default: the project this agent runs in.",
}


class ToolSpec(Frozen):
    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]

    def __init__(self, name: str, title: str, description: str, input_schema: Mapping[str, Any]) -> None:
        init_fields(self, name, title, description, input_schema)


class Answer(Frozen):
    text: str
    structured: dict[str, Any]
    is_error: bool

    def __init__(self, text: str, structured: dict[str, Any], is_error: bool = False) -> None:
        init_fields(self, text, structured, is_error)


def _schema(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**props, "workspace": _WORKSPACE},
        "required": list(required),
        "additionalProperties": False,
    }


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "context_query",
        "Query Glider's context store",
        "Search what Glider recorded of this project's earlier turns (across every model and CLI that "
        "served them) and the indexed code: files, directories, symbols, notes, and each turn's goal, "
        "plan and clone_path. Query language: `<turn_id> [key=goal|plan|clone_path|file-tree] "
        "[kind=note|file|dir|symbol] [prov=RUNTIME|EXTRACTED|INFERRED] [path=a->b] [neigh=id] [explain=id] "
        "[communities=1] [limit=N] keyword…`; turn id `*` searches every turn; `a OR b` (or `a|b`) "
        "matches either. Examples: `* parser OR lexer`, `* kind=symbol route`, `<turn> key=goal`, "
        "`* explain=src/app.py`. Turn ids come from recent_turns.",
        _schema(
            {
                "query": {
                    "type": "string",
                    "description": "The query, e.g. `* kind=file config` or `<turn_id> goal OR plan`.",
                    "maxLength": MAX_QUERY_CHARS,
                }
            },
            ("query",),
        ),
    ),
    ToolSpec(
        "continuity",
        "Earlier in the calling session",
        "What happened earlier in this project's session, as Glider hands it to a delegate: the user's "
        "turns and what earlier delegates (other agent CLIs) changed, most relevant to `task` first, the "
        "two most recent always included. Use it to pick up the thread after a turn went to another "
        "model or CLI, or after a compaction.",
        _schema(
            {
                "task": {
                    "type": "string",
                    "description": "What you are about to do; entries are ranked against it. Default: "
                    "the newest user turn.",
                    "maxLength": MAX_TASK_CHARS,
                }
            }
        ),
    ),
    ToolSpec(
        "recent_turns",
        "Recent turns in this project",
        "The project's last turns as Glider routed them, oldest first: what was asked, where it went "
        "(local model, cloud, a delegate CLI) by which rule, the outcome (a delegate run says what it "
        "changed) and the files involved. Turn ids can be passed to context_query.",
        _schema(
            {
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": TURNS_MAX,
                    "description": f"How many of the newest turns (default {TURNS_DEFAULT}).",
                }
            }
        ),
    ),
    ToolSpec(
        "route_explain",
        "Explain a routing decision",
        "Which of Glider's routing rules a user message would obey and why: every rule's verdict in "
        "priority order, then the decision (local or cloud, backend, model, strategy).",
        _schema(
            {
                "message": {
                    "type": "string",
                    "description": "The user message to route.",
                    "maxLength": MAX_MESSAGE_CHARS,
                },
                "tools": {
                    "type": "boolean",
                    "description": "The request carries tools, as a coding agent's does (default false).",
                },
                "tokens": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Use this token estimate instead of measuring the message.",
                },
                "profile": {
                    "type": "string",
                    "description": "A bundled profile to explain against instead of the configured one.",
                },
            },
            ("message",),
        ),
    ),
)
_BY_NAME = {t.name: t for t in TOOLS}


class Tools(Protocol):
    """What the MCP server calls: `McpTools` itself, or a stand-in that runs it elsewhere
    (`server.mcp_server.WorkerTools`)."""

    def call(self, name: str, args: Mapping[str, Any] | None, named: str | None = None) -> Answer: ...

    def read_resource(self, uri: str, named: str | None = None) -> tuple[str, str]: ...


class _BadArgument(GliderError):
    pass


def _error(message: str) -> Answer:
    return Answer(message, {"error": message}, is_error=True)


def _check(spec: ToolSpec, args: dict[str, Any]) -> None:
    """Reject what the input schema does not allow (the SDK does not validate arguments); a whole
    number sent as a string is taken as the number (the MCP Inspector sends every argument so)."""
    props: Mapping[str, Any] = spec.input_schema["properties"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        raise _BadArgument(f"unknown argument {unknown[0]!r}; {spec.name} takes {', '.join(props)}")
    for name in spec.input_schema["required"]:
        if args.get(name) is None:
            raise _BadArgument(f"{spec.name} needs {name!r}")
    for name, value in list(args.items()):
        if value is None:
            continue
        want = props[name]["type"]
        if want == "integer" and isinstance(value, str) and value.isascii() and value.isdigit():
            value = args[name] = int(value)  # clients that send every argument as a string
        ok = {
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
        }[want]
        if not ok:
            raise _BadArgument(f"{name} must be a {want}, not {type(value).__name__}")
        limit = props[name].get("maxLength")
        if limit is not None and len(value) > limit:
            raise _BadArgument(f"{name} is {len(value)} characters; the limit is {limit}")
        low, high = props[name].get("minimum"), props[name].get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise _BadArgument(f"{name}={value} must be {bounds}")


class McpTools:
    """The tools over one GLIDER_HOME. `settings()` gives the settings in force (a server's live ones);
    `default` is the workspace of a call that names none (`glider mcp`: its working directory)."""

    def __init__(
        self,
        paths: Paths,
        store: ContextStore,
        settings: Callable[[], Settings],
        *,
        environ: Mapping[str, str],
        config: str | None = None,
        profile: str | None = None,
        default: Path | None = None,
    ) -> None:
        self.paths = paths
        self.store = store
        self.settings = settings
        self.environ = environ
        self.config = config
        self.profile = profile
        self.default = default
        self._lock = threading.Lock()
        self._known: dict[str, str | None] = {}  # turn -> clone_path, as of `_generation`
        self._generation = -1

    def call(self, name: str, args: Mapping[str, Any] | None, named: str | None = None) -> Answer:
        """Run one tool; every failure a caller can fix is an error answer (see the module contract)."""
        spec = _BY_NAME.get(name)
        if spec is None:
            return _error(f"unknown tool {name!r}; the tools are {', '.join(_BY_NAME)}")
        args = dict(args or {})
        try:
            _check(spec, args)
            ws = workspace_for(args.pop("workspace", None), named, self.default)
            with self._lock:
                answer: Answer = getattr(self, "_" + name)(ws, args)
        except GliderError as exc:
            return _error(exc.message + (f"\n{exc.hint}" if exc.hint else ""))
        return Answer(redact(answer.text), redact(answer.structured), answer.is_error)

    # -- tools -------------------------------------------------------------------------------------

    def _context_query(self, ws: Path, args: dict[str, Any]) -> Answer:
        from glider_cli.store.queries.query_parse import parse

        text: str = args["query"]
        q = parse(text)
        owners = Owners(self._clone_path)
        if q.turn_id != "*" and self._clone_path(q.turn_id) is not None and not owners.belongs(q.turn_id, ws):
            return _error(
                f"turn {q.turn_id!r} is not in {ws} (its workspace: {owners.of(q.turn_id)}); pass "
                "workspace=<that path> to ask there"
            )
        ans = self.store.query(text)
        if q.turn_id == "*":
            self._refresh()  # results of any turn: know them all (the query has just read the turns)
        keep = _Keep(self.store, owners, ws)
        results = [r for r in ans.results if keep.result(r)]
        detail = ans.detail
        if detail is not None:
            anchors = [detail["entity"]["id"]] if ans.mode == "explain" else []
            anchors += [detail["from"], detail["to"]] if ans.mode == "path" else []
            outside = [a for a in anchors if not keep.entity(a)]
            if outside:
                return _error(f"{outside[0]!r} is not in {ws}; pass workspace=<its project> to ask there")
            detail = keep.detail(ans.mode, detail)
        out = {
            "workspace": str(ws),
            "query": text,
            "mode": ans.mode,
            "results": results,
            "detail": detail,
            "fuzzy": ans.fuzzy,
            "omitted": len(ans.results) - len(results),
        }
        return Answer(_query_text(out), out)

    def _clone_path(self, turn: str) -> str | None:
        """A turn's clone_path from the turns known at the last full read, else from its own fold."""
        if turn in self._known:
            return self._known[turn]
        fold = self.store.index.fold_of(turn, self.store.settings.retain_days)
        return fold.key("clone_path") if fold is not None else None

    def _refresh(self) -> None:
        """Know every turn's clone_path: read again (`ContextStore.folds`) only once the turn index
        says the turns changed; a turn newer than the last read is looked up on its own."""
        if self._generation != self.store.index.generation:
            self._known = {t: f.key("clone_path") for t, f in self.store.folds().items()}
            self._generation = self.store.index.generation

    def _continuity(self, ws: Path, args: dict[str, Any]) -> Answer:
        from glider_cli.delegate import continuity, operations, ranking

        record = continuity.read(self.paths, ws)
        task = args.get("task")
        settings = self.settings()
        if task:
            block = operations.block_for(settings, record.entries, task)
        else:
            turns = [e for e in record.entries if e.kind == "turn"]
            task = turns[-1].text if turns else ""
            block = ranking.build_block(record.entries, task, settings.context.background)
        out = {
            "workspace": str(ws),
            "record": str(continuity.record_path(self.paths, ws)),
            "entries": len(record.entries),
            "task": task,
            **block.to_dict(),
        }
        text = block.text or f"Nothing recorded yet for {ws}: its continuity record has no entry."
        return Answer(text, out)

    def _recent_turns(self, ws: Path, args: dict[str, Any]) -> Answer:
        turns = self.turns(ws, args.get("limit") or TURNS_DEFAULT)
        out = {"workspace": str(ws), "turns": turns}
        if not turns:
            days = self.store.settings.retain_days
            return Answer(f"No turn recorded for {ws} in the last {days} days.", out)
        lines = [f"{len(turns)} turns in {ws}, oldest first:"]
        for t in turns:
            lines.append(f"- {t['turn_id']} {t['first_ts']}: {t['asked'] or '(no user text)'}")
            rule = f" (rule {t['rule']})" if t["rule"] else ""
            lines.append(f"  routed {t['routed']}{rule}; {t['outcome']}")
            if t["files"]:
                lines.append("  files: " + ", ".join(t["files"]))
        return Answer("\n".join(lines), out)

    def turns(self, ws: Path, limit: int) -> list[dict[str, Any]]:
        """The workspace's newest `limit` turns, oldest first."""
        from glider_cli.store.views import episodes

        folds = self.store.folds()
        owners = Owners.of_folds(folds.values())
        mine = sorted((f for f in folds.values() if owners.belongs(f.turn, ws)), key=lambda f: f.first_id)
        out = []
        for f in mine[-limit:]:
            ep = episodes.from_fold(f).to_dict()
            _, side, rule = f.routed[1] if f.routed else (None, None, None)
            out.append(
                {
                    "turn_id": f.turn,
                    "first_ts": ep["first_ts"],
                    "last_ts": ep["last_ts"],
                    "asked": ep["asked"],
                    "routed": ep["routed"],
                    "side": side,
                    "rule": rule,
                    "outcome": ep["outcome"],
                    "strategy": ep["strategy"],
                    "files": ep["files"],
                    "session": f.session[1] if f.session else None,
                }
            )
        return out

    def _route_explain(self, ws: Path, args: dict[str, Any]) -> Answer:
        from glider_cli.app.explain import ExplainInput, explain

        inp = ExplainInput(
            message=args["message"],
            tools=bool(args.get("tools")),
            tokens=args.get("tokens"),
            config=None if args.get("profile") else self.config,
            profile=args.get("profile") or self.profile,
        )
        explained = explain(inp, environ=self.environ)
        d = explained.to_dict()
        lines = [f"config {explained.source}"]
        for r in d["trace"]:
            mark = "matched" if r["matched"] else "no"
            lines.append(f"- {r['rule']}: {mark}, {r['reason']}")
        where = f" ({d['where']})" if d.get("where") else ""
        lines.append(f"decision: {d['target']} via rule {d['rule']}{where}")
        lines.append(
            f"backend {d['backend'] or '-'}, model {d['model'] or '(client model)'}, strategy {d['strategy']}"
        )
        if d.get("delegate"):
            lines.append(f"delegate flag {d['delegate']}")
        return Answer("\n".join(lines), {"config": explained.source, **d})

    # -- resources ---------------------------------------------------------------------------------

    def read_resource(self, uri: str, named: str | None = None) -> tuple[str, str]:
        """(text, MIME type) of one resource of the default workspace; GliderError for an unknown one."""
        from glider_cli.delegate import continuity

        ws = workspace_for(None, named, self.default)
        with self._lock:
            if uri == CONTINUITY_URI:
                return redact(continuity.serialize(continuity.read(self.paths, ws))), "text/markdown"
            if uri == TURNS_URI:
                body = {"workspace": str(ws), "turns": self.turns(ws, TURNS_MAX)}
                return json.dumps(redact(body), ensure_ascii=False, indent=1), "application/json"
        raise ScopeError(f"no resource {uri!r}; the resources are {CONTINUITY_URI} and {TURNS_URI}")


class _Keep:
    """What of a query's answer belongs to the workspace (see the module contract)."""

    def __init__(self, store: ContextStore, owners: Owners, ws: Path) -> None:
        self.store = store
        self.owners = owners
        self.ws = ws

    def result(self, r: Mapping[str, Any]) -> bool:
        path = r.get("path")
        if path:
            return inside(str(path), self.ws)
        return self.owners.belongs(r.get("turn"), self.ws)

    def entity(self, entity_id: str) -> bool:
        if entity_id.startswith("turn:"):
            return self.owners.belongs(entity_id[5:], self.ws)
        e = self.store.graph().entities.get(entity_id)
        return e is not None and self.result({"path": e.path, "turn": e.turn})

    def detail(self, mode: str, d: dict[str, Any]) -> dict[str, Any]:
        d = dict(d)
        if mode == "explain":
            d["neighbours"] = [n for n in d["neighbours"] if self.result(n)]
            d["hubs"] = [h for h in d["hubs"] if self.result(h)]
            d["touched_by"] = [t for t in d["touched_by"] if self.entity(t)]
        elif mode == "path":
            d["path"] = [p for p in d["path"] if self.result(p)]
        elif mode == "communities":
            kept = []
            for c in d["communities"]:
                members = [m for m in c["members"] if self.entity(m)]
                if members:
                    kept.append({**c, "members": members, "hub": c["hub"] if self.entity(c["hub"]) else None})
            d["communities"] = kept
        return d


def _where(r: Mapping[str, Any]) -> str:
    where = str(r.get("rel") or r.get("path") or "")
    return f"{where}:{r['line']}" if r.get("line") else where


def _query_text(out: Mapping[str, Any]) -> str:
    lines = [f"note: no match for {t!r}; matched {u!r} instead" for t, u in out["fuzzy"].items()]
    if out["detail"] is not None:
        lines.append(json.dumps(out["detail"], ensure_ascii=False, indent=1))
        return "\n".join(lines)
    results = out["results"]
    omitted = f" ({out['omitted']} outside {out['workspace']} left out)" if out["omitted"] else ""
    lines.append(f"{len(results)} results{omitted}")
    for r in results:
        if r["kind"] == "key":
            lines.append(f"- {r['turn']} {r['name']} ({r['prov']}): {r['value']}")
            continue
        what = r.get("symbol_kind") or r.get("edge") or r["kind"]
        where = _where(r)
        at = f" at {where}" if where and where != r["name"] else ""
        lines.append(f"- {what} {r['name']}{at} ({r['prov']}, score {r['score']:g}) id {r['id']}")
    return "\n".join(lines)
