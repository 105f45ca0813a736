"""What the book's extensions keep between Sphinx's events, as two typed records instead of
attributes set one by one on Sphinx's objects (the per-page record is execution/page_state).

:class:`RunState`, on the application: what one run of Sphinx reads once and hands from
one event to the next; gone when the process ends.

:class:`SiteState`, on the build environment, which Sphinx pickles between builds: what
the last build saw of the whole site, compared with what this one sees to find the pages to
write again (a language that gained a page, a record that appeared, an edition that went).
It travels to parallel writers with the environment, which is why this build's editions are
kept here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the runner imports Sphinx's and myst-nb's modules: only for the type
    from .execution.runner import PageRunner

RUN_ATTRIBUTE = "book_run_state"
SITE_ATTRIBUTE = "book_site_state"


@dataclass
class RunState:
    page_runner: PageRunner | None = None  # this build's page executor (execution/page_execution)
    terms: tuple[str, list] = ("", [])  # where the edition's term list is, and its terms (checks/prose)
    autocorrect: ModuleType | None = None  # autocorrect_py, configured; a CJK edition's only (checks/typography)
    source_snapshot: dict[str, str] = field(default_factory=dict)  # file -> digest before reading (execution/changed_pages)
    # what each page read again showed other pages, before reading (execution/changed_pages)
    shown_before: dict[str, str | None] = field(default_factory=dict)
    pages_came_or_went: bool = False  # a page was added or removed (execution/changed_pages)
    # the pages not read that this build writes again, as the book asked Sphinx (execution/changed_pages)
    written_again: list[str] = field(default_factory=list)
    reading_turn_ended: bool = False  # this language's reading turn was handed on (execution/page_execution)
    search_counts: dict | None = None  # each page's word counts for the search (site/search)


@dataclass
class SiteState:
    # None: not known yet (the first build, or an environment from before this record):
    # every comparison with it counts as a change.
    language_pages: list[str] | None = None  # every language's pages (configuration/languages)
    release_records: list[str] | None = None  # results/cpu-torch-*.json (records/release_changes)
    records_present: list[str] | None = None  # results/*.json (site/device_page)
    editions: list[str] | None = None  # the offline editions the pages linked (editions/offline_builders)
    current_editions: list[Path] = field(default_factory=list)  # this build's, current with its sources
    read_now: list[str] = field(default_factory=list)  # the pages this build reads (the executions report)


def run(app) -> RunState:
    """The application's record, made on first use."""
    state = getattr(app, RUN_ATTRIBUTE, None)
    if state is None:
        state = RunState()
        setattr(app, RUN_ATTRIBUTE, state)
    return state


def site(env) -> SiteState:
    """The environment's record, made on first use, or again where the pickled one lacks a
    field that this version of the record has (an environment saved by an older book)."""
    state = getattr(env, SITE_ATTRIBUTE, None)
    if not isinstance(state, SiteState) or any(f.name not in vars(state) for f in fields(SiteState)):
        state = SiteState()
        setattr(env, SITE_ATTRIBUTE, state)
    return state
