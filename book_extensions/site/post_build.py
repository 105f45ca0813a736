"""What happens to a language's site once Sphinx has written it: every step, in its order.

This is the book's one ``build-finished`` handler (no other module connects to that event),
so the order below is the order they run in. The first step makes sure Sphinx wrote every page
it read: a writer process of a parallel build that fails while Sphinx starts the next one has
its error dropped (``ParallelTasks.add_task`` ends the writers and goes on), and the build
ended well with those pages missing from the site. It runs after the other extensions' handlers
of that event (priority 900), myst-nb's among them: myst-nb copies its stylesheet there, and
the stylesheets are trimmed after. Each step declares the builds it concerns (which builders,
and whether a failed build too); :func:`steps_for` chooses, and a step itself only works.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from .. import build_state
from ..checks import leaked_paths, remote_loads
from ..editions import offline_builders
from ..execution import changed_pages, page_execution
from . import asset_trimming, first_paint, meta_and_footer


@dataclass(frozen=True)
class Step:
    """One step after the build, and the builds it runs after.

    ``builder``: the one builder it concerns by name ("html": the web site, not the offline
    editions' singlehtml and epub, which share its format); ``output_format``: the builders it
    concerns by format ("html": every builder that writes HTML, the editions included);
    neither: every builder. ``after_failure``: it also runs when the build failed.
    """

    run: Callable[[Sphinx], None]
    builder: str | None = None
    output_format: str | None = None
    after_failure: bool = False

    @property
    def name(self) -> str:
        return f"{self.run.__module__.rsplit('.', 1)[-1]}.{self.run.__name__}"

    def concerns(self, builder_name: str, builder_format: str, failed: bool) -> bool:
        return ((self.after_failure or not failed)
                and self.builder in (None, builder_name)
                and self.output_format in (None, builder_format))


# The web site's builder, and every builder that writes HTML (the site, singlehtml, epub).
SITE, HTML = {"builder": "html"}, {"output_format": "html"}

# Beside the doctrees: each page this build wrote, NUL-separated (note_written_page), in
# whichever process wrote it.
WRITTEN_PAGES = "book-written-pages.log"


def forget_written_pages(app: Sphinx) -> None:
    """``builder-inited``: no page of this build is written yet."""
    (Path(app.doctreedir) / WRITTEN_PAGES).unlink(missing_ok=True)


def note_written_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """``html-page-context``: a page is being written (by Sphinx's main process or a writer)."""
    if doctree is not None:  # a page of the book, not the search page or the index
        with open(Path(app.doctreedir) / WRITTEN_PAGES, "ab") as log:  # one write a page: O_APPEND keeps it whole
            log.write(pagename.encode() + b"\0")


def unwritten_pages(read: list[str], log: Path) -> list[str]:
    """The pages of ``read`` that the log of written pages does not name."""
    try:
        written = set(log.read_bytes().decode().split("\0"))
    except OSError:
        written = set()
    return sorted(set(read) - written)


def check_every_page_to_write_was_written(app: Sphinx) -> None:
    """Every page this build read, and every page it asked Sphinx to write again without
    reading it (all of them, after a title changed: execution/changed_pages), was written: a
    writer killed while every page was written again left 148 of 150 with the old title, and
    only the page read was checked (attack 12, case 39)."""
    to_write = {*build_state.site(app.env).read_now, *build_state.run(app).written_again}
    missing = unwritten_pages(sorted(to_write), Path(app.doctreedir) / WRITTEN_PAGES)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        logger.warning(f"{Path(app.outdir).name}: Sphinx did not write {shown}, which this build read or "
                       "had to write again (a parallel writer failed, and Sphinx dropped its error): nothing "
                       "is published; build again with `-j 1` to see it",
                       type="book", subtype="unwritten")


STEPS = (
    Step(page_execution.write_executions, after_failure=True),  # which pages this build read and executed
    Step(check_every_page_to_write_was_written, **SITE),  # first: a page Sphinx dropped fails the build
    Step(changed_pages.write_outside_dependencies, **SITE),  # the files outside docs/ it read, for the driver
    Step(offline_builders.copy_editions_into_site, **SITE),  # the PDF and EPUB built from these sources
    Step(meta_and_footer.write_manifest, **HTML),  # what the site root needs from this language
    Step(asset_trimming.drop_plain_token_spans, **SITE),  # code's token spans that draw nothing of their own
    Step(asset_trimming.trim_build, **SITE),  # the themes' stylesheets cut to the rules the pages use
    Step(first_paint.inline_first_paint, **SITE),  # those rules inline in each page, its head scripts deferred
    # The pages as published: the record of pages found clean then holds bytes the next build keeps.
    Step(remote_loads.check_build, **HTML),  # no page loads anything from another host
    Step(leaked_paths.check_build, **HTML),  # last: no published file shows a build machine's folders
)


def steps_for(builder_name: str, builder_format: str, failed: bool) -> list[Step]:
    """The steps that run after a build by that builder, in their order."""
    return [step for step in STEPS if step.concerns(builder_name, builder_format, failed)]


logger = logging.getLogger(__name__)


def finish(app: Sphinx, exception: Exception | None) -> None:
    took = []
    for step in steps_for(app.builder.name, app.builder.format, failed=exception is not None):
        started = time.perf_counter()
        step.run(app)
        took.append(f"{step.name} {time.perf_counter() - started:.2f} s")
    logger.verbose("after the build: " + ", ".join(took))  # shown with -v: what `bench` is made of


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", forget_written_pages)
    app.connect("html-page-context", note_written_page)
    app.connect("build-finished", finish, priority=900)
