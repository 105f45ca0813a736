"""The provenance page: what built the book, and where each page's outputs came from.

The ``{build-provenance}`` directive leaves a placeholder that is filled when the
page is written, after every page has been read: the versions of torch and Python
the pages' kernel ran (:func:`..execution.cache_key.check_kernel`), of the toolchain, the
device, the build date, and per page when its outputs were produced, how long executing
it took, and whether this build executed it or took it from the cache. The page is
rewritten on every build that starts Sphinx; a rebuild with nothing changed starts none
and publishes nothing (commands/build.py), so the page keeps describing the build that
made the site.
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from .. import build_state
from ..configuration.messages import message
from ..execution import page_state
from ..execution.cache_key import toolchain, torch_version
from .device_page import device_name
from .readable_layout import table


def literal_first(rows: list[list[str]]) -> list[list]:
    """Package names are code: the first column as literals."""
    return [[nodes.literal(row[0], row[0]), *row[1:]] for row in rows]


def page_link(app: Sphinx, docname: str, page: str) -> nodes.reference:
    """A page by its title, in the reader's language (not its file name), linked."""
    title = app.env.titles[page].astext()
    return nodes.reference("", title, internal=True, refuri=app.builder.get_relative_uri(docname, page))


PACKAGES = ("torch", "numpy", "sphinx", "myst-nb", "jupyter-cache", "ipykernel",
            "sphinx-book-theme", "jieba", "matplotlib")


class provenance_placeholder(nodes.General, nodes.Element):
    pass


class BuildProvenance(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        page_state.of(self.env).computed.add("build-provenance")
        return [provenance_placeholder()]


def reading_order(env) -> list[str]:
    """Every page, in the order of the table of contents (pages outside it last)."""
    order = []

    def visit(page: str) -> None:
        if page not in order:
            order.append(page)
            for child in getattr(page_state.every(env).get(page), "children", []):
                visit(child)

    visit(env.config.root_doc)
    return order + sorted(set(env.found_docs) - set(order))


def fill(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    say = lambda key, **values: message(app.config, key).format(**values)  # noqa: E731
    for placeholder in list(doctree.findall(provenance_placeholder)):
        versions = [[name, torch_version() if name == "torch" else importlib.metadata.version(name)]
                    for name in PACKAGES]
        versions.insert(1, ["Python", toolchain().python])
        summary = nodes.paragraph("", say(
            "provenance_build", device=device_name(app.config.book_device),
            date=datetime.now(UTC).strftime("%Y-%m-%d")))
        rows = []
        this_build = set(build_state.site(app.env).read_now)
        provenance_pages = page_state.computing(app.env, "build-provenance")
        for page in reading_order(app.env):
            state = page_state.every(app.env).get(page)
            if state is None or state.produced is None or page in provenance_pages:
                continue
            produced = datetime.fromtimestamp(state.produced, tz=UTC).strftime("%Y-%m-%d")
            if page not in this_build:
                status = say("provenance_unchanged")
            elif state.executed:
                status = say("provenance_executed")
            else:
                status = say("provenance_cached")
            seconds = f"{state.seconds:.1f}" if state.seconds is not None else "–"
            rows.append([page_link(app, docname, page), produced, seconds, status])
        placeholder.replace_self([
            summary,
            table([say("provenance_col_package"), say("provenance_col_version")], literal_first(versions)),
            # Not searched: each page's title in it made the page a result of any query
            # that names a chapter, with "execution (s) 7.0 …" as its excerpt.
            table([say("provenance_col_page"), say("provenance_col_date"),
                   say("provenance_col_seconds"), say("provenance_col_status")], rows,
                  classes=["no-search"]),
        ])


def setup(app: Sphinx) -> None:
    app.add_node(provenance_placeholder)
    app.add_directive("build-provenance", BuildProvenance)
    app.connect("doctree-resolved", fill)
