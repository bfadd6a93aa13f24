"""The only module that imports Rich (it lives under commands/: nothing below the CLI prints).

Data goes to stdout, diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def emit_json(value: Any) -> None:
    """Plain JSON on stdout: no Rich wrapping, no colour."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    err.print(f"[yellow]Warning:[/] {message}", markup=True, highlight=False)


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table on stdout: fitted to a terminal; in full when stdout is a pipe or a file (Rich would cut
    every cell to its 80-column default), with a pointer to `--json` on stderr when it is that wide."""
    t = Table(title=title, show_lines=False)
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*(str(x) if x is not None else "" for x in r))
    if out.is_terminal:
        out.print(t)
        return
    natural = out.measure(t, options=out.options.update_width(1 << 16)).maximum
    # Console.print clamps `width` to the console's own: a console as wide as the table prints it whole.
    Console(highlight=False, soft_wrap=True, width=max(natural, out.width)).print(t)
    if natural > out.width:
        err.print(
            f"(the table is {natural} columns wide, printed in full as stdout is not a terminal; "
            "--json gives the same rows for scripts)",
            markup=False,
            highlight=False,
        )


def line(text: str = "", *, markup: bool = False) -> None:
    out.print(text, markup=markup, highlight=False)


@contextlib.contextmanager
def progress(label: str) -> Iterator[Callable[[int, str], None] | None]:
    """A spinner with a count on stderr when stderr is a terminal; None otherwise (no output)."""
    if not err.is_terminal:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=err, transient=True) as bar:
        task = bar.add_task(label)

        def update(n: int, current: str) -> None:
            bar.update(task, description=f"{label}: {n} ({current})")

        yield update
