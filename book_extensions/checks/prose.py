"""Checks on the prose of every page (not its code, which runs).

A sentence that names the torch release that built the page goes stale the day torch is
upgraded, and nothing would notice. Prose says "the torch that built this page" and, where
the number matters, writes ``{{ torch_version }}``, which the build fills in; what an older
release printed comes from its record (:mod:`..records.release_changes`), never from a sentence.

A language may also keep a term list, ``docs/terms.<code>.toml`` (its header says how to
write one): each entry names the word the edition uses for a concept, the variants it does
not use, and patterns for misuses a fixed string cannot name (a word near another word,
a word anywhere except in a set phrase). A variant or a pattern's match is a warning naming
the page and the line, so one careful pass over the terminology stays done. What is checked
is everything a reader reads as the book's words: the prose of every page (its headings, so
the page titles of the side bar and of ``<title>``, and the prose inside notes and
admonitions; a link's text, never its target; never code, inline code or outputs), the
captions of its tables of contents, and, once per build, the site's title and the
edition's interface strings (``locale/<language>/LC_MESSAGES/*.po``).

The glossary shows the list's words: ``{term-list} zh`` renders ``docs/terms.zh.toml`` as a
definition list, in every language, each term's meaning in the page's language (not its
variants and patterns, which are the editing rules this module applies).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from .. import build_state
from ..myst_source import blocks, fence_at, front_matter_end, lines
from ..paths import PACKAGE, ROOT, shown
from .term_list import PATTERN_KEYS, TERM_KEYS, Pattern, Term, load_terms, pattern_of, term_of  # noqa: F401

logger = logging.getLogger(__name__)

# "torch 2.13", "PyTorch 2.x", "torch==2.15.0", "2.13 版", "release 2.14.1".
LITERAL_VERSION = re.compile(
    r"(?i)(?:\b(?:py)?torch\b|\brelease|\bversion|版本?)\W{0,3}(?:==|>=|<=|v)?\s*\d+\.(?:\d+|x)\b"
    r"|\b\d+\.\d+(?:\.\d+)?\s*(?:版|版本|release)"
)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")
# A MyST role: {doc}`text <target>`, {ref}`target`, {math}`x^2`.
ROLE = re.compile(r"\{([\w:.-]+)\}(`+)((?:(?!\2).)+)\2")
# Roles whose text (before " <target>") is the words a reader reads; the text of any other role is code.
LINK_ROLES = {"doc", "ref", "numref", "term", "download", "any", "eq"}
OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*)$")
# Directives whose body is prose: their body's lines are checked, their other options are not.
PROSE_DIRECTIVES = {"admonition", "note", "tip", "hint", "important", "warning", "caution", "attention",
                    "danger", "error", "seealso", "topic", "sidebar", "only", "epigraph", "pull-quote",
                    "exercise"}  # an exercise's question, choices and explanation (its options are its matchers)
# ... and whose argument is a title (the argument of {only} is an expression).
TITLED = {"admonition", "topic", "sidebar"}
SENTENCE_END = re.compile(r"[。！？；!?;]")
TERMS = "terms.{code}.toml"
REFERENCE = "en"  # the language the term list's ``meaning`` is written in


def prose_lines(text: str):
    """(line number, line) for every line of a MyST page outside its front matter and its
    backtick and tilde fences. A colon-fenced directive's lines are read: a {note}'s body is prose."""
    page_lines = lines(text)
    start = front_matter_end(page_lines)
    fenced = {number for block in blocks(text, markers="`~") for number in block.lines}
    for number, line in enumerate(page_lines[start:], start=start + 1):
        if number not in fenced:
            yield number, line


def literal_versions(text: str) -> list[tuple[int, str]]:
    """(line, match) for every torch release named in the prose of a MyST page."""
    return [(number, m.group(0)) for number, line in prose_lines(text) for m in LITERAL_VERSION.finditer(line)]


def reader_text(line: str) -> str:
    """A line of prose as a reader reads its words: a link role's text kept, its target and any
    other role or inline code blanked (same length, so columns stay where they were)."""
    def role(m: re.Match) -> str:
        name, text = m.group(1).rsplit(":", 1)[-1], m.group(3)
        target = re.search(r"\s*<[^<>]*>\s*$", text)
        if name not in LINK_ROLES or not target:
            return " " * len(m.group(0))
        start = m.start(3) - m.start(0)
        return " " * start + text[:target.start()] + " " * (len(m.group(0)) - start - target.start())

    line = ROLE.sub(role, line)
    line = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
    return re.sub(r"\]\([^)]*\)", lambda m: " " * len(m.group(0)), line)  # a Markdown link's target


def reader_lines(text: str):
    """(line number, text) for everything of a MyST page a reader reads as prose: the lines
    outside fences (headings included), the body and title of prose directives (notes,
    admonitions, {only}), and the caption of a table of contents; with reader_text applied.
    Code cells, doctests, outputs and other directives' bodies are never yielded."""
    # Unlike myst_source.blocks, this one goes into a prose directive's body, and the fences in it.
    page_lines = lines(text)
    start = front_matter_end(page_lines)
    stack = []  # the fences open around the line, innermost last
    options = False  # inside a directive's "---" block of options
    for number, line in enumerate(page_lines[start:], start=start + 1):
        inside = (stack[-1].directive or "") if stack else None  # "" inside a plain code block
        if options or (inside in PROSE_DIRECTIVES and line.strip() == "---" and fence_at(page_lines[number - 2])):
            options = not (options and line.strip() == "---")  # the block's last line ends it
            continue
        if stack and stack[-1].closed_by(line):
            stack.pop()
            continue
        if inside is not None and inside not in PROSE_DIRECTIVES:
            if inside == "toctree" and (option := OPTION.match(line)) and option.group(1) == "caption":
                yield number, reader_text(option.group(2))
            continue
        fence = fence_at(line)
        if fence:
            stack.append(fence)
            if fence.directive in TITLED and fence.argument.strip():
                yield number, reader_text(fence.argument)
            continue
        if inside is not None and OPTION.match(line):
            continue  # an option of a prose directive (:class:, :name:)
        yield number, line if not line.strip() else reader_text(line)


