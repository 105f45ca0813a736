"""A label, a glossary term or an object is defined on one page of a language, however it is read.

Sphinx warns of a second definition only when it reads pages one by one: its parallel readers'
findings are merged without a check (``StandardDomain.merge_domaindata``: "XXX duplicates?"),
so under ``-j`` a reference silently resolves to whichever page was merged last. What each page
defines is noted as it is read (with the page's state, which parallel readers merge) and compared
once every page is read, the same way for either kind of read.
"""

from __future__ import annotations

from collections import defaultdict

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from ..execution import page_state

logger = logging.getLogger(__name__)


def resolved_as(domain: str, kind: str, name: str) -> tuple[str, str, str]:
    """A name as its domain looks it up: the standard domain by kind, a term whatever its case
    (``{term}`` matches it so); every other domain (Python's, C's…) keeps one namespace for all
    kinds, so a function and a class of one name collide."""
    if domain != "std":
        return domain, "object", name
    return domain, kind, name.lower() if kind == "term" else name


def note_names(app: Sphinx, doctree: nodes.document) -> None:
    """What the page just read defines, from each domain's public list of its objects."""
    env, docname = app.env, app.env.docname
    page_state.of(env).names = {
        resolved_as(domain.name, kind, name)
        for domain in env.domains.sorted()
        for name, _, kind, where, _, _ in domain.get_objects()
        if where == docname and kind != "doc"
    }


def refuse_duplicates(app: Sphinx, env: BuildEnvironment) -> None:
    pages: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for docname, state in sorted(page_state.every(env).items()):
        for name in state.names:
            pages[name].append(docname)
    for (domain, kind, name), where in sorted(pages.items()):
        if len(where) > 1:
            logger.warning(f"{kind} {name!r} ({domain}) is defined on {len(where)} pages: {', '.join(where)}; "
                           "a reference to it would go to one of them: keep one definition",
                           location=where[-1], type="book", subtype="duplicate_name")


def setup(app: Sphinx) -> None:
    app.connect("doctree-read", note_names)
    app.connect("env-check-consistency", refuse_duplicates)
