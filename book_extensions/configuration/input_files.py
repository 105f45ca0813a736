"""Every file the build reads besides the pages and conf.py, checked before Sphinx starts.

Inside Sphinx a bad one was a crash report (a truncated release record: a "parallel build
error" and a traceback that never named the file), or nothing at all (a record with no pages).
The build driver (:mod:`..commands.build`) asks :func:`problems` first; each problem is one
line naming the file (and line) and the cause, and the build stops before Sphinx with nothing
published:

- conf.py's ``book_releases_file`` (``torch-releases.txt``): one release a line, each once;
- the records in conf.py's ``book_results_dir`` (``results/``): ``cpu.json``, ``cuda.json``
  and ``cpu-torch-<release>.json``, each a record of that release;
- each language's term list, ``docs/terms.<code>.toml`` (its own loader's checks, and its
  ``[search]`` table of words);
- the words jieba keeps whole in the Chinese search index, ``docs/search_terms.zh.txt``;
- the misconceptions the exercises stand for, ``docs/exercises.toml`` (a title per language);
- the pages' folder itself, which must hold no symbolic link (:func:`linked_sources`).

conf.py's own settings are :func:`.settings.problems`'s.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from ..paths import shown
from . import settings

# jieba's user dictionary as the book writes it: a word, then a frequency and a part of speech.
SEARCH_TERM = re.compile(r"\S+(?: \d+)?(?: [a-z]+)?")
RECORD_NAME = re.compile(r"cpu-torch-(.+)\.json")


def problems(confdir: Path, docs: Path, sphinx_args=()) -> list[str]:
    """Why the build cannot read its input files, one line each ([] when it can)."""
    from ..checks import exercise_answers
    from ..records import cell_records, release_list

    overrides = settings.override_pairs(sphinx_args)
    given = dict(overrides)
    config = settings.read(confdir, overrides)
    found = release_list.problems(Path(confdir, config.book_releases_file),
                                  named(Path(confdir, config.book_releases_file)))
    results = Path(confdir, config.book_results_dir)
    # A misspelt folder or page given with -D was taken without a word (attack 7, cases 9d, 9e):
    # the pages then said no record exists. Only those given with -D: a book's own conf.py may
    # name a device page its pages lack (the test books do), or a folder not made yet (the
    # first `--record` makes it).
    if "book_results_dir" in given and not results.is_dir():
        found.append(f"book_results_dir: {named(results)} is not a folder (where the records of the outputs are)")
    page = given.get("book_device_page")
    reference = config.book_languages[0].code if config.book_languages else ""
    if page and not (docs / reference / f"{page}.md").is_file():
        found.append(f"book_device_page: {page!r} is not a page of {named(docs / reference)}")
    records = [results / "cpu.json", results / "cuda.json", *sorted(results.glob("cpu-torch-*.json"))]
    for path in records:
        if path.is_file():
            match = RECORD_NAME.fullmatch(path.name)
            if match and not release_list.RELEASE.fullmatch(match.group(1)):
                found.append(f"{named(path)}: not a record name: cpu-torch-<release>.json, such as cpu-torch-2.15.0.json")
                continue
            found += cell_records.record_problems(path, named(path), match.group(1) if match else None)
    found += linked_sources(docs)
    for language in config.book_languages:
        found += terms_problems(docs / f"terms.{language.code}.toml")
    found += search_terms_problems(docs / "search_terms.zh.txt")
    found += exercise_answers.misconceptions_problems(
        docs / exercise_answers.MISCONCEPTIONS_FILE, [language.code for language in config.book_languages],
        named(docs / exercise_answers.MISCONCEPTIONS_FILE))
    return found


def named(path: Path) -> str:
    return shown(path, Path.cwd())


def linked_sources(docs: Path) -> list[str]:
    """The symbolic links under ``docs``, each refused in one line. Sphinx follows them, but
    what the build digests to know whether a page changed does not go into a linked folder
    (an edit there was published by no later build), a loop crashed Sphinx, and a language
    folder linked to another's fails its configuration."""
    links = sorted(Path(root, name) for root, folders, files in os.walk(docs) for name in folders + files
                   if Path(root, name).is_symlink())
    # Named by its folder: a loop cannot be resolved.
    return [f"{named(path.parent)}/{path.name} is a symbolic link: the build does not follow links under "
            f"{named(docs)}; copy what it points to there instead" for path in links]


def terms_problems(path: Path) -> list[str]:
    """The term list's problem (its loader stops at the first), and its [search] table's."""
    if not path.is_file():
        return []
    from sphinx.errors import ConfigError

    from ..checks.term_list import load_terms

    try:
        load_terms(Path(named(path)))  # read as the message names it
    except ConfigError as error:
        return [str(error)]
    search = tomllib.loads(path.read_text(encoding="utf8")).get("search", {})
    if not isinstance(search, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                               for k, v in search.items()):
        return [f"{named(path)}: [search] must map each word readers type to the book's word, "
                "both strings (显存 = \"内存\")"]
    return []


def search_terms_problems(path: Path) -> list[str]:
    """Each line of the search words that jieba would misread, and each word given twice."""
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf8")
    except UnicodeDecodeError as error:
        return [f"{named(path)}: not UTF-8 (byte {error.object[error.start]:#04x} at offset {error.start})"]
    found, seen = [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if not SEARCH_TERM.fullmatch(line.strip()) or line.startswith("\ufeff"):
            found.append(f"{named(path)}:{number}: {line.strip()!r} is not 'word [frequency] [tag]' "
                         "(计算图 1000 n), which jieba reads")
            continue
        word = line.split()[0]
        if word in seen:
            found.append(f"{named(path)}:{number}: {word} is listed twice (also on line {seen[word]})")
        seen.setdefault(word, number)
    return found
