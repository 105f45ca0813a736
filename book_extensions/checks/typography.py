"""Chinese typography: checks that keep a CJK edition reading as if it were written in it.

A language whose ``book_languages`` entry says ``"typography": "cjk"`` gets two checks,
each a warning naming the page and the line:

- its sources keep each paragraph on one line (a line break inside CJK text shows as a
  space), and go through autocorrect-py, the well-kept CJK copywriting linter (spaces
  between CJK and Latin, full-width punctuation in CJK text, no spaces around full-width
  quotes). Its settings are the repository's ``.autocorrectrc``, the file autocorrect's
  own command line and editor plugins read, so an author's editor agrees with the build;
- its pages, once every cross-reference has its text, are checked where the problem only
  shows after Sphinx has put in a link's title: no space between a CJK character and a
  link, bold or other inline text that begins or ends with one; no italics on CJK (a
  slanted synthetic CJK font: CJK emphasis is bold); no half-width ``, ! : ; ?`` right
  after a CJK character; no space next to full-width punctuation; a link that names a
  section or chapter in a sentence is quoted (见“{doc}`副本 <copies>`”一章, not
  见{doc}`副本 <copies>`一章), and such a name is a link, never a quoted title as plain
  text (见“副本”一章), which leaves the reader to find it; inline code holds no CJK
  character (code font is for code: 下载 {download}`x.py <...>`, not
  {download}`下载 x.py <...>`).

Code, outputs and the text of inline literals are never checked as prose: what torch prints
is not prose.

Sentences longer than :data:`LONG_SENTENCE` Han characters are a report, not a gate:
``python -m book_extensions typography`` lists them in the Chinese pages (``--limit``,
pages as arguments). A long sentence is sometimes the right one (a list that reads as one
thought), and a gate would push writers to cut sentences at commas, which reads worse; the
report is for the editor who decides.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ConfigError
from sphinx.util import logging

from .. import build_state
from ..configuration.languages import current_language
from ..myst_source import HAN, blocks
from ..paths import DOCS

logger = logging.getLogger(__name__)

CONFIG = ".autocorrectrc"
# Full-width punctuation that closes (no space after it) or opens (no space before it).
CLOSING = "，。、；：！？）」』”’》"
OPENING = "（「『“‘《"
HALF_WIDTH_AFTER_HAN = re.compile(f"[{HAN}][,!:;?]")
SPACE_AROUND_FULL_WIDTH = re.compile(f"[{CLOSING}{OPENING}][ \t\n]+|[ \t\n]+[{CLOSING}]")
# Where a space before an opening mark separates it from Latin text, autocorrect decides.
SPACE_BEFORE_OPENING = re.compile(f"(?<=[{HAN}{CLOSING}])[ \t\n]+[{OPENING}]")

# Text under these is code or output, never prose.
NOT_PROSE = (nodes.literal, nodes.literal_block, nodes.raw, nodes.math, nodes.math_block,
             nodes.comment, nodes.doctest_block, nodes.image)
CODE = "`…`"  # how code stands in the checked text: Latin, and legible in a message
INLINE = (nodes.reference, nodes.strong, nodes.emphasis, nodes.inline, nodes.title_reference)


def uses_cjk_typography(app: Sphinx) -> bool:
    return current_language(app.config).typography == "cjk"


# --- the sources: autocorrect-py -------------------------------------------------------

RULES = ("space-word", "space-punctuation", "space-bracket", "space-backticks", "space-dash", "space-dollar",
         "fullwidth", "no-space-fullwidth", "no-space-fullwidth-quote", "halfwidth-word",
         "halfwidth-punctuation", "spellcheck")


def read_config(path: Path) -> str:
    """The text of an autocorrect config, checked first: autocorrect itself ignores what it
    cannot read (a misspelt rule would silently stay at its default)."""
    try:
        text = path.read_text(encoding="utf8")
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: not an autocorrect config: {str(error).splitlines()[0]}") from None
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, dict) or not rules:
        raise ConfigError(f"{path}: not an autocorrect config: expected a 'rules:' mapping of rule names to 0 or 1")
    for name, value in rules.items():
        if name not in RULES:
            raise ConfigError(f"{path}: unknown autocorrect rule {name!r} (known: {', '.join(RULES)})")
        if value not in (0, 1) or isinstance(value, bool):
            raise ConfigError(f"{path}: rule {name!r} is {value!r}: 1 checks it, 0 leaves it alone")
    return text


def load_autocorrect(app: Sphinx, config) -> None:
    if not uses_cjk_typography(app):
        return
    import autocorrect_py  # only a CJK edition needs it

    path = Path(app.srcdir).parent.parent / CONFIG
    if path.is_file():
        autocorrect_py.load_config(read_config(path))
    build_state.run(app).autocorrect = autocorrect_py


def lint_source(app: Sphinx, docname: str, source: list[str]) -> None:
    autocorrect = build_state.run(app).autocorrect
    if autocorrect is None:
        return
    for line in autocorrect.lint_for(source[0], f"{docname}.md").lines:
        logger.warning(
            f"autocorrect: {excerpt(line.old)!r} should read {excerpt(line.new)!r}",
            location=(docname, line.line), type="book", subtype="typography",
        )


# Han, CJK punctuation (、。「」) and the full-width forms (，！（）).
CJK = HAN + "\u3000-\u303f\uff00-\uffef"
CJK_LINE_BREAK = re.compile(f"[{CJK}]\n(?=[{CJK}])")


def cjk_line_breaks(text: str) -> list[int]:
    """Lines that end inside CJK prose: the browser would show the break as a space."""
    prose = text.split("\n")
    for block in blocks(text):  # the page's own prose only: no code, output or directive
        for number in block.lines:
            prose[number - 1] = ""
    prose = "\n".join(prose)
    return [prose.count("\n", 0, m.start()) + 1 for m in CJK_LINE_BREAK.finditer(prose)]


def check_line_breaks(app: Sphinx, docname: str, source: list[str]) -> None:
    if not uses_cjk_typography(app):
        return
    for line in cjk_line_breaks(source[0]):
        logger.warning("a line break inside Chinese text shows as a space; join the lines",
                       location=(docname, line), type="book", subtype="cjk_line_break")


def excerpt(text: str, width: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= width else text[:width] + "…"


# --- the resolved pages ----------------------------------------------------------------

def is_prose(node: nodes.Node) -> bool:
    return not any(isinstance(parent, NOT_PROSE) for parent in ancestors(node))


def ancestors(node: nodes.Node):
    while node is not None:
        yield node
        node = node.parent


def line_of(node: nodes.Node) -> int | None:
    for parent in ancestors(node):
        if getattr(parent, "line", None):
            return parent.line
    return None


def problems(doctree: nodes.Node) -> list[tuple[nodes.Node, str]]:
    """(node, what is wrong) for every break of the CJK rules in a resolved doctree."""
    found = []
    for element in doctree.findall(lambda n: isinstance(n, INLINE) and is_prose(n)):
        text = element.astext()
        if not text.strip():
            continue
        if isinstance(element, nodes.emphasis) and re.search(f"[{HAN}]", text):
            found.append((element, f"italics on CJK text {excerpt(text, 30)!r}: CJK emphasis is bold (**…**)"))
        before, after = sibling_text(element, -1), sibling_text(element, 1)
        if isinstance(element, nodes.reference) and re.match(r"\s*一[节章页]", after):
            found.append((element, f"a section or chapter named in a sentence is quoted: "
                                   f"“{excerpt(text, 30)}”{after.strip()[:2]}"))
        if re.search(f"[{HAN}][ \t\n]+$", before) and re.match(f"[{HAN}]", text):
            found.append((element, f"a space between CJK text and {excerpt(text, 30)!r}: "
                                   "write them together (a space only next to Latin text or code)"))
        if re.match(f"[ \t\n]+[{HAN}]", after) and re.search(f"[{HAN}]$", text):
            found.append((element, f"a space between {excerpt(text, 30)!r} and the CJK text after it: "
                                   "write them together (a space only next to Latin text or code)"))
    for block in doctree.findall(nodes.TextElement):
        if isinstance(block, nodes.Inline) or not is_prose(block):
            continue
        text = prose_text(block)
        for match in HALF_WIDTH_AFTER_HAN.finditer(text):
            found.append((block, f"half-width {match.group(0)[-1]!r} after CJK text in "
                                 f"{excerpt(text[max(0, match.start() - 12):match.end() + 4], 30)!r}: "
                                 "use the full-width mark"))
        for pattern in (SPACE_AROUND_FULL_WIDTH, SPACE_BEFORE_OPENING):
            for match in pattern.finditer(text):
                found.append((block, f"a space next to full-width punctuation in "
                                     f"{excerpt(text[max(0, match.start() - 12):match.end() + 6].strip(), 30)!r}"))
    return found


# A quoted title followed by 一章/一节 (这一节, 那一章): the quoted text must be a link's.
NAMED_SECTION = re.compile(r"[“「]([^“”「」\x01]+)[”」](?=[这那]?一[章节])")
LINK_MARK = "\x01"  # how a link stands in the text NAMED_SECTION reads


def code_and_links(doctree: nodes.Node) -> list[tuple[nodes.Node, str]]:
    """Inline code holding CJK, and chapters or sections named as plain quoted text."""
    found = []
    for literal in doctree.findall(nodes.literal):
        if literal.parent is not None and is_prose(literal.parent) and re.search(f"[{HAN}]", literal.astext()):
            found.append((literal, f"CJK text in code font {excerpt(literal.astext(), 30)!r}: code font is for "
                                   "code; keep the words outside the inline literal (下载 {download}`x.py <…>`)"))
    for block in doctree.findall(nodes.TextElement):
        if isinstance(block, nodes.Inline) or not is_prose(block):
            continue
        text = linked_text(block)
        for match in NAMED_SECTION.finditer(text):
            found.append((block, f"a chapter or section named as plain text, “{excerpt(match.group(1), 30)}”"
                                 f"{text[match.end():match.end() + 2]}: make the title a link "
                                 "(“{doc}`title <page>`”一章, “{ref}`title <label>`”一节)"))
    return found


def linked_text(block: nodes.Element) -> str:
    """A block's own text with every link as LINK_MARK, code as its text, nested blocks as NUL."""
    parts = []
    for child in block.children:
        if isinstance(child, nodes.Text):
            parts.append(str(child))
        elif isinstance(child, nodes.reference) or child.get("refuri") or child.get("reftarget"):
            parts.append(LINK_MARK)
        elif isinstance(child, nodes.TextElement) and not isinstance(child, nodes.Inline):
            parts.append("\x00")
        elif isinstance(child, nodes.literal):
            parts.append(child.astext())
        elif isinstance(child, nodes.Element):
            parts.append(linked_text(child))
    return "".join(parts)


