"""The languages of the book must be the same book.

Every language has the same page files, and each page has the same notebook
front matter, the same code cells (count, order, metadata, and source once comments
and docstrings are left out, :mod:`..execution.code_comments`: the code a reader of either language
runs; which is also what makes the second language a pure cache hit), the same doctest blocks
the same section structure (heading levels and explicit ``(label)=`` targets) and the same
exercises' options (``{exercise}``: its id, misconception, answer and each choice's conditions,
:mod:`.exercise_answers`; the question and the choices' texts are prose).
Prose is free, but every section must get the same anchor in every language: a
heading without a ``(label)=`` above it is refused when the id that docutils makes
from its text differs between languages (``自测`` becomes ``id8``, not
``check-yourself``), since the language switch carries the reader's section over.

The programs that pages load or offer for download (``examples/<name>.py``) are code a
reader runs too: each has a twin per other language, ``examples/<language>/<name>.py``,
with the same code and its comments and docstrings in that language, and that language's
pages name the twin (``:load: ../../examples/zh/<name>.py``), never the first language's
program. Comments and docstrings being free, no output may depend on them: see
:mod:`..execution.code_comments` for the checks that keep it so.

Run by the build of each non-default language, comparing it with the default one,
and on its own: ``python -m book_extensions parity docs``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

from docutils.nodes import make_id
from markdown_it.renderer import RendererHTML
from myst_nb.core.read import read_myst_markdown_notebook
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from sphinx.application import Sphinx
from sphinx.util import logging

from ..execution import code_comments
from ..execution.code_comments import code_of
from ..myst_source import not_utf8
from ..paths import DOCS, write_atomically
from .exercise_answers import source_options

logger = logging.getLogger(__name__)

EXERCISE_FENCE = "{exercise}"  # its options are the language-neutral part (checks/exercise_answers.py)
CHECKED_FENCES = ("{doctest}", "{testcode}", "{testoutput}", "{testsetup}", "{testcleanup}")


@dataclass
class Page:
    """What must be equal between languages, read from one MyST notebook page."""

    front_matter: dict
    code_cells: list[tuple[str, dict]]
    headings: list[int]
    labels: list[str]
    checked_blocks: list[str]
    # Per heading: its text, and whether a (label)= stands right above it.
    titles: list[tuple[str, bool]] = ()
    # Per exercise: its options (id, misconception, answer, each choice's conditions).
    exercises: list[dict] = ()

    def anchors(self) -> list[str | None]:
        """Per heading, the id docutils would give it, or None when a label names it.

        "" stands for no id of its own: the text has no ASCII letter (``自测`` gets a
        number, ``id8``), or another heading or a label of the page wants the same id.
        """
        made = [make_id(text) for text, _ in self.titles]  # labelled ones keep theirs too
        taken = made + self.labels
        return [None if labelled else a if taken.count(a) == 1 else ""
                for a, (_, labelled) in zip(made, self.titles)]


HEADING_TEXT = ("text", "code_inline")


def read_page(path: Path) -> Page:
    notebook = read_myst_markdown_notebook(path.read_text(encoding="utf8"), path=str(path))
    parser = create_md_parser(MdParserConfig(enable_extensions={"colon_fence", "deflist"}), RendererHTML)
    code_cells, headings, labels, blocks, titles, exercises = [], [], [], [], [], []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            code_cells.append((cell.source, dict(cell.metadata)))
            continue
        if cell.cell_type != "markdown":
            continue
        tokens = parser.parse(cell.source)
        for index, token in enumerate(tokens):
            if token.type == "heading_open":
                headings.append(int(token.tag[1:]))
                text = "".join(c.content for c in tokens[index + 1].children or () if c.type in HEADING_TEXT)
                titles.append((text, index > 0 and tokens[index - 1].type == "myst_target"))
            elif token.type == "myst_target":
                labels.append(token.content)
            elif token.type in ("fence", "colon_fence") and token.info.split(" ")[0] in CHECKED_FENCES:
                blocks.append(token.content)
            elif token.type in ("fence", "colon_fence") and token.info.split(" ")[0] == EXERCISE_FENCE:
                exercises.append(source_options(token.content))
    metadata = {k: v for k, v in notebook.metadata.items() if k != "source_map"}
    return Page(metadata, code_cells, headings, labels, blocks, titles, exercises)


def shown_anchor(anchor: str | None) -> str:
    return f"#{anchor}" if anchor else "no id of its own (a number: #id1, #id2…)"


def differences(page: Page, reference: Page, ref_name: str) -> list[str]:
    """One line for each code cell of ``page`` that differs from ``reference``'s (every one,
    so that one run names them all), else one for the first other way the two differ."""
    if page.front_matter != reference.front_matter:
        return [f"its front matter differs from {ref_name}'s"]
    if len(page.code_cells) != len(reference.code_cells):
        return [f"it has {len(page.code_cells)} code cells, {ref_name} has {len(reference.code_cells)}"]
    cells = [difference for number, (mine, theirs) in enumerate(zip(page.code_cells, reference.code_cells), start=1)
             if (difference := cell_difference(number, mine, theirs, ref_name))]
    if cells:
        return cells
    other = structure_difference(page, reference, ref_name)
    return [other] if other else []


def first_difference(page: Page, reference: Page, ref_name: str) -> str | None:
    """The first of :func:`differences`, or None."""
    return next(iter(differences(page, reference, ref_name)), None)


def cell_difference(number: int, mine: tuple, theirs: tuple, ref_name: str) -> str | None:
    """How code cell ``number`` (its code and its options) differs from its twin, or None."""
    difference = code_difference(mine[0], theirs[0], ref_name)
    if difference:
        return f"code cell {number}'s {difference.removeprefix('its ')}"
    # A program is loaded from each language's own twin (examples/<language>/), which
    # example_references checks: the metadata says the same but for that folder.
    loads = [Path(str(m.get("load"))).name if "load" in m else None for m in (mine[1], theirs[1])]
    if loads[0] != loads[1]:
        return f"code cell {number} loads {loads[0] or 'no program'}, {ref_name}'s {loads[1] or 'no program'}"
    mine_, theirs_ = ({k: v for k, v in m.items() if k != "load"} for m in (mine[1], theirs[1]))
    if mine_ != theirs_:
        return f"code cell {number} has metadata {mine[1]}, {ref_name} has {theirs[1]}"
    return None


def structure_difference(page: Page, reference: Page, ref_name: str) -> str | None:
    """One line describing the first way ``page`` differs from ``reference`` besides its code
    cells (:func:`differences` compares those): headings, labels, doctests, exercises."""
    if len(page.headings) != len(reference.headings):
        return f"it has {len(page.headings)} headings, {ref_name} has {len(reference.headings)}"
    if page.headings != reference.headings:
        number = next(i for i, (a, b) in enumerate(zip(page.headings, reference.headings), 1) if a != b)
        return f"heading {number} is level {page.headings[number - 1]}, in {ref_name} level {reference.headings[number - 1]}"
    if page.labels != reference.labels:
        return f"its labels {page.labels} differ from {ref_name}'s {reference.labels}"
    for number, (mine, theirs) in enumerate(zip(page.anchors(), reference.anchors()), start=1):
        if (mine is None) != (theirs is None):
            return f"heading {number} has a (label)= right above it in one language only"
        if mine != theirs or mine == "":
            return (f"heading {number} \"{page.titles[number - 1][0]}\" has no label and gets {shown_anchor(mine)}, "
                    f"{ref_name}'s \"{reference.titles[number - 1][0]}\" gets {shown_anchor(theirs)}: "
                    f"put the same (label)= above it in both languages")
    if page.checked_blocks != reference.checked_blocks:
        return f"its doctest blocks differ from {ref_name}'s"
    if len(page.exercises) != len(reference.exercises):
        return f"it has {len(page.exercises)} exercises, {ref_name} has {len(reference.exercises)}"
    for number, (mine, theirs) in enumerate(zip(page.exercises, reference.exercises), start=1):
        if mine != theirs:
            key = next(k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k))
            return (f"exercise {number} ({theirs.get('id', mine.get('id'))!r}) has {key}: {mine.get(key)!r}, "
                    f"{ref_name}'s {theirs.get(key)!r}: an exercise's options (its answer and what each "
                    "choice's output shows) are the same in every language")
    return None


def compare(docs: Path, language: str, reference: str, suffix: str = ".md",
            clean: dict[str, list[str]] | None = None, read_by_sphinx: bool = False) -> list[tuple[str, str]]:
    """(path from the docs' parent folder, problem) for every page of ``language`` that differs
    from ``reference``, and every program of ``examples/`` whose twin is missing or differs.

    ``clean``: the pairs of pages found the same before, each by the digests of its two
    files; a pair with the same digests is not read again. It is left holding this
    comparison's clean pairs (a pair with a problem is read again next time). ``read_by_sphinx``:
    the language's pages are being read by Sphinx, whose check (page_sources.py) reports a page
    that is not UTF-8; else this comparison does."""
    mine_dir, ref_dir = docs / language, docs / reference
    mine = {p.relative_to(mine_dir) for p in mine_dir.rglob(f"*{suffix}")}
    theirs = {p.relative_to(ref_dir) for p in ref_dir.rglob(f"*{suffix}")}
    top = docs.name
    problems = []
    for rel in sorted(theirs - mine):
        problems.append((f"{top}/{ref_dir.name}/{rel}", f"has no {language} counterpart ({language}/{rel})"))
    for rel in sorted(mine - theirs):
        problems.append((f"{top}/{language}/{rel}", f"has no {reference} counterpart ({reference}/{rel})"))
    known, now = clean or {}, {}
    for rel in sorted(mine & theirs):
        contents = [(mine_dir / rel).read_bytes(), (ref_dir / rel).read_bytes()]  # each read once
        pair = [hashlib.sha256(data).hexdigest() for data in contents]
        if known.get(rel.as_posix()) == pair:
            now[rel.as_posix()] = pair
            continue
        undecodable = not_utf8(contents[0])
        if undecodable:
            if not read_by_sphinx:
                problems.append((f"{top}/{language}/{rel}", f"is not valid UTF-8 (byte 0x{undecodable[1]} at line "
                                                            f"{undecodable[0]}): save the page as UTF-8"))
            continue
        undecodable = not_utf8(contents[1])
        if undecodable:
            problems.append((f"{top}/{language}/{rel}", f"cannot be compared with {reference}/{rel}, which is not valid "
                                                        f"UTF-8 (byte 0x{undecodable[1]} at line {undecodable[0]}): "
                                                        "save that page as UTF-8"))
            continue
        try:
            found = differences(read_page(mine_dir / rel), read_page(ref_dir / rel), f"{reference}/{rel}")
        except Exception as error:  # a page that does not even parse
            found = [f"cannot be read: {error}"]
        problems += [(f"{top}/{language}/{rel}", difference) for difference in found]
        if not found:
            now[rel.as_posix()] = pair
    if clean is not None:
        clean.clear()
        clean.update(now)
    return problems + twin_problems(docs.parent / "examples", language) + example_references(docs, language, reference)


def code_difference(mine: str, theirs: str, ref_name: str) -> str | None:
    """How ``mine``'s code (comments and docstrings aside) differs from ``theirs``, or None."""
    if code_of(mine) == code_of(theirs):
        return None
    pairs = zip_longest(code_of(mine).split("\n"), code_of(theirs).split("\n"))
    a, b = next(pair for pair in pairs if pair[0] != pair[1])
    here = "no such line" if a is None else repr(a)
    there = "no such line" if b is None else repr(b)
    return f"its code (comments and docstrings aside) differs from {ref_name}'s: {here} here, {there} there"


def twin_problems(examples: Path, language: str) -> list[tuple[str, str]]:
    """Every program of ``examples/`` without a twin in ``examples/<language>/`` with the same
    code, and every twin without its program."""
    if not examples.is_dir():
        return []
    top, folder = examples.name, examples / language
    programs = {p.name for p in examples.glob("*.py")}
    twins = {p.name for p in folder.glob("*.py")} if folder.is_dir() else set()
    problems = []
    for name in sorted(programs - twins):
        problems.append((f"{top}/{language}/{name}", f"is missing: {top}/{name} needs a {language} twin, the same "
                                                     f"code with its comments and docstrings in {language}"))
    for name in sorted(twins - programs):
        problems.append((f"{top}/{language}/{name}", f"has no {top}/{name} to be the {language} twin of"))
    for name in sorted(programs & twins):
        try:
            difference = code_difference((folder / name).read_text(encoding="utf8"),
                                         (examples / name).read_text(encoding="utf8"), f"{top}/{name}")
        except UnicodeDecodeError:  # the pair cannot be compared: say which files, and where
            for path in (folder / name, examples / name):
                found = not_utf8(path.read_bytes())
                if found:
                    problems.append((f"{top}/{path.relative_to(examples).as_posix()}",
                                     f"not valid UTF-8 (byte 0x{found[1]} at line {found[0]}): save the program as UTF-8"))
            continue
        if difference:
            problems.append((f"{top}/{language}/{name}", difference))
    return problems


# What a page loads into a code cell (``:load:`` or ``load:`` in its options), shows a
# part of ({literalinclude} path) or offers for download ({download}`text <path>` or {download}`path`).
REFERENCE = re.compile(r"^\s*:?load:\s*(?P<load>\S+)\s*$|^[`~:]{3,}\{literalinclude\}[ \t]+(?P<include>\S+)"
                       r"|\{download\}`(?:[^`<]*<(?P<target>[^>`]+)>|(?P<plain>[^`]+))`", re.M)


def example_references(docs: Path, language: str, reference: str) -> list[tuple[str, str]]:
    """Pages of ``language`` (and of ``reference``) that name a program of ``examples/``
    other than their own language's: the first language's pages name ``examples/<name>.py``,
    every other language's ``examples/<language>/<name>.py``."""
    examples = (docs.parent / "examples").resolve()
    problems = []
    for lang in (reference, language):
        own = examples if lang == reference else examples / lang
        for path in sorted((docs / lang).rglob("*.md")):
            # A page that is not UTF-8 is reported where pages are read (page_sources.py).
            text = path.read_text(encoding="utf8", errors="replace")
            for found in REFERENCE.finditer(text):
                named = (found["load"] or found["include"] or found["target"] or found["plain"]).strip()
                target = Path(os.path.normpath(path.parent.resolve() / named))
                if not target.is_relative_to(examples) or target.parent == own:
                    continue
                line = text.count("\n", 0, found.start()) + 1
                wanted = Path(os.path.relpath(own / target.name, path.parent.resolve())).as_posix()
                problems.append((f"{docs.name}/{path.relative_to(docs).as_posix()}",
                                 f"line {line} names {named}: a {lang} page shows {wanted}, the program "
                                 f"with its comments and docstrings in {lang}"))
    return problems


CLEAN_RECORD = "book-parity-clean.json"  # in the doctrees: the pairs of pages found the same


def checker_digest() -> str:
    """What reading and comparing a page depends on besides the pages: this code, and the
    parsers it reads them with."""
    from . import exercise_answers

    parts = [Path(__file__).read_bytes(), Path(code_comments.__file__).read_bytes(),
             Path(exercise_answers.__file__).read_bytes()]
    parts += [importlib.metadata.version(name).encode() for name in ("myst-nb", "myst-parser", "markdown-it-py")]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def check_build(app: Sphinx) -> None:
    languages = app.config.book_languages
    srcdir = Path(app.srcdir)
    reference = languages[0].code
    if srcdir.name == reference:
        return
    # Reading every page of two languages takes two seconds, more than the rebuild after a
    # prose edit: only the pairs that changed since they were found the same are read.
    record, checker = Path(app.doctreedir) / CLEAN_RECORD, checker_digest()
    clean: dict[str, list[str]] = {}
    try:
        noted = json.loads(record.read_text(encoding="utf8"))
        if noted.get("checker") == checker and isinstance(noted.get("pairs"), dict):
            clean = noted["pairs"]
    except (OSError, ValueError, AttributeError):
        pass
    problems = compare(srcdir.parent, srcdir.name, reference, clean=clean, read_by_sphinx=True)
    for page, problem in problems:
        logger.warning(f"parity: {page} {problem}", type="book", subtype="parity")
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(record, json.dumps({"checker": checker, "pairs": clean}, sort_keys=True))


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", check_build)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..configuration.settings import book_languages

    parser = argparse.ArgumentParser(prog="python -m book_extensions parity", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("docs", nargs="?", type=Path, default=DOCS,
                        help="the folder with one sub-folder per language (default: docs)")
    docs = parser.parse_args(argv).docs
    languages = [lang.code for lang in book_languages()]
    reference = languages[0]
    problems = [pp for lang in languages if lang != reference for pp in compare(docs, lang, reference)]
    for page, problem in problems:
        print(f"{page}: {problem}")
    return 1 if problems else 0
