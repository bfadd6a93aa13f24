"""protocol.cursor.answers and .results: the client's answers to a local turn's execs, assembled (a
streamed shell) and read for the model (a grep folded from every place it answered from). The client's
messages are built byte by byte from the fact sheet's field numbers."""

from __future__ import annotations

import cursor_wire as wire

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor import exec_results
from glider_cli.protocol.cursor.answers import Answer, MiddleOut

ld, vi = wire.ld, wire.vi


def client(number: int, data: bytes) -> pb.ExecClientMessage:
    """ExecClientMessage{1 id: 1, number: data}."""
    return pb.ExecClientMessage.FromString(vi(1, 1) + ld(number, data))


def stream(event: bytes) -> pb.ExecClientMessage:
    return client(14, event)


def test_streamed_shell_is_assembled_until_the_stream_close() -> None:
    answer = Answer("make", "/ws", 120_000)
    for event in (ld(4, b""), ld(1, ld(1, "bui")), ld(2, ld(1, "warn\n")), ld(1, ld(1, "lt\n"))):
        assert answer.take(stream(event)) is None
    assert answer.take(stream(ld(3, vi(1, 2) + ld(2, "/ws/sub")))) is None
    got = answer.close().shell_result
    assert got.WhichOneof("result") == "failure"
    f = got.failure
    assert (f.command, f.working_directory, f.exit_code, f.stdout, f.stderr) == (
        "make",
        "/ws/sub",
        2,
        "built\n",
        "warn\n",
    )
    assert exec_results.shell(got) == "exit code 2\nstdout:\nbuilt\n\nstderr:\nwarn"
    ok = Answer("true", "/ws")
    ok.take(stream(ld(3, vi(1, 0))))
    assert ok.close().shell_result.success.exit_code == 0


def test_stream_endings_timeout_rejection_early_close_and_a_large_code() -> None:
    timed = Answer("sleep 9", "/ws", 5_000)
    timed.take(stream(ld(3, vi(1, 143) + vi(4, 1) + vi(5, pb.SHELL_ABORT_REASON_TIMEOUT))))
    assert exec_results.shell(timed.close().shell_result) == "error: the command timed out after 5 s"
    refused = Answer("rm -rf /", "/ws")
    refused.take(stream(ld(5, ld(1, "rm -rf /") + ld(3, "not on the allowlist"))))
    assert (
        exec_results.shell(refused.close().shell_result)
        == "error: the command was rejected: not on the allowlist"
    )
    early = Answer("yes", "/ws")
    early.take(stream(ld(1, ld(1, "y\n"))))
    cut_short = early.close().shell_result
    assert cut_short.failure.aborted and exec_results.shell(cut_short).startswith("exit code 0 (aborted)")
    crashed = Answer("./a.exe", "/ws")
    crashed.take(stream(ld(3, vi(1, 0xC0000005))))
    assert crashed.close().shell_result.failure.exit_code == 0xC0000005 - (1 << 32)
    # No answer at all before the stream_close: no result, said so.
    assert exec_results.render(Answer().close()) == "error: the client sent no result this tool can read"


def test_a_one_shot_answer_settles_at_once_whatever_the_request_form() -> None:
    one = client(2, ld(1, ld(1, "ls") + vi(3, 0) + ld(5, "a\n")))  # shell_result.success
    assert Answer("ls", "/ws").take(one) is one
    assert exec_results.render(one) == "exit code 0\nstdout:\na"


def test_output_past_the_cap_is_cut_middle_out_saying_so() -> None:
    buf = MiddleOut(10)
    for piece in ("abc", "defgh", "ijklmnop", "qrstuvwxyz"):
        buf.add(piece)
    assert buf.text() == "abcde" + exec_results.cut_marker(16) + "vwxyz"
    assert exec_results.middle_out("0123456789", 4) == "01" + exec_results.cut_marker(6) + "89"
    assert exec_results.middle_out("short") == "short"


def _union_files(*files: str, truncated: bool = False) -> bytes:
    return ld(2, b"".join(ld(1, f) for f in files) + vi(2, len(files)) + (vi(3, 1) if truncated else b""))


def _entry(folder: str, union: bytes) -> bytes:
    return ld(4, ld(1, folder) + ld(2, union))


def test_grep_folds_workspace_results_and_the_active_editor() -> None:
    content = ld(
        3,
        ld(
            1,
            ld(1, "/ws/a/x.py")
            + ld(2, vi(1, 3) + ld(2, "return 1"))
            + ld(2, vi(1, 4) + ld(2, "pass") + vi(4, 1)),
        ),
    )
    success = (
        ld(1, "return")
        + _entry("/ws/a", _union_files("x.py", "y.py"))
        + _entry("/ws/b", _union_files("z.py"))
    )
    got = exec_results.grep(pb.GrepResult.FromString(ld(1, success + ld(5, content))))
    assert got.splitlines() == [
        "/ws/a/x.py",
        "/ws/a/y.py",
        "/ws/b/z.py",
        "/ws/a/x.py:3: return 1",
        "/ws/a/x.py-4- pass",
    ]
    # One workspace folder: its relative paths as the client gave them; the active editor's too.
    single = (
        ld(1, "x")
        + _entry("/ws", _union_files("src/app.py", truncated=True))
        + ld(5, _union_files("src/app.py"))
    )
    assert (
        exec_results.grep(pb.GrepResult.FromString(ld(1, single)))
        == "src/app.py\n[the client cut the search's results]"
    )
    counts = ld(1, ld(1, ld(1, "a.py") + vi(2, 7)) + vi(2, 1) + vi(3, 7))
    assert exec_results.grep(pb.GrepResult.FromString(ld(1, ld(5, counts)))) == "a.py: 7 matches"
    assert exec_results.grep(pb.GrepResult.FromString(ld(1, ld(1, "nothing")))) == "no matches"
    assert exec_results.grep(pb.GrepResult.FromString(ld(2, ld(1, "bad regex")))) == "error: bad regex"


def test_grep_answers_are_capped() -> None:
    many = _union_files(*(f"f{i}.py" for i in range(exec_results.GREP_LINES + 20)))
    got = exec_results.grep(pb.GrepResult.FromString(ld(1, _entry("/ws", many))))
    assert got.count("\n") == exec_results.GREP_LINES and got.endswith("[... 20 more lines cut]")
