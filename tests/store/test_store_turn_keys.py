"""`turns.turn_keys` (goal, plan, clone_path from what clients send), the RUNTIME join of touched files to
the indexed entities of the workspace, and hubs that are code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.protocol.parse import parse_request
from glider_cli.protocol.reply_tap import IssuedCall
from glider_cli.store.context_store import ContextStore
from glider_cli.store.entities.graph import Edge, Entity, Graph
from glider_cli.store.eventlog.writer import EventWriter
from glider_cli.store.queries.query import run
from glider_cli.turns import turn_keys

CLIENTS = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "polyglot"


def _chat(name: str, where: str) -> object:
    req = json.loads((CLIENTS / name).read_text().replace("<CWD>", where))["requests"][0]
    protocol = "openai_responses" if req["path"].endswith("/responses") else "anthropic"
    return parse_request(protocol, req["body"], {k.lower(): v for k, v in req["headers"]})


def test_opening_keys_from_captured_first_turns() -> None:
    cc = turn_keys.opening(_chat("claude-code-01-first-turn.json", "/home/u/proj"))  # type: ignore[arg-type]
    assert cc == {"goal": "say hi", "clone_path": "/home/u/proj"}
    codex = turn_keys.opening(_chat("codex-exec-01-tool-followup.json", "/w/repo"))  # type: ignore[arg-type]
    assert codex == {"goal": "GLIDER_TOOL:exec_command run echo", "clone_path": "/w/repo"}
    # A path as masked in the captures is not absolute: no clone_path rather than a wrong one.
    assert "clone_path" not in turn_keys.opening(_chat("claude-code-01-first-turn.json", "<CWD>"))  # type: ignore[arg-type]


# The last user message of `claude -p "/local say hi"` after `glider setup claude-code` (Claude Code 2.x,
# captured through Glider): the reminders, the slash command's wrapper, then the command file's expansion.
SLASH = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
    "# currentDate\nToday's date is 2026-12-01.\n</system-reminder>\n\n"
    "<command-message>local</command-message>\n<command-name>/local</command-name>\n"
    "<command-args>say hi</command-args>\n\nsay hi /local\n"
)


def test_a_slash_command_reads_as_it_was_typed() -> None:
    assert turn_keys.user_words(SLASH) == "/local say hi"
    no_args = (
        "<command-message>init is analyzing…</command-message>\n<command-name>/init</command-name>\nAnalyze"
    )
    assert turn_keys.user_words(no_args) == "/init"
    assert turn_keys.user_words("explain <command-name> in this XML") == "explain <command-name> in this XML"


def test_plans_and_written_files() -> None:
    todos = {"todos": [{"content": "a  b", "status": "completed"}, {"content": "c", "status": "pending"}, 3]}
    assert turn_keys.plan_of("TodoWrite", todos) == "[x] a b\n[ ] c"
    assert turn_keys.plan_of("update_plan", {"plan": [{"step": "s", "status": "in_progress"}]}) == "[>] s"
    assert turn_keys.plan_of("update_plan", {"plan": "not a list"}) is None
    assert turn_keys.plan_of("Bash", todos) is None
    patch = "*** Begin Patch\n*** Update File: src/lexer.go\n@@\n*** Add File: docs/x.md\n*** End Patch"
    assert turn_keys.written_files("apply_patch", {"input": patch}) == ["src/lexer.go", "docs/x.md"]
    assert turn_keys.written_files("Edit", {"file_path": "/r/a.py"}) == ["/r/a.py"]
    assert turn_keys.written_files("Read", {"file_path": "/r/a.py"}) == []
    calls = [
        IssuedCall("1", "TodoWrite", {"todos": [{"content": "old", "status": "pending"}]}),
        IssuedCall("2", "Write", {"file_path": "/r/b.py"}),
        IssuedCall("3", "TodoWrite", {"todos": [{"content": "new", "status": "pending"}]}),
    ]
    assert turn_keys.progress(calls) == {"plan": "[ ] new", "tool": "TodoWrite", "files": ["/r/b.py"]}
    assert turn_keys.progress([IssuedCall("4", "Bash", {"command": "ls"})]) is None


def test_files_a_delegate_changed_resolve_to_the_indexed_entities(glider_env: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    paths = Paths(home=glider_env)
    store = ContextStore(paths, ContextSettings())
    store.index_tree(repo)
    store.index_symbols(repo)
    indexed = [e for e in store.graph().entities.values() if e.kind == "file" and e.name == "main.go"]
    assert len(indexed) == 1
    rel = indexed[0].data["rel"]
    with EventWriter(paths) as w:
        # A delegate's report names the file as the vendor saw it; the turn's client named the workspace.
        w.emit("TurnOpened", {"ask": "fix the go server", "clone_path": str(repo)}, turn_id="t1")
        w.emit(
            "DelegateRun",
            {"vendor": "agy", "exit_code": 0, "files": ["main.go"], "workspace": str(repo)},
            turn_id="t1",
        )
        w.emit("TurnContext", {"files": [str(repo / "pkg" / "core.py")]}, turn_id="t2")
    ex = store.query(f"t1 explain={rel}").to_json()
    assert ex["entity"]["id"] == indexed[0].id and ex["entity"]["prov"] == "EXTRACTED"
    assert ex["touched_by"] == ["turn:t1"]
    core = store.query("* explain=pkg/core.py").to_json()
    assert core["touched_by"] == ["turn:t2"]
    assert not [e for e in store.graph().entities.values() if e.kind == "file" and e.prov == "RUNTIME"]


def test_hubs_are_code_not_directories_or_caches() -> None:
    g = Graph()
    files = ["/r/app.py", "/r/util.py", "/r/db.py", "/r/__pycache__/util.cpython-311.pyc"]
    g.add_entity(Entity("dir:/r", "dir", "r", "/r", "EXTRACTED"))
    g.add_entity(Entity("dir:/r/__pycache__", "dir", "__pycache__", "/r/__pycache__", "EXTRACTED"))
    g.add_edge(Edge("dir:/r", "dir:/r/__pycache__", "contains", "EXTRACTED"))
    for f in files:
        g.add_entity(Entity(f"file:{f}", "file", f.rsplit("/", 1)[1], f, "EXTRACTED"))
        parent = "dir:/r/__pycache__" if "__pycache__" in f else "dir:/r"
        g.add_edge(Edge(parent, f"file:{f}", "contains", "EXTRACTED"))
    for n in range(6):  # a cache directory full of files: the highest degree of all
        p = f"/r/__pycache__/m{n}.pyc"
        g.add_entity(Entity(f"file:{p}", "file", f"m{n}.pyc", p, "EXTRACTED"))
        g.add_edge(Edge("dir:/r/__pycache__", f"file:{p}", "contains", "EXTRACTED"))
    g.add_edge(Edge("file:/r/app.py", "file:/r/util.py", "imports", "INFERRED"))
    g.add_edge(Edge("file:/r/db.py", "file:/r/util.py", "imports", "INFERRED"))
    g.add_edge(Edge("file:/r/app.py", "file:/r/db.py", "imports", "INFERRED"))
    ex = run(g, "* explain=file:/r/app.py").to_json()
    hubs = [h["id"] for h in ex["hubs"]]
    assert hubs[:2] == ["file:/r/util.py", "file:/r/db.py"]
    assert not any(h.startswith("dir:") or "__pycache__" in h for h in hubs)
    assert run(g, "* communities=1").to_json()["communities"][0]["hub"] == "file:/r/util.py"


def test_a_delegate_runs_environment_marks_its_requests() -> None:
    env = turn_keys.delegate_env({"ANTHROPIC_CUSTOM_HEADERS": "x-team: a", "PATH": "/bin"}, "01ab")
    assert env["ANTHROPIC_CUSTOM_HEADERS"] == "x-team: a\nx-glider-delegate-of: 01ab"
    assert env["GLIDER_DELEGATE_OF"] == "01ab" and env["PATH"] == "/bin"
    assert turn_keys.delegate_env({}, "01ab")["ANTHROPIC_CUSTOM_HEADERS"] == "x-glider-delegate-of: 01ab"
    assert turn_keys.delegate_of({"X-Glider-Delegate-Of": " 01ab "}) == "01ab"
    assert turn_keys.delegate_of({"x-glider-delegate-of": "a b\n"}) is None
    assert turn_keys.delegate_of({}) is None


def test_the_claude_workspace_is_found_as_a_scan_of_every_line_finds_it() -> None:
    """`workspace_in` tries the pattern only where its keyword is (issue 29); the answer is the one
    a scan of the whole text gives, on generated texts mixing the lines that matter (a dash, blank
    lines before the keyword, keywords mid-line, relative paths, several on one line)."""
    import random
    import re

    whole = re.compile(r"^\s*-?\s*(?:Primary working directory|Working directory):\s*(\S.*?)\s*$", re.M)

    def by_scan(text: str) -> str | None:
        return next((m.group(1) for m in whole.finditer(text) if m.group(1).startswith("/")), None)

    pieces = [
        "Working directory: /a/b",
        " - Primary working directory: /repo  ",
        "-\n  Working directory: /after-dash",
        "x - Working directory: /mid-line",
        "Working directory: relative/path",
        "Working directory: Working directory: /twice",
        "Primary working directory:\n/next-line",
        "\n\n   \n",
        "- ",
        "orking directory",
        "some prose about a working directory: /not-a-key",
        "\t-\tWorking directory:\t/tabs\t",
        "",
    ]
    rng = random.Random(29)
    for _ in range(3000):
        text = rng.choice(["", "\n"]).join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        assert turn_keys.workspace_in([text]) == by_scan(text), text