# --- the term list -----------------------------------------------------------------------

def sentences(text: str):
    """(offset, sentence) for each sentence of a line (ended by 。！？； or their half-width forms)."""
    start = 0
    for end in SENTENCE_END.finditer(text):
        yield start, text[start:end.end()]
        start = end.end()
    if text[start:].strip():
        yield start, text[start:]


@dataclass(frozen=True)
class Finding:
    line: int
    text: str  # what was found
    term: Term
    pattern: Pattern | None = None  # None: a variant
    context: str = ""  # the sentence around it, for the message


def text_findings(line: int, text: str, terms: list[Term]) -> list[Finding]:
    """Every variant and pattern match of ``terms`` in one line of reader text. A match inside
    another one's span is left out (梯度截断 is reported once, as a variant of 停止梯度)."""
    found: list[tuple[int, int, Finding]] = []
    for term in terms:
        checked = text
        for phrase in term.allow:
            checked = checked.replace(phrase, " " * len(phrase))
        for variant in term.variants:
            for m in re.finditer(re.escape(variant), checked):
                found.append((m.start(), m.end(), Finding(line, variant, term, None, around(text, m.start(), m.end()))))
        for pattern in term.patterns:
            for offset, sentence in sentences(text):
                for m in pattern.matches(sentence):
                    start, end = offset + m.start(), offset + m.end()
                    found.append((start, end, Finding(line, m.group(0), term, pattern, around(text, start, end))))
    kept = [item for item in found
            if not any(other is not item and other[0] <= item[0] and item[1] <= other[1]
                       and (other[1] - other[0]) > (item[1] - item[0]) for other in found)]
    return [finding for *_, finding in sorted(kept, key=lambda item: item[:2])]


def around(text: str, start: int, end: int, width: int = 12) -> str:
    return " ".join(text[max(0, start - width):end + width].split())


def term_findings(text: str, terms: list[Term]) -> list[Finding]:
    """Every variant and pattern match in what a reader reads of a MyST page, in line order."""
    return [finding for number, line in reader_lines(text) for finding in text_findings(number, line, terms)]


def describe(finding: Finding, listed_in: str) -> str:
    """The warning for one finding."""
    term, pattern = finding.term, finding.pattern
    if pattern is not None and pattern.advice:
        return f"{finding.text!r} in {finding.context!r}: {pattern.advice} (the term list is {listed_in})"
    return (f"{finding.text!r} is not this edition's word for {term.meaning}: write {term.use!r}"
            + (f" (in {finding.context!r})" if pattern is not None else "") + f" (the term list is {listed_in})")


