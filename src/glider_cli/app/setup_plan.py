"""A `glider setup` plan: what setup is asked (`Options`), the `Change`s it would make (`Plan`), what
it wrote (`Manifest`, `<GLIDER_HOME>/setup.json`), the steps every client's plan is made of, and
writing a plan (`apply`) or planning to take it back (`undo`).

Contract:
- A planning step reads the file it would change and adds a `Change` to the plan, or says in
  `skipped` why not: `plan_create` a whole file, `plan_set` a key in a JSON file (dotted; a part with a
  dot in it makes the key a JSON list, `key_of`), `plan_block` a marked block of lines (`block`) in a
  TOML or .env file. None overwrites what Glider did not write: an existing file, a key set to another
  value, the same block written by someone else.
- `apply(plan, manifest)` writes the changes and records each in the manifest; `undo(client, manifest)`
  plans removing exactly what the manifest says was written, while it is unchanged (a file still
  holding what was written, a key its value, a block as it was), and `apply` of that plan removes it,
  with the objects, files and directories setup created once they are empty.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

BEGIN = "# >>> glider setup (remove with: glider setup {client} --undo)"
END = "# <<< glider setup"
Action = Literal["create", "set", "block", "delete", "unset", "unblock"]


@dataclass(frozen=True)
class Change:
    """One write. `create`/`delete`: `text` is the file's content. `set`/`unset`: `key` (dotted) and
    `value` in a JSON file; `created` lists what the change made (a create's directories; a set's
    file, as "", and parent objects). `block`/
    `unblock`: `text` is the block; `where` is "top" or "end" of the file."""

    action: Action
    path: str
    text: str = ""
    key: str = ""
    value: Any = None
    where: str = "end"
    created: tuple[str, ...] = ()
    flat: bool = False  # `key` is one name with dots in it (VS Code's "http.proxy"), not a path

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "flat" and v not in ("", None, ())}
        if self.flat:
            d["flat"] = True
        return d


@dataclass
class Plan:
    client: str
    changes: list[Change] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "changes": [c.to_dict() for c in self.changes],
            "skipped": [{"path": p, "why": w} for p, w in self.skipped],
            "notes": self.notes,
        }


@dataclass(frozen=True)
class Options:
    home: Path
    base_url: str = "http://127.0.0.1:8787"
    project: Path | None = None
    statusline: str | None = None  # the statusline command, when wanted
    codex_home: Path | None = None
    gemini_home: Path | None = None  # $GEMINI_CLI_HOME: where Gemini CLI looks for .gemini/ instead of HOME
    cursor_proxy: str = "http://127.0.0.1:8789"  # `glider serve --cursor-port 8789`
    glider_home: Path | None = None  # where the Cursor proxy's CA is (`<GLIDER_HOME>/cursor/ca.pem`)
    cursor_config_dir: Path | None = None  # $CURSOR_CONFIG_DIR (cursor-agent's cli-config.json)
    cursor_http1: bool = False  # also switch Cursor's agent to HTTP/1.1 (RunSSE): Glider routes both
    platform: str = ""  # sys.platform: where the IDE keeps its settings, how to trust the CA


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Manifest:
    """What setup wrote, per client, in `<GLIDER_HOME>/setup.json`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        data = json.loads(path.read_text()) if path.exists() else {}
        self.clients: dict[str, list[dict[str, Any]]] = data.get("clients", {})

    def entries(self, client: str) -> list[Change]:
        return [Change(**{**e, "created": tuple(e.get("created", ()))}) for e in self.clients.get(client, [])]

    def has(self, client: str, change: Change) -> bool:
        return any(
            (e.path, e.action, e.key, e.text) == (change.path, change.action, change.key, change.text)
            for e in self.entries(client)
        )

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps({"v": 1, "clients": self.clients}, indent=2) + "\n")


