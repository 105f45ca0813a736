"""What the book's extensions note about each page while reading it, kept in one place.

One Sphinx ``EnvironmentCollector`` (as myst-nb keeps its execution data): a record
per page, dropped when the page is read again or removed, and merged back from
parallel readers, so no extension keeps loose sets on the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors import EnvironmentCollector

ATTRIBUTE = "book_page_state"


@dataclass
class PageState:
    executed: bool = False  # this build ran its cells (rather than taking the cache's outputs)
    produced: float | None = None  # when its outputs were produced (a timestamp); None: nothing executes
    seconds: float | None = None  # how long its cells ran, when they ran
    problems: int = 0  # failures reported for it: read it again next build
    computed: set[str] = field(default_factory=set)  # directives filled from records or the build
    # What the page was read from (changed_pages): the digest of the text Sphinx parsed, and
    # of each file it depends on as it was before that build read it.
    source: str | None = None
    dependencies: dict[str, str | None] = field(default_factory=dict)


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


class PageStateCollector(EnvironmentCollector):
    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        every(env).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: set[str],
                    other: BuildEnvironment) -> None:
        for docname in docnames:
            if docname in every(other):
                every(env)[docname] = every(other)[docname]

    def process_doc(self, app: Sphinx, doctree) -> None:
        pass


def setup(app: Sphinx) -> None:
    app.add_env_collector(PageStateCollector)