def read_terms(app: Sphinx, config: Config) -> None:
    name = TERMS.format(code=Path(app.srcdir).name)
    path = Path(app.srcdir).parent / name
    build_state.run(app).terms = (f"docs/{name}", load_terms(path) if path.is_file() else [])


def check_source(app: Sphinx, docname: str, source: list[str]) -> None:
    for line, literal in literal_versions(source[0]):
        logger.warning(
            f"the prose names a torch release ({literal.strip()!r}): say 'the torch that built this page' "
            "and write {{ torch_version }} where the number matters; what an older release "
            "printed comes from its record (nox -s versions)",
            location=(docname, line), type="book", subtype="literal_version",
        )
    listed_in, terms = build_state.run(app).terms
    for finding in term_findings(source[0], terms):
        logger.warning(describe(finding, listed_in), location=(docname, finding.line), type="book", subtype="term")


def interface_texts(app: Sphinx) -> list[tuple[str, str]]:
    """(where, text) for the words of the edition that are not in any page: the site's title
    (every page's <title> and the side bar's top) and the edition's interface strings."""
    from babel.messages.pofile import read_po

    found = [("conf.py (book_languages: project)", app.config.project)]
    if app.config.html_title and app.config.html_title != app.config.project:
        found.append(("conf.py (html_title)", app.config.html_title))
    folder = PACKAGE / "locale" / app.config.language / "LC_MESSAGES"
    for po in sorted(folder.glob("*.po")):
        with po.open("rb") as file:
            catalog = read_po(file)
        found += [(f"{po.relative_to(ROOT)}:{message.lineno}", message.string)
                  for message in catalog if message.id and isinstance(message.string, str) and message.string]
    # The misconceptions' titles, which the index of exercises shows as headings.
    exercises = Path(app.srcdir).parent / "exercises.toml"
    language = Path(app.srcdir).name
    if exercises.is_file():
        table = tomllib.loads(exercises.read_text(encoding="utf8")).get("misconceptions", {})
        found += [(f"{shown(exercises)} ({name})", titles[language]) for name, titles in table.items()
                  if isinstance(titles, dict) and isinstance(titles.get(language), str)]
    return found


def check_interface(app: Sphinx) -> None:
    listed_in, terms = build_state.run(app).terms
    if not terms:
        return
    for where, text in interface_texts(app):
        for finding in text_findings(0, text, terms):
            logger.warning(describe(finding, listed_in), location=where, type="book", subtype="term")


def with_code(text: str):
    """A meaning as inline nodes: its `backticked` identifiers in code font, as in the pages."""
    from docutils import nodes

    parts = re.split(r"`([^`]+)`", text)
    return nodes.inline("", "", *(nodes.literal(part, part) if index % 2 else nodes.Text(part)
                                  for index, part in enumerate(parts) if part))


class TermList(SphinxDirective):
    """``{term-list} <language code>``: that language's term list as a definition list, each
    term the edition's word and its meaning in the language of the page (``meaning_<code>``,
    else ``meaning``).

    Only the words the edition uses are shown, as the glossary shows its other terms: the
    variants and the patterns are the build's editing rules, which stay in the term list.
    The page's own prose says once what the words are ("the Chinese edition writes"), where
    a table would repeat that label on every card of a phone's layout."""

    required_arguments = 1

    def run(self) -> list:
        from docutils import nodes

        name = TERMS.format(code=self.arguments[0])
        path = Path(self.env.srcdir).parent / name
        self.env.note_dependency(str(path))
        terms = load_terms(path)
        language = Path(self.env.srcdir).name  # docs/<code>: the page's language
        items = [nodes.definition_list_item(
                     "", nodes.term("", "", nodes.strong(term.use, term.use)),
                     nodes.definition("", nodes.paragraph("", "", with_code(term.meaning_in(language)))))
                 for term in terms]
        return [nodes.definition_list("", *items, classes=["book-term-list"])]


def setup(app: Sphinx) -> None:
    app.add_directive("term-list", TermList)
    app.connect("config-inited", read_terms)
    app.connect("source-read", check_source)
    app.connect("builder-inited", check_interface)
