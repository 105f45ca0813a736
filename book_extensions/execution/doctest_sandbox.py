"""The "Check yourself" doctests run confined, as the pages' kernels are (kernel/sandbox.py).

``sphinx.ext.doctest`` runs each example in the Sphinx process itself, with the build's rights:
an example could rewrite the book's sources, forge a page's outputs in the execution cache
together with the digest they are checked against (the next html build published and recorded
them), or end the process with status 0 before the examples after it ran (attack 6, cases 7,
8, 29). Once the doctest builder has read every page, and before it runs an example, its
process may write only its own output folder, its doctrees (the environment is saved after
this point) and a temporary folder inside them; and where Linux has no Landlock, the build's
comparisons are the only guard, as for kernels.

The driver, for its part, takes a doctest build as passed only when the builder's output
holds its summary (``commands/build.py``: ``unfinished_doctests``): a process that ended early
has none. Those doctrees are the doctest builder's own, read afresh by every doctest build
(``commands/build.py``: ``doctrees_dir``), so nothing an example leaves there reaches the html
build or the next doctest build.

What confinement cannot do: the examples share the process of the checker that judges them,
so an example written to forge its own verdict (one that replaces the summary and ends the
process, or patches sphinx.ext.doctest's runner) passes (attack 7, cases 1 and 2). Closing
that needs the examples run in a kernel of their own and compared in Sphinx's process, as code
cells are.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from ..kernel import sandbox

logger = logging.getLogger(__name__)

TEMPORARY_FOLDER = "book-doctest-tmp"


def confine(app: Sphinx, env) -> None:
    """``env-updated``, last: the doctest builder's process writes only its own folders from now on."""
    if app.builder.name != "doctest" or sandbox.turned_off():
        return
    temporary = Path(app.doctreedir, TEMPORARY_FOLDER)
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    # Sphinx's crash report, and anything an example makes with tempfile, go there.
    os.environ["TMPDIR"] = tempfile.tempdir = str(temporary)
    if not sandbox.restrict([str(app.outdir), str(app.doctreedir), "/dev"]):
        logger.info("the doctests run unconfined: this Linux kernel has no Landlock")


def setup(app: Sphinx) -> None:
    app.connect("env-updated", confine, priority=999)
