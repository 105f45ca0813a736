"""The interface strings the book's extensions add, translated like the theme's: gettext.

The English text is here, by key; each language's translation is in
``locale/<language>/LC_MESSAGES/book.po`` (msgctxt is the key, msgid the English text),
compiled with the theme's catalogs by :func:`.languages.compile_catalogs`. Every Sphinx
run builds one language, so :func:`message` answers in the language being built
(:func:`use_catalog`; English before, and outside Sphinx).
Typography that is not a translation (separators) lives in conf.py's ``book_languages``.
"""

import gettext
from pathlib import Path

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
    "code_prompt_show": "Show code cell {type}",
    "code_prompt_hide": "Hide code cell {type}",
    "root_title": "Cutting the Graph · 切断计算图",
    "provenance_build": "This build ran on {device} and was made on {date}.",
    "terms_col_use": "the Chinese edition writes",
    "terms_col_meaning": "for",
    "terms_col_not": "and not",
    "terms_separator": ", ",
    "provenance_col_package": "package",
    "provenance_col_version": "version",
    "provenance_col_page": "page",
    "provenance_col_date": "outputs produced",
    "provenance_col_seconds": "execution (s)",
    "provenance_col_status": "in this build",
    "provenance_executed": "executed",
    "provenance_cached": "from the cache",
    "provenance_unchanged": "unchanged",
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
    "releases_nothing": "(nothing)",
    "releases_differ": "On torch {releases}, {count} cells print something else, folded under each (marked ≠).",
    "releases_unrecorded": "Not yet run on torch {release}: {count} cells, changed since its record.",
    "releases_missing": "No record yet for torch {releases}.",
    "releases_pair": "torch {old} → {new}",
    "releases_pair_summary": "{compared} code cells compared; {changed} print something else.",
    "releases_col_release": "torch",
    "releases_col_date": "recorded",
    "releases_col_python": "Python",
    "releases_col_cells": "code cells",
    "releases_col_cell": "page and cell",
    "releases_col_printed": "torch {release} printed",
    "footer_licence": "Text: {text}. Code: {code}.",
    "footer_report": "Report a mistake on this page",
    "footer_edit": "Edit this page",
    "list_and": " and ",
    "difference_raised_only": "{error} only on {side}",
    "difference_raised_other": "{one} raised {first}, {two} raised {second}",
    "difference_printed": "{one} printed {quoted_first}, {two} printed {quoted_second}",
    "difference_value": "{one} {first} against {two} {second}",
    "difference_missing": "not in the {two} record (code changed since)",
    "difference_stale": "this cell's code has changed since the {two} run",
    "not_found": "This page does not exist.",
    "not_found_link": "Go to the start of the book",
}


def message(key: str) -> str:
    """The interface string ``key`` in the language being built."""
    return pgettext(key, ENGLISH[key])


# The book catalog of the language being built (use_catalog); English until then.
translation: gettext.NullTranslations = gettext.NullTranslations()


def use_catalog(folder: Path, language: str) -> None:
    """Answer from the compiled ``book`` catalog of ``language`` in ``folder`` (English if none)."""
    global translation
    translation = gettext.translation(CATALOG, str(folder), languages=[language], fallback=True)


def pgettext(context: str, text: str) -> str:
    # A gettext.GNUTranslations: contexts keep equal English apart.
    return translation.pgettext(context, text)
