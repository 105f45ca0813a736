"""Markup that lets pages read on a phone and in print; ``book.css`` styles it.

Applied to the HTML of every page as it is written (never to what is searched or
compared), three small marks:

- inline code gets line-break opportunities (``<wbr>``) where code may break
  sensibly, before a ``.`` and after a ``(``: a long call such as
  ``torch.autograd.set_detect_anomaly(True)`` then wraps on a phone without any
  identifier being cut in the middle. Code in a table gets none (Chromium breaks at a
  ``<wbr>`` even where CSS says ``nowrap``): there it never wraps, and a table wider
  than the screen scrolls in its own box. The exception is a table of quoted messages
  (the releases page's), whose code wraps like the sentences it holds;
- outputs that print an error or a warning are marked ``book-message``, so that they
  wrap instead of scrolling sideways (tensors and column-aligned printouts keep their
  lines and their alignment); a warning written to stderr is marked ``book-warning``
  and gets a label;
- a table cell that says ✗ or ✓ (the cheat sheet's verdicts) is marked, so that a
  silently wrong gradient stands out by more than the shape of one glyph.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

# Where a long piece of code may break: before ".attr", after "::", "/" and an opening
# "(" (never inside "()"). Shorter pieces never need it.
BREAK = re.compile(r"(?<=[\w)\]])(?=\.[A-Za-z_])|(?<=\()(?=[^)])|(?<=::)(?=\w)|(?<=/)(?=\w)")
LONG = 16

# "RuntimeError: ...", "UserWarning: ..." anywhere in a printed output.
MESSAGE = re.compile(r"\b[A-Z]\w*(?:Error|Warning|Exception)\b")

WARNING = re.compile(r"\b[A-Z]\w*Warning\b")

# Tables whose code cells quote messages rather than name things (releases.py).
MESSAGE_TABLES = {"book-releases"}

VERDICTS = {"✗": "book-verdict-wrong", "✓": "book-verdict-right"}


class wbr(nodes.Inline, nodes.Element):
    """A line-break opportunity: ``<wbr>`` in HTML, nothing in text."""


def visit_wbr(self, node: wbr) -> None:
    self.body.append("<wbr/>" if self.builder.name == "epub" else "<wbr>")  # EPUB pages are XML
    raise nodes.SkipNode


def pieces(text: str) -> list[str]:
    """``text`` cut at its break opportunities (one piece when it has none)."""
    cuts = [0]
    for match in re.finditer(r"\S+", text):
        if len(match.group()) > LONG:
            cuts += [match.start() + m.start() for m in BREAK.finditer(match.group()) if m.start()]
    cuts.append(len(text))
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]


def ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


class ReadableLayout(SphinxPostTransform):
    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for literal in list(self.document.findall(nodes.literal)):
            table = next((a for a in ancestors(literal) if isinstance(a, nodes.table)), None)
            if table is not None and not MESSAGE_TABLES & set(table["classes"]):
                continue
            for text in list(literal.findall(nodes.Text)):
                parts = pieces(str(text))
                if len(parts) > 1:
                    replacement = [nodes.Text(parts[0])]
                    for part in parts[1:]:
                        replacement += [wbr(), nodes.Text(part)]
                    text.parent.replace(text, replacement)
        for block in self.document.findall(nodes.literal_block):
            classes = block["classes"]
            if "output" not in classes:
                continue
            if "stream" in classes and MESSAGE.search(block.astext()):
                classes.append("book-message")
            if "stderr" in classes and WARNING.search(block.astext()):
                classes.append("book-warning")
        for entry in self.document.findall(nodes.entry):
            mark = VERDICTS.get(entry.astext().strip())
            if mark:
                entry["classes"].append(mark)


def setup(app: Sphinx) -> None:
    app.add_node(wbr, html=(visit_wbr, None))
    app.add_post_transform(ReadableLayout)


def table(header: list[str], rows: list[list[nodes.Node | str]], classes: list[str] = ()) -> nodes.table:
    """A docutils table of text or nodes, for the pages computed from records."""
    group = nodes.tgroup(cols=len(header))
    group += [nodes.colspec(colwidth=1) for _ in header]

    def row(cells):
        result = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += nodes.paragraph("", "", cell if isinstance(cell, nodes.Node) else nodes.Text(cell))
            result += entry
        return result

    group += nodes.thead("", row(header))
    group += nodes.tbody("", *(row(cells) for cells in rows))
    return nodes.table("", group, classes=list(classes))
