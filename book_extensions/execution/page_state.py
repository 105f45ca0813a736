"""What the book's extensions note about each page while reading it, kept in one place.

One Sphinx ``EnvironmentCollector`` (as myst-nb keeps its execution data): a record
per page, dropped when the page is read again or removed, and merged back from
parallel readers, so no extension keeps loose sets on the environment.

Pages computed from every page (the provenance, the device comparison, the releases'
changes, the exercise index: their ``computed`` directives) are read again only when what they
compute from changed: a record, or the code of some page, which they follow through
:data:`PAGES_CODE` rather than the pages themselves, so a prose edit does not read them again.
They are written again when what they fill in as they are written, from the other pages'
states (:func:`shows`), changed since they were last written: a prose edit of one page writes
that page alone. Titles they show are followed by ``changed_pages``, which writes every page
when what a page shows others changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors import EnvironmentCollector

from ..myst_source import code_cells
from ..paths import write_atomically

ATTRIBUTE = "book_page_state"


@dataclass
class PageState:
    executed: bool = False  # this build ran its cells (rather than taking the cache's outputs)
    produced: float | None = None  # when its outputs were produced (a timestamp); None: nothing executes
    seconds: float | None = None  # how long its cells ran, when they ran
    problems: int = 0  # failures reported for it: read it again next build
    bad_front_matter: bool = False  # its front matter is not YAML (checks/page_sources: said once)
    computed: set[str] = field(default_factory=set)  # directives filled from records or the build
    children: list[str] = field(default_factory=list)  # the pages its tables of contents list, in order
    cell_sections: dict[int, str] = field(default_factory=dict)  # code cell number: its section's title
    exercises: list[dict] = field(default_factory=list)  # its exercises, checked (site/exercises.py), in order
    names: set[tuple[str, str, str]] = field(default_factory=set)  # what it defines: (domain, type, name) (checks/unique_names)
    shown_elsewhere: str | None = None  # what other pages show of it: titles, captions, contents, names (changed_pages)
    written_with: dict[str, str] = field(default_factory=dict)  # computed pages: per builder, the digest of their write inputs
    # What the page was read from (changed_pages): the digest of the text Sphinx parsed, and
    # of each file it depends on as it was before that build read it.
    source: str | None = None
    dependencies: dict[str, str | None] = field(default_factory=dict)
    glued_from: list[str] = field(default_factory=list)  # the pages whose outputs it shows ({glue}: changed_pages)


def every(env: BuildEnvironment) -> dict[str, PageState]:
    if not hasattr(env, ATTRIBUTE):
        setattr(env, ATTRIBUTE, {})
    return getattr(env, ATTRIBUTE)


def of(env: BuildEnvironment, docname: str | None = None) -> PageState:
    """The page's state (the page being read, by default), created on first use."""
    return every(env).setdefault(docname or env.docname, PageState())


def computing(env: BuildEnvironment, directive: str) -> list[str]:
    """The pages that hold ``directive``."""
    return sorted(d for d, state in every(env).items() if directive in state.computed)


# In the doctrees: the code cells of the reference language's pages, rewritten only when
# they change, so that its time moves only then (Sphinx compares a dependency's time).
PAGES_CODE = "book-pages-code.json"


def note_every_page_code(env: BuildEnvironment) -> None:
    """The page being read depends on the code of every page (and on nothing else of them)."""
    env.note_dependency(str(Path(env.doctreedir) / PAGES_CODE))


def write_pages_code(app: Sphinx) -> None:
    reference = Path(app.srcdir).parent / app.config.book_languages[0].code
    code = {}
    for page in sorted(reference.rglob("*.md")):
        text = page.read_text(encoding="utf8", errors="replace")
        code[page.relative_to(reference).as_posix()] = [text[cell.start:cell.end] for cell in code_cells(text)]
    text = json.dumps(code, ensure_ascii=False, sort_keys=True, indent=0)
    target = Path(app.doctreedir) / PAGES_CODE
    try:
        if target.read_text(encoding="utf8") == text:
            return
    except OSError:
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, text)


# For each computed directive, what it fills in when its page is written (besides titles), as
# plain data: its page is written again when that changed (rewrite_computed_pages).
WRITE_INPUTS: dict[str, Callable[[Sphinx, BuildEnvironment], object]] = {}


def declare_write_inputs(directive: str, inputs: Callable[[Sphinx, BuildEnvironment], object]) -> None:
    """Declare what the pages holding ``directive`` fill in as they are written."""
    WRITE_INPUTS[directive] = inputs


def rewrite_computed_pages(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """The computed pages whose inputs changed since this builder wrote them (a page read again
    is written anyway, and noted here too): per builder, since the html, singlehtml and epub
    builders share the environment, and each writes into its own folder. After every page is
    read, before the environment is saved: a build driven by commands/build.py that fails after
    this starts afresh (it forgets its note); a live preview's next build may then not write
    a computed page the failed one did not (its next edit does)."""
    again = []
    for docname, state in sorted(every(env).items()):
        if not state.computed:
            continue
        inputs = [[directive, WRITE_INPUTS[directive](app, env) if directive in WRITE_INPUTS else None]
                  for directive in sorted(state.computed)]
        digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
        if digest != state.written_with.get(app.builder.name):
            state.written_with[app.builder.name] = digest
            again.append(docname)
    return again


class PageStateCollector(EnvironmentCollector):
    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        every(env).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: set[str],
                    other: BuildEnvironment) -> None:
        for docname in docnames:
            if docname in every(other):
                every(env)[docname] = every(other)[docname]

    def process_doc(self, app: Sphinx, doctree) -> None:
        # The order of the book's pages, from the toctree nodes' documented entries (the
        # environment keeps it only in an undocumented mapping).
        of(app.env).children = [ref for node in doctree.findall(addnodes.toctree)
                                for _, ref in node["entries"] if ref in app.env.found_docs]


def setup(app: Sphinx) -> None:
    app.add_env_collector(PageStateCollector)
    app.connect("builder-inited", write_pages_code)
    app.connect("env-get-updated", rewrite_computed_pages)
