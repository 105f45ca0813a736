"""Two executions of the book print the same: finds cells whose output changes from run to run.

    python -m book_extensions determinism [--docs docs] [--cache-root .jupyter_cache] [-j N]

A page served from the cache hides a cell that prints the time, an unseeded random
number or a set's order: its output was right once, and the next cold build differs.
This executes every page once more, into a scratch cache, and compares each code
cell's outputs with what the build's cache holds (build first: ``nox -s docs``): the text
and every other kind a cell shows (figures, HTML, Markdown, JSON, by
:func:`..records.cell_records.media_entry`; a kind nothing can compare is refused). Object
addresses are blanked on both sides, as on the pages. The pages run as the build runs them,
several at once (``-j``, default one per core, like the build's ``-j auto``), each in a
kernel of its own.

One execution serves every language (the cache is keyed on code without comments and
docstrings, :mod:`book_extensions.execution.code_comments`), so the second execution runs the page
of another language than the one whose execution the cache holds (the second language's,
unless that one ran): an output that depends on the comments, such as a line number that
a comment moved, is found here, naming both pages. A book in one language runs its pages
twice.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path

from ..configuration.settings import book_languages, read, reference_language
from ..execution.cache_key import cache_dir
from ..paths import ROOT, add_folder_options, shown
from ..records import cell_records, release_changes
from ..records.release_records import execute_missing
from .toolchain import ToolchainError, environment_held


def differences(first: dict, second: dict, docs: Path, ran: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """One line per code cell whose outputs differ between two records of the same book;
    ``ran``: per page, the language of the execution in each record (default the reference's)."""
    found = []
    for page, cells in first["pages"].items():
        one, two = (ran or {}).get(page, (reference_language(),) * 2)
        for number, (a, b) in enumerate(zip(cells, second["pages"].get(page, [])), start=1):
            page_one, page_two = (shown(docs / language / f"{page}.md", Path.cwd()) for language in (one, two))
            if a["outputs"] == b["outputs"] and a.get("media", []) != b.get("media", []):
                # Text alike, but a figure, HTML or JSON not: say which kind (its digests mean nothing to a reader).
                kind = cell_records.compare_media(a.get("media", []), b.get("media", []))[-1]["shown"]
                pages = page_one if one == two else f"{page_one} and {page_two}"
                found.append(f"{pages}: code cell {number} showed a different {kind} in two executions"
                             f"{'' if one == two else ', one of each page'}: seed it, sort it, or show less")
                continue
            if a["outputs"] != b["outputs"]:
                left, right = release_changes.excerpt(" | ".join(a["outputs"]), " | ".join(b["outputs"]))
                if one == two:
                    found.append(f"{page_one}: code cell {number} printed differently in two "
                                 f"executions: {left!r} then {right!r}; seed it, sort it, or print less")
                    continue
                found.append(f"{page_one} and {page_two}: code cell "
                             f"{number} printed differently in two executions, one of each page: {left!r} then "
                             f"{right!r}; print nothing that the comments change (a line number, a docstring), "
                             "and seed it, sort it, or print less")
    return found


def executed_language(uri: str, page: str, languages: list[str]) -> str | None:
    """The language whose page a cache record was executed from (its uri), if it says."""
    return next((lang for lang in languages if Path(uri).as_posix().endswith(f"/{lang}/{page}.md")), None)


def second_pages(docs: Path, cache: Path) -> tuple[list[tuple[str, object, Path]], dict[str, tuple[str, str]]]:
    """What to execute again: per page, the page of another language than the one the cache
    ran (the second language's, or the reference's when that one ran or is the only one);
    and per page, (the language the cache ran, the language run now). The pages that took
    longest the first time come first, so that pages run at once end together."""
    from jupyter_cache import get_cache

    from ..execution.runner import cache_lock, cached_notebook

    languages = [lang.code for lang in book_languages() if (docs / lang.code).is_dir()]
    reference = reference_language()
    other = next((lang for lang in languages if lang != reference), reference)
    notebooks = {lang: dict(cell_records.book_notebooks(docs, lang)) for lang in {reference, other}}
    store = get_cache(str(cache))
    pages, ran, seconds = [], {}, {}
    for page, notebook in notebooks[reference].items():
        found = None
        if any(c.cell_type == "code" for c in notebook.cells):
            with cache_lock(str(cache)):  # cached_notebook may drop a damaged record
                found, _, _ = cached_notebook(store, notebook)
        first = (executed_language(found.uri, page, languages) if found is not None else None) or reference
        now = other if first != other and page in notebooks[other] else reference
        pages.append((page, notebooks[now][page], docs / now / f"{page}.md"))
        ran[page] = (first, now)
        seconds[page] = ((found.data or {}).get("execution_seconds") or 0) if found is not None else 0
    pages.sort(key=lambda entry: -seconds[entry[0]])
    return pages, ran


def execute(docs: Path, scratch: Path, timeout: int, pages: list, jobs: int) -> None:
    """Each of ``pages`` executed into the cache ``scratch``, ``jobs`` pages at a time, each in a
    process (and kernel) of its own, as the build's parallel readers run them, in their order.
    The first page that fails stops those not started yet."""
    if jobs <= 1 or len(pages) <= 1:
        execute_missing(docs, scratch, timeout, pages)
        return
    with ProcessPoolExecutor(min(jobs, len(pages))) as pool:
        runs = pool.map(execute_missing, repeat(docs), repeat(scratch), repeat(timeout), [[page] for page in pages])
        try:
            for _ in runs:
                pass
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def check(docs: Path, cache_root: Path, timeout: int, jobs: int = 1) -> tuple[int, list[str]]:
    """How many code cells were executed again, and the lines about those that differ."""
    folder = cache_dir(cache_root, "cpu")
    first = cell_records.record("cpu", folder, docs)
    pages, ran = second_pages(docs, folder)
    with tempfile.TemporaryDirectory(prefix="book-determinism-") as scratch:
        execute(docs, Path(scratch), timeout, pages, jobs)
        second = cell_records.record("cpu", Path(scratch), docs, notebooks=[(page, nb) for page, nb, _ in pages])
    return sum(map(len, first["pages"].values())), differences(first, second, docs, ran)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions determinism", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_folder_options(parser, "--docs", "--cache-root")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="pages executed at once (default: one per core)")
    args = parser.parse_args(argv)
    timeout = read(ROOT).nb_execution_timeout
    try:
        with environment_held():
            cells, found = check(args.docs, args.cache_root, timeout, args.jobs)
    except (release_changes.ReleasesError, cell_records.RecordError, cell_records.UncomparableOutput,
            ToolchainError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    print(f"{cells} code cells executed twice: {len(found)} printed differently")
    return 1 if found else 0
