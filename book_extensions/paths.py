"""Where the book's repository and this package are, how a message names a path, and how a
file is written whole or not at all.

Standard library only, and importing nothing of the package: the noxfile, the build driver,
``toolchain`` and ``wheelhouse`` import it where Sphinx is not installed or not imported yet.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent  # book_extensions/: its locale/, static/, templates/
ROOT = PACKAGE.parent  # the repository: conf.py, docs/, examples/, results/, torch-releases.txt


def shown(path: str | os.PathLike, base: Path = ROOT) -> str:
    """``path`` as a message names it: relative to ``base`` when inside it, else as given.

    ``base`` is the repository for its own files (a toolchain, a kernel spec), and the working
    directory (``Path.cwd()``) for the paths a command was given (``--docs``, ``--confdir``),
    which are read from there. The path is tried resolved (a relative one is read from the
    working directory), then as written: through a symlinked folder (a worktree's
    ``.toolchain``) it leaves the repository once resolved, and keeps the name it was given.
    """
    path = Path(path)
    for candidate in (path.resolve(), path):
        if candidate.is_relative_to(base):
            return candidate.relative_to(base).as_posix()
    return str(path)


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: into ``<name>.partial``
    beside it, then renamed over it, so that a reader, or a build stopped halfway, finds the old
    file or the new one, never half of one. No fsync: what it guards against is a stopped
    process, not a power cut. One writer at a time: two would share the partial file."""
    partial = path.with_name(f"{path.name}.partial")
    if isinstance(data, str):
        partial.write_text(data, encoding="utf8")
    else:
        partial.write_bytes(data)
    os.replace(partial, path)
