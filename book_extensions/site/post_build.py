"""What happens to a language's site once Sphinx has written it: every step, in its order.

This is the book's one ``build-finished`` handler (no other module connects to that event),
so the order below is the order they run in. It runs after the other extensions' handlers
of that event (priority 900), myst-nb's among them: myst-nb copies its stylesheet there, and
the stylesheets are trimmed after. Each step decides for itself whether the builder and the
build's outcome concern it.
"""

from __future__ import annotations

import time

from sphinx.application import Sphinx
from sphinx.util import logging

from ..checks import leaked_paths, remote_loads
from ..editions import offline_builders
from ..execution import page_execution
from . import asset_trimming, first_paint, meta_and_footer, search

STEPS = (
    search.write_counts,  # the word counts the in-browser ranking reads
    page_execution.write_executions,  # which pages this build read and executed
    offline_builders.copy_editions_into_site,  # the PDF and EPUB built from these sources
    remote_loads.check_build,  # no page loads anything from another host
    meta_and_footer.write_manifest,  # what the site root needs from this language
    asset_trimming.trim_build,  # the themes' stylesheets cut to the rules the pages use
    first_paint.build_finished,  # those rules inline in each page, its head scripts deferred
    leaked_paths.check_build,  # last: no published file shows a build machine's folders
)


logger = logging.getLogger(__name__)


def finish(app: Sphinx, exception: Exception | None) -> None:
    took = []
    for step in STEPS:
        started = time.perf_counter()
        step(app, exception)
        took.append(f"{step.__module__.rsplit('.', 1)[-1]}.{step.__name__} {time.perf_counter() - started:.2f} s")
    logger.verbose("after the build: " + ", ".join(took))  # shown with -v: what `bench` is made of


def setup(app: Sphinx) -> None:
    app.connect("build-finished", finish, priority=900)