def json_file(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path` ({} when there is no file), None when it is not a JSON object."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _parts(key: str, flat: bool = False) -> list[str]:
    """A dotted key's parts; a flat key (VS Code's `http.proxy`) is one part; a key with a dot in a part
    (a folder path) is a JSON list (`key_of`)."""
    if flat:
        return [key]
    return [str(x) for x in json.loads(key)] if key.startswith("[") else key.split(".")


def key_of(parts: list[str]) -> str:
    return json.dumps(parts) if any("." in x or x.startswith("[") for x in parts) else ".".join(parts)


def lookup(data: Mapping[str, Any], key: str, flat: bool = False) -> tuple[bool, Any]:
    node: Any = data
    for part in _parts(key, flat) if key else []:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def plan_set(p: Plan, path: Path, key: str, value: Any, manifest: Manifest, *, flat: bool = False) -> None:
    data = json_file(path)
    if data is None:
        p.skipped.append((str(path), "not a JSON object; left as it is"))
        return
    found, current = lookup(data, key, flat)
    change = Change("set", str(path), key=key, value=value, flat=flat)
    if found and current == value:
        if not manifest.has(p.client, change):
            p.skipped.append((str(path), f"{key} is already {json.dumps(value)} (set before, not by Glider)"))
        return
    if found:
        p.skipped.append((str(path), f"{key} is set to {json.dumps(current)}; not overwritten"))
        return
    created = [] if path.exists() else [""]
    parts = _parts(key, flat)
    for i in range(1, len(parts)):
        if not lookup(data, key_of(parts[:i]))[0]:
            created.append(key_of(parts[:i]))
    p.changes.append(Change("set", str(path), key=key, value=value, created=tuple(created), flat=flat))


def plan_create(p: Plan, path: Path, text: str, manifest: Manifest) -> None:
    change = Change("create", str(path), text=text)
    if path.exists():
        if not (path.read_text() == text and manifest.has(p.client, change)):
            p.skipped.append((str(path), "the file exists and Glider did not write it"))
        return
    made = tuple(str(d) for d in reversed(path.parents) if not d.exists())
    p.changes.append(Change("create", str(path), text=text, created=made))


def block(client: str, lines: list[str]) -> str:
    return "\n".join([BEGIN.format(client=client), *lines, END]) + "\n"


def plan_block(p: Plan, path: Path, text: str, where: str, manifest: Manifest) -> None:
    existing = path.read_text() if path.exists() else ""
    if text in existing:
        if not manifest.has(p.client, Change("block", str(path), text=text, where=where)):
            p.skipped.append((str(path), "the same block is there already, not written by Glider"))
        return
    made = tuple(str(d) for d in reversed(path.parents) if not d.exists())
    p.changes.append(Change("block", str(path), text=text, where=where, created=made))


def undo(client: str, manifest: Manifest) -> Plan:
    """The removals that take back what the manifest says setup wrote for `client`."""
    p = Plan(client)
    for c in reversed(manifest.entries(client)):
        path = Path(c.path)
        if c.action == "create":
            if path.exists() and path.read_text() == c.text:
                p.changes.append(Change("delete", c.path, text=c.text, created=c.created))
            elif path.exists():
                p.skipped.append((c.path, "changed since Glider wrote it; left as it is"))
        elif c.action == "set":
            data = json_file(path) or {}
            found, current = lookup(data, c.key, c.flat)
            if found and current == c.value:
                p.changes.append(
                    Change("unset", c.path, key=c.key, value=c.value, created=c.created, flat=c.flat)
                )
            elif found:
                p.skipped.append((c.path, f"{c.key} was changed since Glider set it; left as it is"))
        elif c.action == "block":
            if path.exists() and c.text in path.read_text():
                p.changes.append(Change("unblock", c.path, text=c.text, where=c.where, created=c.created))
            elif path.exists():
                p.skipped.append((c.path, "Glider's block was changed; left as it is"))
    return p


# ---------------------------------------------------------------- writing


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _remove_dirs(made: tuple[str, ...]) -> None:
    """The directories a change made, deepest first, once empty."""
    for d in reversed(made):
        if Path(d).is_dir() and not any(Path(d).iterdir()):
            Path(d).rmdir()


def _do(c: Change) -> None:
    path = Path(c.path)
    if c.action == "create":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(c.text)
    elif c.action == "delete":
        path.unlink()
        _remove_dirs(c.created)
    elif c.action == "set":
        data = json_file(path) or {}
        node = data
        *parents, last = _parts(c.key, c.flat)
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = c.value
        _write_json(path, data)
    elif c.action == "unset":
        data = json_file(path) or {}
        parts = _parts(c.key, c.flat)
        for depth in range(len(parts), 0, -1):  # the key, then each parent the set created, once empty
            holder = lookup(data, key_of(parts[: depth - 1]))[1] if depth > 1 else data
            name = parts[depth - 1]
            if depth == len(parts) or (key_of(parts[:depth]) in c.created and holder.get(name) == {}):
                holder.pop(name, None)
        if not data and "" in c.created:
            path.unlink()
        else:
            _write_json(path, data)
    elif c.action == "block":
        existing = path.read_text() if path.exists() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        if c.where == "top":
            path.write_text(c.text + ("\n" + existing if existing else ""))
        else:
            sep = "" if not existing or existing.endswith("\n") else "\n"
            path.write_text(existing + sep + ("\n" if existing else "") + c.text)
    elif c.action == "unblock":
        existing = path.read_text()
        rest = (
            existing.replace("\n" + c.text, "", 1)
            if "\n" + c.text in existing
            else existing.replace(c.text, "", 1)
        )
        if c.where == "top":
            rest = rest.removeprefix("\n")
        if rest.strip():
            path.write_text(rest)
        else:
            path.unlink()
            _remove_dirs(c.created)


def apply(p: Plan, manifest: Manifest) -> None:
    """Write (or remove) every change of `p` and record it in the manifest."""
    done = manifest.clients.setdefault(p.client, [])
    undone = {"delete": "create", "unset": "set", "unblock": "block"}
    for c in p.changes:
        _do(c)
        if c.action in undone:
            wrote = (undone[c.action], c.path, c.key, c.text)
            done[:] = [
                e for e in done if (e["action"], e["path"], e.get("key", ""), e.get("text", "")) != wrote
            ]
        else:
            done.append(c.to_dict())
    if not done:
        del manifest.clients[p.client]
    manifest.save()
