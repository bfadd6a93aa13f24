"""What a local turn's model reads for the client's answer to an exec (`render(result)`), and the text a
successful read carries (`read_content(result)`, what `edit` changes).

- A read is the file's text; a failure says which one (not found, permission denied, rejected, ...).
- A grep folds every place the client answered from into one list: the per-workspace-folder
  `workspace_results` (where a workspace-wide search answers; paths prefixed with their folder when
  there are several) and the `active_editor_result`, in files, content (`path:line: text`) or count
  form, each path or line once, at most `GREP_LINES` lines (the rest counted, and a cut the client made
  said).
- A shell is its exit code, stdout and stderr, each cut middle-out past `SHELL_CHARS` (the head and the
  tail kept, the cut said); a timeout, a rejection, a spawn error or a denial says so.
- Anything longer than `RESULT_CHARS` is cut, saying so.
"""

from __future__ import annotations

from typing import Any

from glider_cli.protocol.cursor import cursor_pb2 as pb

# What a result may hand the model, at most (the rest is cut, saying so).
RESULT_CHARS = 16_000
# A shell's stdout (and its stderr), at most: the first and the last half of it.
SHELL_CHARS = 8_000
GREP_LINES = 500


def _which(msg: Any, field: str) -> str | None:
    return msg.WhichOneof(field)  # type: ignore[no-any-return]


def cut(text: str) -> str:
    if len(text) <= RESULT_CHARS:
        return text
    return text[:RESULT_CHARS] + f"\n[... {len(text) - RESULT_CHARS} more characters cut]"


def middle_out(text: str, limit: int = SHELL_CHARS) -> str:
    """`text` with its middle cut past `limit` characters: the first and the last half kept."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + cut_marker(len(text) - 2 * half) + text[-half:]


def cut_marker(n: int) -> str:
    return f"\n[... {n} characters cut from the middle ...]\n"


def render(result: pb.ExecClientMessage) -> str:
    """The text the model reads for one exec's answer."""
    kind = _which(result, "message")
    if kind == "read_result":
        return _read(result.read_result)
    if kind == "write_result":
        w = result.write_result
        which = _which(w, "result")
        if which == "success":
            return f"wrote {w.success.path} ({w.success.lines_created} lines, {w.success.file_size} bytes)"
        if which == "error":
            return f"error: {w.error.error}"
        return f"error: {(which or 'no result').replace('_', ' ')}"
    if kind == "shell_result":
        return shell(result.shell_result)
    if kind == "grep_result":
        return grep(result.grep_result)
    if kind == "ls_result":
        lr = result.ls_result
        if _which(lr, "result") != "success":
            return f"error: {lr.error.error or _which(lr, 'result') or 'no result'}"
        lines: list[str] = []
        _tree(lr.success.directory_tree_root, "", lines)
        return cut("\n".join(lines))
    if kind == "delete_result":
        return "deleted" if _which(result.delete_result, "result") == "success" else "error: not deleted"
    return "error: the client sent no result this tool can read"


def _read(r: pb.ReadResult) -> str:
    which = _which(r, "result")
    if which == "success":
        s = r.success
        body = s.content if _which(s, "output") == "content" else f"<{len(s.data)} bytes of binary data>"
        return cut(body) + ("\n[truncated by the client]" if s.truncated else "")
    return "error: " + read_failure(r)


def read_failure(r: pb.ReadResult) -> str:
    """Why a read failed, in words (the model's and the IDE's)."""
    which = _which(r, "result")
    if which == "error":
        return r.error.error or f"the read of {r.error.path} failed"
    if which == "file_not_found":
        return f"file not found: {r.file_not_found.path}"
    if which == "permission_denied":
        return "permission denied"
    if which == "rejected":
        return "the read was rejected"
    if which == "invalid_file":
        return "not a readable file"
    return "the client sent no read result"


def shell(sr: pb.ShellResult) -> str:
    which = _which(sr, "result")
    if which in ("success", "failure"):
        o = getattr(sr, which)
        out = f"exit code {o.exit_code}"
        if which == "failure" and o.aborted:
            out += " (aborted)"
        if sr.HasField("is_background") and sr.is_background:
            out += " (the command went on in the background)"
        out += "\n"
        if o.stdout:
            out += f"stdout:\n{middle_out(o.stdout)}\n"
        if o.stderr:
            out += f"stderr:\n{middle_out(o.stderr)}\n"
        return cut(out.rstrip())
    if which == "timeout":
        return f"error: the command timed out after {sr.timeout.timeout_ms / 1000:g} s"
    if which == "rejected":
        return "error: the command was rejected" + (f": {sr.rejected.reason}" if sr.rejected.reason else "")
    if which == "spawn_error":
        return f"error: the command could not start: {sr.spawn_error.error}"
    if which == "permission_denied":
        denied = sr.permission_denied.error
        return "error: permission denied" + (f": {denied}" if denied else "")
    return "error: the command was not run (no result)"


def grep(g: pb.GrepResult) -> str:
    if _which(g, "result") == "error":
        return f"error: {g.error.error}"
    s = g.success
    sources: list[tuple[str, pb.GrepUnionResult]] = sorted(s.workspace_results.items())
    prefix = len(sources) > 1
    if s.HasField("active_editor_result"):
        sources.append(("", s.active_editor_result))
    lines: list[str] = []
    seen: set[str] = set()
    truncated = False
    for folder, union in sources:
        before = folder.rstrip("/") + "/" if prefix and folder else ""
        found, cut_here = _union(union, before)
        truncated = truncated or cut_here
        for line in found:
            if line not in seen:
                seen.add(line)
                lines.append(line)
    if not lines:
        return "no matches"
    more = len(lines) - GREP_LINES
    text = "\n".join(lines[:GREP_LINES])
    if more > 0:
        text += f"\n[... {more} more lines cut]"
    if truncated:
        text += "\n[the client cut the search's results]"
    return cut(text)


def _join(before: str, path: str) -> str:
    return path if not before or path.startswith("/") else before + path


def _union(u: pb.GrepUnionResult, before: str) -> tuple[list[str], bool]:
    which = _which(u, "result")
    if which == "files":
        f = u.files
        return [_join(before, p) for p in f.files], f.client_truncated or f.ripgrep_truncated
    if which == "content":
        c = u.content
        lines = []
        for fm in c.matches:
            path = _join(before, fm.file)
            for m in fm.matches:
                sep = "-" if m.is_context_line else ":"
                lines.append(f"{path}{sep}{m.line_number}{sep} {m.content}")
        return lines, c.client_truncated or c.ripgrep_truncated
    if which == "count":
        n = u.count
        lines = [f"{_join(before, fc.file)}: {fc.count} matches" for fc in n.counts]
        return lines, n.client_truncated or n.ripgrep_truncated
    return [], False


def _tree(node: pb.LsDirectoryTreeNode, indent: str, lines: list[str]) -> None:
    if len(lines) > 2000:
        return
    for d in node.children_dirs:
        name = d.abs_path.rstrip("/").rsplit("/", 1)[-1]
        lines.append(f"{indent}{name}/")
        _tree(d, indent + "  ", lines)
    for f in node.children_files:
        lines.append(f"{indent}{f.name}")


def read_content(result: pb.ExecClientMessage) -> str | None:
    """The text of a successful read (what `edit` changes), else None."""
    if result.HasField("read_result") and _which(result.read_result, "result") == "success":
        s = result.read_result.success
        return s.content if _which(s, "output") == "content" and not s.truncated else None
    return None
