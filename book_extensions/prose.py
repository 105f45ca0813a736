"""Checks on the prose of every page (not its code, which runs).

A sentence that names the torch release that built the page goes stale the day torch is
upgraded, and nothing would notice. Prose says "the torch that built this page" and, where
the number matters, writes ``{{ torch_version }}``, which the build fills in; what an older
release printed comes from its record (:mod:`.releases`), never from a sentence.

A language may also keep a term list, ``docs/terms.<code>.toml``: each entry names the
word the edition uses for a concept and the variants it does not. A variant in a page's
prose (not in its code, nor in inline code) is a warning naming the page and the line, so
one careful pass over the terminology stays done. The glossary shows the list itself:
``{term-list} zh`` renders ``docs/terms.zh.toml`` as a table, in every language.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

# "torch 2.13", "PyTorch 2.x", "torch==2.15.0", "2.13 版", "release 2.14.1".
LITERAL_VERSION = re.compile(
    r"(?i)(?:\b(?:py)?torch\b|\brelease|\bversion|版本?)\W{0,3}(?:==|>=|<=|v)?\s*\d+\.(?:\d+|x)\b"
    r"|\b\d+\.\d+(?:\.\d+)?\s*(?:版|版本|release)"
)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")
TERMS = "terms.{code}.toml"


def prose_lines(text: str):
    """(line number, line) for every line of a MyST page outside its front matter and fences."""
    fence = None
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        start = next((i + 1 for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), 0)
    for number, line in enumerate(lines[start:], start=start + 1):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip()[len(opening.group(1)):].strip():
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        yield number, line


def literal_versions(text: str) -> list[tuple[int, str]]:
    """(line, match) for every torch release named in the prose of a MyST page."""
    return [(number, m.group(0)) for number, line in prose_lines(text) for m in LITERAL_VERSION.finditer(line)]


@dataclass(frozen=True)
class Term:
    use: str  # the edition's word
    meaning: str  # what it names, for the message
    variants: tuple[str, ...]  # words the edition does not use for it
    allow: tuple[str, ...] = ()  # phrases that contain a variant in another sense


def load_terms(path: Path) -> list[Term]:
    """The term list of one language; a file that is not one is a one-line ConfigError."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf8"))
        terms = [Term(entry["use"], entry["meaning"], tuple(entry["not"]), tuple(entry.get("allow", ())))
                 for entry in data["term"]]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError) as error:
        cause = f"missing {error}" if isinstance(error, KeyError) else str(error).splitlines()[0]
        raise ConfigError(f"{path}: not a term list ([[term]] entries with use, meaning and not): {cause}") from None
    for term in terms:
        if not term.variants or not all(isinstance(word, str) and word for word in (term.use, *term.variants)):
            raise ConfigError(f"{path}: the entry for {term.use!r} needs a non-empty list 'not' of words")
    return terms


def term_variants(text: str, terms: list[Term]) -> list[tuple[int, str, Term]]:
    """(line, variant, term) for every variant of a listed term in the prose of a MyST page."""
    found = []
    for number, line in prose_lines(text):
        prose = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for term in terms:
            checked = prose
            for phrase in term.allow:
                checked = checked.replace(phrase, " " * len(phrase))
            found += [(number, variant, term) for variant in term.variants for _ in re.finditer(re.escape(variant), checked)]
    return sorted(found, key=lambda item: item[0])


def read_terms(app: Sphinx, config: Config) -> None:
    name = TERMS.format(code=Path(app.srcdir).name)
    path = Path(app.srcdir).parent / name
    app.book_terms = (f"docs/{name}", load_terms(path) if path.is_file() else [])


def check_source(app: Sphinx, docname: str, source: list[str]) -> None:
    for line, literal in literal_versions(source[0]):
        logger.warning(
            f"the prose names a torch release ({literal.strip()!r}): say 'the torch that built this page' "
            "and write {{ torch_version }} where the number matters; what an older release "
            "printed comes from its record (nox -s versions)",
            location=(docname, line), type="book", subtype="literal_version",
        )
    listed_in, terms = app.book_terms
    for line, variant, term in term_variants(source[0], terms):
        logger.warning(
            f"{variant!r} is not this edition's word for {term.meaning}: write {term.use!r} "
            f"(the term list is {listed_in})",
            location=(docname, line), type="book", subtype="term",
        )


class TermList(SphinxDirective):
    """``{term-list} <language code>``: that language's term list as a table."""

    required_arguments = 1

    def run(self) -> list:
        from docutils import nodes

        from .layout import table
        from .messages import message

        name = TERMS.format(code=self.arguments[0])
        path = Path(self.env.srcdir).parent / name
        self.env.note_dependency(str(path))
        terms = load_terms(path)
        separator = message("terms_separator")
        rows = [[nodes.strong(term.use, term.use), term.meaning, separator.join(term.variants)] for term in terms]
        return [table([message("terms_col_use"), message("terms_col_meaning"), message("terms_col_not")], rows,
                      classes=["book-term-list"])]


def setup(app: Sphinx) -> None:
    app.add_directive("term-list", TermList)
    app.connect("config-inited", read_terms)
    app.connect("source-read", check_source)
