"""The interface strings the book's extensions add, translated like the theme's: gettext.

The English text is here, by key; each language's translation is in
``locale/<language>/LC_MESSAGES/book.po`` (msgctxt is the key, msgid the English text).
:func:`message` answers in the language of the Sphinx application whose configuration it is
given (English without one, outside Sphinx): nothing here remembers which language a process
builds, so two applications in one process each get their own.
Typography that is not a translation (separators) lives in conf.py's ``book_languages``.
"""

from __future__ import annotations

import gettext
import io
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..paths import PACKAGE

if TYPE_CHECKING:
    from sphinx.config import Config

CATALOG = "book"

ENGLISH = {
    "provenance": "Outputs on this page were produced by torch {torch} on {device}, {date}.",
    # A link's text stops before the sentence's full stop, which follows the link.
    "download_notebook": "Download this page as an executed notebook (.ipynb)",
    "open_in_colab": "Open it in Colab",
    "full_stop": ".",
    "whole_book": "The whole book: ",
    "book_description": ("How PyTorch's .detach(), .detach_(), .data, .clone(), no_grad(), inference_mode() and "
                         "requires_grad_() cut or keep backpropagation, with every output printed by the torch "
                         "that built the book."),
    "edition_provenance": "Every output in this edition was printed by torch {torch} on {device}; built on {date}.",
    "switch_label": "Language",
    "search_placeholder": "Search…",
    # The search page's status line, in place of Sphinx's searchtools.js (which asks the reader
    # to select "categories" the site does not have): site/search.py passes them to book-search.js.
    "search_preparing": "Preparing search…",
    "search_searching": "Searching",
    "search_none": "No page of this book matches the search. Check the spelling, or try other words.",
    "search_one": "Found 1 page.",
    "search_many": "Found {count} pages.",
    "code_prompt_show": "Show code cell {type}",
    "code_prompt_hide": "Hide code cell {type}",
    "root_title": "Cutting the Graph · 切断计算图",
    "provenance_build": "This build ran on {device} and was made on {date}.",
    "provenance_col_package": "package",
    "provenance_col_version": "version",
    "provenance_col_page": "page",
    "provenance_col_date": "outputs produced",
    "provenance_col_seconds": "time (s)",
    "devices_no_record": "No CUDA run has been recorded yet (results/cuda.json): this page compares the devices once the GPU job has run.",
    "devices_no_cpu": "The CPU record (results/cpu.json) is missing: run `nox -s docs`.",
    "devices_runs": "CUDA run: {gpu}, torch {torch}, CUDA {cuda}, {date}. CPU run: torch {cpu_torch}, {cpu_date}.",
    "devices_summary": "{compared} code cells compared; {failing} behave differently on the two devices.",
    "devices_stale": "{stale} cells changed since the CUDA run, so for them this comparison is stale until the GPU job runs again.",
    "devices_col_cell": "page and cell",
    "devices_col_kind": "kind",
    "devices_col_detail": "what differs",
    "devices_kind_behaviour": "behaviour",
    "devices_kind_value": "value",
    "devices_kind_stale": "stale",
    "devices_kind_missing": "not run on CUDA",
    "release_printed": "Output on torch {release} (differs from the above)",
    "releases_same": "torch {releases} give the same outputs for every cell.",
    "releases_same_one": "torch {releases} gives the same outputs for every cell.",
    "releases_differ_one": "On torch {releases}, 1 cell prints something else, folded under it (marked ≠).",
    "releases_cell": "{page}, cell {cell}",
    "releases_cell_section": "{page} › {section}",
    "releases_nothing": "(nothing)",
    "releases_other_media": "(the same text, and a different {kind})",
    "releases_differ": "On torch {releases}, {count} cells print something else, folded under each (marked ≠).",
    "releases_unrecorded": "Not yet run on torch {releases}: {count} cells changed since the last record.",
    "releases_unrecorded_one": "Not yet run on torch {releases}: 1 cell changed since the last record.",
    "releases_missing": "No record yet for torch {releases}.",
    "releases_pair": "torch {old} → {new}",
    "releases_pair_summary": "{compared} code cells compared; {changed} print something else.",
    "releases_col_release": "torch",
    "releases_col_date": "recorded",
    "releases_col_python": "Python",
    "releases_col_cells": "code cells",
    "releases_col_cell": "page and section",
    "releases_col_printed": "torch {release} printed",
    "footer_licence": "Text: {text}. Code: {code}.",
    "footer_report": "Report a mistake on this page",
    "footer_edit": "Edit this page",
    "list_and": " and ",
    "difference_raised_only": "{error} only on {side}",
    "difference_raised_other": "{one} raised {first}, {two} raised {second}",
    "difference_printed": "{one} printed {quoted_first}, {two} printed {quoted_second}",
    "difference_value": "{one} {first} against {two} {second}",
    "difference_shown": "{one} and {two} show a different {shown}",
    "difference_missing": "not in the {two} record (code changed since)",
    "difference_stale": "this cell's code has changed since the {two} run",
    # Exercises (site/exercises.py); exercise_right and exercise_wrong are filled by book.js.
    "exercise_title": "Exercise {number}",
    "exercise_legend": "Your prediction",
    "exercise_check": "Check",
    "exercise_reset": "Try again",
    "exercise_choose": "Choose one of the answers first.",
    "exercise_right": "Right: {answer}.",
    "exercise_wrong": "Not quite: you chose {choice}, the answer is {answer}.",
    "exercise_summary": "What torch {torch} gives, and why",
    "exercise_answer": "The answer is {letter}: ",
    "exercise_answer_later": "The answer is at the end of the chapter.",
    "exercise_answers_heading": "Answers to the exercises",
    "exercise_index_item": "{page}, exercise {number}",
    # The label says the quoted belief is false: a student skimming the index reads a bare
    # quotation as the book's claim.
    "exercise_misconception": "Myth: “{misconception}”",
    "exercise_index_sep": ": ",
    # The 404 page: a heading, then why and what to do, each in its own line.
    "not_found": "Page not found",
    "not_found_hint": "The address may be mistyped, or the page may have been renamed or moved.",
    "not_found_link": "Go to the start of the book",
}


