"""Where the book's repository and this package are, and how a message names a path.

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
