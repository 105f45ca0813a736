"""The languages of the book must be the same book.

Every language has the same page files, and each page has the same notebook
front matter, the same code cells (count, order, metadata, and source once comments
and docstrings are left out, :mod:`.code_comments`: the code a reader of either language
runs; which is also what makes the second language a pure cache hit), the same doctest blocks
and the same section structure (heading levels and explicit ``(label)=`` targets).
Prose is free, but every section must get the same anchor in every language: a
heading without a ``(label)=`` above it is refused when the id that docutils makes
from its text differs between languages (``自测`` becomes ``id8``, not
``check-yourself``), since the language switch carries the reader's section over.

Run by the build of each non-default language, comparing it with the default one,
and on its own: ``python -m book_extensions.parity docs``.
"""

from __future__ import annotations

import json
import sys
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

from .code_comments import code_of

logger = logging.getLogger(__name__)

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
    code_cells, headings, labels, blocks, titles = [], [], [], [], []
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
    metadata = {k: v for k, v in notebook.metadata.items() if k != "source_map"}
    return Page(metadata, code_cells, headings, labels, blocks, titles)


def shown(anchor: str | None) -> str:
    return f"#{anchor}" if anchor else "no id of its own (a number: #id1, #id2…)"


def first_difference(page: Page, reference: Page, ref_name: str) -> str | None:
    """One line describing the first way ``page`` differs from ``reference``."""
    if page.front_matter != reference.front_matter:
        return f"its front matter differs from {ref_name}'s"
    if len(page.code_cells) != len(reference.code_cells):
        return f"it has {len(page.code_cells)} code cells, {ref_name} has {len(reference.code_cells)}"
    for number, (mine, theirs) in enumerate(zip(page.code_cells, reference.code_cells), start=1):
        if code_of(mine[0]) != code_of(theirs[0]):
            pairs = zip_longest(code_of(mine[0]).split("\n"), code_of(theirs[0]).split("\n"))
            a, b = next(pair for pair in pairs if pair[0] != pair[1])
            here = "no such line" if a is None else repr(a)
            there = "no such line" if b is None else repr(b)
            return (f"code cell {number}'s code (comments and docstrings aside) differs from {ref_name}'s: "
                    f"{here} here, {there} there")
        if mine[1] != theirs[1]:
            return f"code cell {number} has metadata {mine[1]}, {ref_name} has {theirs[1]}"
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
            return (f"heading {number} \"{page.titles[number - 1][0]}\" has no label and gets {shown(mine)}, "
                    f"{ref_name}'s \"{reference.titles[number - 1][0]}\" gets {shown(theirs)}: "
                    f"put the same (label)= above it in both languages")
    if page.checked_blocks != reference.checked_blocks:
        return f"its doctest blocks differ from {ref_name}'s"
    return None


def compare(docs: Path, language: str, reference: str, suffix: str = ".md") -> list[tuple[str, str]]:
    """(page path, problem) for every page of ``language`` that differs from ``reference``."""
    mine_dir, ref_dir = docs / language, docs / reference
    mine = {p.relative_to(mine_dir) for p in mine_dir.rglob(f"*{suffix}")}
    theirs = {p.relative_to(ref_dir) for p in ref_dir.rglob(f"*{suffix}")}
    problems = []
    for rel in sorted(theirs - mine):
        problems.append((f"{ref_dir.name}/{rel}", f"has no {language} counterpart ({language}/{rel})"))
    for rel in sorted(mine - theirs):
        problems.append((f"{language}/{rel}", f"has no {reference} counterpart ({reference}/{rel})"))
    for rel in sorted(mine & theirs):
        try:
            difference = first_difference(read_page(mine_dir / rel), read_page(ref_dir / rel), f"{reference}/{rel}")
        except Exception as error:  # a page that does not even parse
            difference = f"cannot be read: {error}"
        if difference:
            problems.append((f"{language}/{rel}", difference))
    return problems


def stamps(*folders: Path) -> list:
    return sorted([p.as_posix(), p.stat().st_mtime_ns, p.stat().st_size]
                  for folder in folders for p in folder.rglob("*.md"))


def check_build(app: Sphinx) -> None:
    languages = app.config.book_languages
    srcdir = Path(app.srcdir)
    reference = languages[0]["code"]
    if srcdir.name == reference:
        return
    # Reading every page of two languages costs more than a build that changed
    # nothing: skip while no page changed since a comparison that found no problem.
    record = Path(app.doctreedir) / "book-parity-clean.json"
    now = stamps(srcdir, srcdir.parent / reference)
    try:
        if json.loads(record.read_text()) == now:
            return
    except (OSError, ValueError):
        pass
    problems = compare(srcdir.parent, srcdir.name, reference)
    for page, problem in problems:
        logger.warning(f"parity: docs/{page} {problem}", type="book", subtype="parity")
    if problems:
        record.unlink(missing_ok=True)
    else:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(now))


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", check_build)


def main(argv: list[str]) -> int:
    from .config import book_languages

    docs = Path(argv[0]) if argv else Path("docs")
    languages = [lang["code"] for lang in book_languages()]
    reference = languages[0]
    problems = [pp for lang in languages if lang != reference for pp in compare(docs, lang, reference)]
    for page, problem in problems:
        print(f"docs/{page}: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