def message(config: Config | None, key: str) -> str:
    """The interface string ``key`` in the language that ``config`` (a Sphinx application's) builds."""
    if config is None:
        return ENGLISH[key]
    return catalog(config.language).pgettext(key, ENGLISH[key])


def catalog(language: str | None) -> gettext.NullTranslations:
    """The book catalog of ``language`` (a Sphinx language: "zh_CN"), or of its base language
    ("zh"); English (no translation) if there is neither."""
    for code in dict.fromkeys([language or "en", (language or "en").split("_")[0]]):
        po = PACKAGE / "locale" / code / "LC_MESSAGES" / f"{CATALOG}.po"
        if po.is_file():
            stat = po.stat()
            return compiled(po.as_posix(), stat.st_mtime_ns, stat.st_size)
    return gettext.NullTranslations()


@cache
def compiled(po: str, mtime_ns: int, size: int) -> gettext.GNUTranslations:
    """A .po compiled in memory, as its .mo file reads: once per version of the file (its
    time and size are part of the key), whichever build asks."""
    return gettext.GNUTranslations(io.BytesIO(compiled_catalog(Path(po))))


def compiled_catalog(po: Path) -> bytes:
    """What a catalog's .mo file holds (fuzzy entries left out), compiled by babel: the one
    compiler of the book's .po files, in memory here, into the doctrees for the theme's
    catalog (:mod:`.languages`), beside the .po for Sphinx's (the build driver)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    data = io.BytesIO()
    with po.open("rb") as source:
        write_mo(data, read_po(source, locale=po.parents[1].name))  # <locale>/LC_MESSAGES/<name>.po
    return data.getvalue()