def sibling_text(element: nodes.Node, step: int) -> str:
    """The text just before (step -1) or after (+1) an inline element in its paragraph."""
    parent = element.parent
    index = parent.index(element) + step
    if not 0 <= index < len(parent):
        return ""
    sibling = parent[index]
    if isinstance(sibling, NOT_PROSE):
        return CODE  # a Latin neighbour
    return sibling.astext()


def prose_text(block: nodes.Element) -> str:
    """A block's own text, with code as CODE and nested blocks left out."""
    parts = []
    for child in block.children:
        if isinstance(child, nodes.Text):
            parts.append(str(child))
        elif isinstance(child, NOT_PROSE):
            parts.append(CODE)
        elif isinstance(child, nodes.TextElement) and not isinstance(child, nodes.Inline):
            parts.append("\x00")  # a nested block is checked on its own
        elif isinstance(child, nodes.Element):
            parts.append(prose_text(child))
    return "".join(parts)


def check_page(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not uses_cjk_typography(app):
        return
    for node, message in problems(doctree):
        logger.warning(message, location=(docname, line_of(node)), type="book", subtype="typography")
    for node, message in code_and_links(doctree):
        logger.warning(message, location=(docname, line_of(node)), type="book", subtype="zh_rules")


def setup(app: Sphinx) -> None:
    app.connect("config-inited", load_autocorrect)
    app.connect("source-read", lint_source)
    app.connect("source-read", check_line_breaks)
    # After every other handler has filled in what it computes (provenance, releases).
    app.connect("doctree-resolved", check_page, priority=900)


# --- the report of long sentences ------------------------------------------------------

LONG_SENTENCE = 120  # Han characters
SENTENCE = re.compile(r"[^。！？]*[。！？]?")


def long_sentences(text: str, limit: int = LONG_SENTENCE) -> list[tuple[int, int, str]]:
    """(line, Han characters, sentence) for each sentence of a MyST page's prose with more than
    ``limit`` Han characters (code, inline code and link targets left out)."""
    from .prose import reader_lines

    found = []
    for number, line in reader_lines(text):
        for sentence in SENTENCE.findall(line):
            count = len(re.findall(f"[{HAN}]", sentence))
            if count > limit:
                found.append((number, count, " ".join(sentence.split())))
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the long sentences of the Chinese pages (or of the pages named), one a line."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m book_extensions typography",
                                     description="List sentences over --limit Han characters: a report, not a gate.")
    parser.add_argument("pages", nargs="*", type=Path, help="MyST pages (default: docs/zh/*.md)")
    parser.add_argument("--limit", type=int, default=LONG_SENTENCE)
    options = parser.parse_args(argv)
    pages = options.pages or sorted((DOCS / "zh").glob("*.md"))
    total = 0
    for page in pages:
        for line, count, sentence in long_sentences(page.read_text(encoding="utf8"), options.limit):
            total += 1
            print(f"{page.name}:{line}: {count} Han characters: {excerpt(sentence, 50)}")
    print(f"{total} sentences over {options.limit} Han characters in {len(pages)} pages")
    return 0
