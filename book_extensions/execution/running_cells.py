"""Which page and code cell each Sphinx process is executing, noted while it runs.

A cell can end the very process that executes it (it signals its parent, or the kernel
takes so much memory that the system kills the reader): Sphinx then dies with its own crash
report, which names no page. Each process that executes pages notes the cell it is running
in a file of its own in a folder beside the doctrees, and removes it when the page is done;
a note left behind by a failed build names the page and cell that were running when Sphinx
ended. Standard library only: the build driver imports it.
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import suppress
from pathlib import Path

FOLDER = "book-running-cells"  # in a build's doctrees folder


def folder_of(doctrees: Path) -> Path:
    return Path(doctrees, FOLDER)


def forget_all(doctrees: Path) -> None:
    """Before a build: what an earlier build left is not this one's."""
    shutil.rmtree(folder_of(doctrees), ignore_errors=True)
    folder_of(doctrees).mkdir(parents=True, exist_ok=True)


def note(doctrees: Path, page: str, cell: int, line: int | None) -> None:
    """This process now runs code cell ``cell`` (its number among the page's code cells) of ``page``."""
    with suppress(OSError):  # a missing note costs a message, never the build
        path = folder_of(doctrees) / str(os.getpid())
        path.write_text(json.dumps({"page": page, "cell": cell, "line": line}), encoding="utf8")


def done(doctrees: Path) -> None:
    """This process runs no cell now."""
    with suppress(OSError):
        (folder_of(doctrees) / str(os.getpid())).unlink(missing_ok=True)


def left_running(doctrees: Path, show=str) -> list[str]:
    """``page:line`` and the code cell of each note a failed build left, in one line each; the
    page's path as ``show`` writes it."""
    lines = []
    folder = folder_of(doctrees)
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        try:
            entry = json.loads(path.read_text(encoding="utf8"))
            page, cell, line = entry["page"], int(entry["cell"]), entry.get("line")
        except (OSError, ValueError, KeyError, TypeError):
            continue  # half-written when the process died: nothing to name
        where = f"{show(page)}:{line}" if isinstance(line, int) else show(page)
        # Sphinx may also have crashed of its own accord meanwhile (attack 5, case 14): its
        # report, printed above, says which.
        lines.append(f"{where}: Sphinx ended while code cell {cell} of this page ran: unless Sphinx's report "
                     "above names another cause, the cell ended it: a cell must not signal or kill its "
                     "kernel's parent (the build), nor use up the machine's memory")
    return lines
