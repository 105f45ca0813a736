"""The provenance page: what built the book, and where each page's outputs came from.

The ``{build-provenance}`` directive leaves a placeholder that is filled when the
page is written, after every page has been read: the versions of torch and Python
the pages' kernel ran (:func:`..execution.cache_key.check_kernel`), of the toolchain, the
device, the build date, and per page when its outputs were produced and how long executing
it took. It is written again when one of those changed (:func:`write_inputs`): a page
executed, a package upgraded, another day. Not whether the last build executed a page or
took it from the cache: that changed with every build that read a page, so that a prose
edit wrote this page too, and the outputs' date says it.
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

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


def versions() -> list[list[str]]:
    found = [[name, torch_version() if name == "torch" else importlib.metadata.version(name)] for name in PACKAGES]
    found.insert(1, ["Python", toolchain().python])
    return found


def page_rows(env) -> list[tuple[str, str, str]]:
    """(page, the day its outputs were produced, seconds its cells ran) for every page that
    executes, in reading order."""
    rows = []
    provenance_pages = page_state.computing(env, "build-provenance")
    for page in reading_order(env):
        state = page_state.every(env).get(page)
        if state is None or state.produced is None or page in provenance_pages:
            continue
        produced = datetime.fromtimestamp(state.produced, tz=UTC).strftime("%Y-%m-%d")
        rows.append((page, produced, f"{state.seconds:.1f}" if state.seconds is not None else "–"))
    return rows


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def write_inputs(app: Sphinx, env) -> object:
    return [versions(), device_name(app.config.book_device), today(), page_rows(env)]


def fill(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    say = lambda key, **values: message(app.config, key).format(**values)  # noqa: E731
    for placeholder in list(doctree.findall(provenance_placeholder)):
        summary = nodes.paragraph("", say(
            "provenance_build", device=device_name(app.config.book_device), date=today()))
        # A date is one word: on a phone it broke at its hyphens ("2026-12-" over "06").
        rows = [[page_link(app, docname, page), nodes.inline(produced, produced, classes=["book-date"]), seconds]
                for page, produced, seconds in page_rows(app.env)]
        placeholder.replace_self([
            summary,
            table([say("provenance_col_package"), say("provenance_col_version")], literal_first(versions())),
            # Not searched: each page's title in it made the page a result of any query
            # that names a chapter, with "execution (s) 7.0 …" as its excerpt.
            table([say("provenance_col_page"), say("provenance_col_date"), say("provenance_col_seconds")], rows,
                  classes=["no-search", "book-provenance-pages"]),
        ])


def setup(app: Sphinx) -> None:
    app.add_node(provenance_placeholder)
    app.add_directive("build-provenance", BuildProvenance)
    app.connect("doctree-resolved", fill)
    page_state.declare_write_inputs("build-provenance", write_inputs)
