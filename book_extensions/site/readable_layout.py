"""Markup that lets pages read on a phone and in print; ``book.css`` styles it.

Applied to the HTML of every page as it is written (never to what is searched or
compared), a few small marks:

- inline code gets line-break opportunities (``<wbr>``) where code may break
  sensibly, before a ``.`` and after a ``(``: a long call such as
  ``torch.autograd.set_detect_anomaly(True)`` then wraps on a phone without any
  identifier being cut in the middle; so does Chinese punctuation before code (see
  CJK_CLOSING). A name too long for the narrowest phones' column on its own
  (``create_selective_checkpoint_contexts``, ``CompiledFunctionBackward``) may break between
  its words there, and only there (``span.book-name-break``, which book.css fills below 375 px). Code in a
  table gets none (Chromium breaks at a ``<wbr>`` even where CSS says ``nowrap``): there it
  breaks only between its words, on a phone. The
  exception is a table of quoted messages (the releases page's), whose code wraps like
  the sentences it holds;
- printed text (a cell's outputs, the doctests of "Check yourself", another torch
  release's output in a "≠" fold) gets the same kind of opportunities in its long
  tokens, also after ``,``, ``=`` and an opening bracket, so that on a phone it wraps
  between tokens and never inside an identifier, a number or a piece of a URL;
- an indented printed line's text is wrapped in ``span.book-indented``, so that where it
  wraps its continuation hangs right of the line's own text (not at a nested entry's place);
- outputs that print an error or a warning are marked ``book-message``, so that they
  wrap on every screen (other printouts, tensors among them, keep their lines and
  their column alignment where the screen is wide enough); a warning written to
  stderr is marked ``book-warning`` and gets a label;
- every cell of a table's body carries its column's header
  (``span.book-cell-label``, hidden from screen readers, which have the table's own
  headers): on a phone each row is shown as a card of "column: value" lines;
- a table cell that says ✗ or ✓ (the cheat sheet's verdicts) is marked, so that a
  silently wrong gradient stands out by more than the shape of one glyph.
"""

from __future__ import annotations

import html
import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from ..myst_source import HAN
from .search import chinese_words

# Where a long piece of code may break: before ".attr", after "::", "/", an opening
# "(" (never inside "()") and the "=" of "name=value" (a value that is a word, a literal
# or a bracket: "kwargs={...}"). Shorter pieces never need it.
BREAK = re.compile(r"(?<=[\w)\]])(?=\.[A-Za-z_])|(?<=\()(?=[^)])|(?<=::)(?=\w)|(?<=/)(?=\w)|(?<=\w=)(?=[\w{\[(\"'])")
# Printed text may also break after "," and "=" and after an opening bracket or brace
# ("grad_fn=<SigmoidBackward0>", "tensor([[1., 2.],"), never inside a word or a number.
OUTPUT_BREAK = re.compile(BREAK.pattern + r"|(?<=[,=])(?=[^\s,=)\]}])|(?<=[\[{])(?=[^\]}\s])")
LONG = 16
# A name this long (letters, digits and "_" only) can be wider than a column of a phone
# (some 34 characters of inline code across a 320 px page, fewer beside an exercise's letter
# or in a table's card): below 375 px it may break between its words, after an underscore
# that follows a letter or digit or before a capital that follows a small letter
# (NAME_BREAK, book.css), with more than NAME_PIECE characters before it and NAME_PIECE or
# more after it ("fail_on_ | recompile_limit_hit", "CompiledFunction | Backward", never
# "set_ | model_state_dict" or "…limit_ | hit").
LONG_NAME = re.compile(r"\w{20,}")
NAME_BREAK = re.compile(r"(?<=[^\W_]_)(?=[^\W_])|(?<=[a-z])(?=[A-Z])")
NAME_PIECE = 5
# A name this long is most of a line of a 360 px phone's column (create_selective_checkpoint_contexts
# ran 9 px past it there): it may break below 375 px too.
WIDE_NAME = 30

# "RuntimeError: ...", "UserWarning: ..." anywhere in a printed output.
MESSAGE = re.compile(r"\b[A-Z]\w*(?:Error|Warning|Exception)\b")

WARNING = re.compile(r"\b[A-Z]\w*Warning\b")

# Tables whose code cells quote messages rather than name things (records/release_changes.py).
MESSAGE_TABLES = {"book-releases"}

VERDICTS = {"✗": "book-verdict-wrong", "✓": "book-verdict-right"}

# Chinese punctuation that closes a phrase. Between it and code that starts with "."
# (".detach()、.clone()") the line-breaking rules allow no break at all, so a list of
# such code would be one unbreakable run wider than a phone: a <wbr> goes after it.
CJK_CLOSING = tuple("、，。；：！？）」』】》")

# Builders whose pages load book.css, which hides the cell labels except on a phone.
LABELLED_BUILDERS = {"html", "dirhtml", "singlehtml"}


class wbr(nodes.Inline, nodes.Element):
    """A line-break opportunity: ``<wbr>`` in HTML, nothing in text."""


class long_name(nodes.Inline, nodes.TextElement):
    """A piece of inline code holding a long name (:data:`LONG_NAME`), kept whole in the
    document (the search index reads its words whole); written as its pieces, each a
    ``span.pre``, with an empty ``span.book-name-break`` where it may break, which book.css
    fills with a zero-width space on the narrowest phones only."""


def visit_long_name(self, node: long_name) -> None:
    # A break before a capital is only taken where a name ran out of its box, and one below
    # 375 px only in a name too wide for most of a line there (book.css).
    wide = " book-name-wide" if max(len(name) for name in LONG_NAME.findall(node.astext())) >= WIDE_NAME else ""
    before = ""
    for piece in name_pieces(node.astext()):
        if before:
            kind = "book-name-break" + wide + ("" if before.endswith("_") else " book-name-capital")
            self.body.append(f'<span class="{kind}"></span>')
        self.visit_Text(nodes.Text(piece))  # as inline code's text is written: a span.pre
        before = piece
    raise nodes.SkipNode


def name_pieces(text: str) -> list[str]:
    """``text`` cut between the words of its long names (one piece when it has none)."""
    bounds = [0, *(name.start() + cut.start() for name in LONG_NAME.finditer(text)
                   for cut in NAME_BREAK.finditer(name.group())
                   if NAME_PIECE < cut.start() <= len(name.group()) - NAME_PIECE), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def visit_wbr(self, node: wbr) -> None:
    self.body.append("<wbr/>" if self.builder.name == "epub" else "<wbr>")  # EPUB pages are XML
    raise nodes.SkipNode


class cell_label(nodes.Inline, nodes.TextElement):
    """A table cell's column header, repeated in the cell for the phone's card layout."""


def visit_cell_label(self, node: cell_label) -> None:
    # aria-hidden: a screen reader announces the column from the table's own header.
    self.body.append('<span class="book-cell-label" aria-hidden="true">')


def depart_cell_label(self, node: cell_label) -> None:
    self.body.append("</span>")


def cuts(text: str, where: re.Pattern = BREAK) -> list[int]:
    """The offsets in ``text`` where a long token may break."""
    found = []
    for match in re.finditer(r"\S+", text):
        if len(match.group()) > LONG:
            found += [match.start() + m.start() for m in where.finditer(match.group()) if m.start()]
    return found


def pieces(text: str) -> list[str]:
    """``text`` cut at its break opportunities (one piece when it has none)."""
    bounds = [0, *cuts(text), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


TAG = re.compile(r"(<[^>]*>)")

# A number in exponent notation: a line may break after the "-" of "6.1e-05" (the
# line-breaking rules allow it), so it is kept whole.
EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+]\d+\b")


def break_printed(markup: str, mark: str = "<wbr>") -> str:
    """Highlighted HTML of printed text, with ``mark`` at its tokens' break opportunities.

    The opportunities are found in the text as a reader sees it (the highlighter's
    spans may cut a token in several), then put back into the text between the tags;
    a number in exponent notation (within one of those texts) is wrapped in
    ``span.book-nobr``.
    """
    parts = TAG.split(markup)
    texts = [html.unescape(part) if i % 2 == 0 else "" for i, part in enumerate(parts)]
    bounds, start = [], 0
    for text in texts:
        bounds.append((start, start + len(text)))
        start += len(text)
    joined = "".join(texts)
    events = [(cut, mark) for cut in cuts(joined, OUTPUT_BREAK)]
    for number in EXPONENT.finditer(joined):
        if any(a <= number.start() and number.end() <= b for a, b in bounds):
            events += [(number.start(), '<span class="book-nobr">'), (number.end(), "</span>")]
    events.sort(key=lambda event: (event[0], event[1] != "</span>"))
    out, k = [], 0
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
            continue
        (start, end), text, last = bounds[i], texts[i], None
        # An event at a text's end belongs to it when it closes a span, else to the next.
        while k < len(events) and (events[k][0] < end or events[k] == (end, "</span>")):
            position, insert = events[k]
            out += [html.escape(text[last or 0:position - start], quote=False), insert]
            last, k = position - start, k + 1
        out.append(part if last is None else html.escape(text[last:], quote=False))
    return "".join(out)


# The languages of source code: a block in one of them is code to read, whose lines a
# <wbr> would break at "." and "(" (Chromium breaks there even in a <pre>), putting the
# rest of a statement at the margin where it reads as another line of Python.
SOURCE_LANGUAGES = {"python", "python3", "py", "ipython", "ipython3"}


def printed(node: nodes.literal_block) -> bool:
    """What a program printed: outputs, doctests, other releases' outputs; not a code cell's
    input, nor a block of source code (a part of a program a page shows with literalinclude)."""
    if node.get("language") in SOURCE_LANGUAGES and "output" not in node["classes"]:
        return False
    return not any(isinstance(a, nodes.container) and "cell_input" in a["classes"] for a in ancestors(node))


class printed_text(nodes.General, nodes.Element):
    """A printed block (:func:`printed`), wrapped: whatever Sphinx's own visitors write for
    it, at their visit (a highlighted block) or over its children until their departure (a
    parsed one, the "≠" folds' marked words), gets break opportunities when this departs.
    It writes nothing itself."""


def visit_printed_text(self, node: printed_text) -> None:
    node["book_start"] = len(self.body)


def depart_printed_text(self, node: printed_text) -> None:
    start = node.attributes.pop("book_start")
    self.body[start:] = [hang_indented(break_printed("".join(self.body[start:]),
                                                     "<wbr/>" if self.builder.name == "epub" else "<wbr>"))]


# A printed line that starts with spaces, then text, break opportunities and elements that
# open and close within the line (the highlighter's tokens, an exponent number kept whole,
# a release's changed words), up to the end of its line or of the block's <pre> (an element
# opened on an earlier line may close there).
TEXT_PIECE = r'(?:[^<\n]|<wbr/?>|<(?P<tag>span|mark|ins|del)\b[^>\n]*>(?:[^<\n]|<wbr/?>)*</(?P=tag)>)'
# Deeper than this, spaces align columns (a table printed by a cell) rather than nest entries,
# and a phone's line has no room right of them: such a line wraps as it did.
DEEPEST_NESTING = 12
INDENTED = re.compile(rf"^( {{1,{DEEPEST_NESTING}}})((?! ){TEXT_PIECE}+)(?=(?:</(?:span|mark|ins|del)>)*(?:\n|</pre>))",
                      re.MULTILINE)


def hang_indented(markup: str) -> str:
    """Each indented printed line's text in ``span.book-indented``, its indentation in
    ``--book-indent``: where outputs wrap (book.css), the line's continuation then hangs right
    of its own text, so that a wrapped entry of a nested list does not read as the next one."""
    return INDENTED.sub(lambda m: f'{m[1]}<span class="book-indented" style="--book-indent: {len(m[1])}">'
                                  f"{m[2]}</span>", markup)


def ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def label_cells(table: nodes.table) -> None:
    """Put each column's header into every body cell of that column (see cell_label)."""
    def cells(row: nodes.row) -> list[nodes.entry]:
        return [cell for cell in row.children if isinstance(cell, nodes.entry)]

    for group in table.children:
        if not isinstance(group, nodes.tgroup):
            continue
        heads = [row for part in group.children if isinstance(part, nodes.thead) for row in part.children]
        if len(heads) != 1 or any("morecols" in cell for cell in cells(heads[0])):
            continue  # a header of several rows or joined cells names no single column
        header = cells(heads[0])
        rows = [row for part in group.children if isinstance(part, nodes.tbody) for row in part.children]
        if any(len(cells(row)) != len(header) or any("morecols" in cell or "morerows" in cell for cell in cells(row))
               for row in rows):
            continue
        for row in rows:
            for head, entry in zip(header, cells(row)):
                paragraphs = [child for child in head.children if isinstance(child, nodes.paragraph)]
                content = ([child.deepcopy() for child in paragraphs[0].children]
                           if len(paragraphs) == 1 and len(head.children) == 1 else [nodes.Text(head.astext())])
                # no-search: the search index (and its excerpts) holds each word once.
                entry.insert(0, cell_label("", "", *content, classes=["no-search"]))


def break_inline_code(root: nodes.Element) -> None:
    """Let each piece of inline code under ``root`` break where it may (outside tables but
    those of quoted messages), and a line break before code that follows Chinese closing
    punctuation. ReadableLayout does it for every page; content that a page is filled in with
    after the post-transforms (the index of exercises) calls it itself."""
    for literal in list(root.findall(nodes.literal)):
        table = next((a for a in ancestors(literal) if isinstance(a, nodes.table)), None)
        if table is not None and not MESSAGE_TABLES & set(table["classes"]):
            continue
        before = literal.parent.index(literal) - 1
        if before >= 0 and isinstance(literal.parent[before], nodes.Text) \
                and literal.parent[before].endswith(CJK_CLOSING):
            literal.parent.insert(before + 1, wbr())
        for text in list(literal.findall(nodes.Text)):
            parts = pieces(str(text))
            named = [len(name_pieces(part)) > 1 for part in parts]
            if len(parts) > 1 or named[0]:
                replacement = []
                for part, is_long in zip(parts, named):
                    replacement += [wbr()] if replacement else []
                    replacement.append(long_name("", part) if is_long else nodes.Text(part))
                text.parent.replace(text, replacement)


class ReadableLayout(SphinxPostTransform):
    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs) -> None:
        break_inline_code(self.document)
        for block in list(self.document.findall(lambda n: isinstance(n, nodes.literal_block | nodes.doctest_block))):
            if printed(block):
                wrapper, parent = printed_text(), block.parent
                parent[parent.index(block)] = wrapper
                wrapper += block
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
        for paragraph in self.document.findall(nodes.paragraph):
            if quoted_messages(paragraph):
                paragraph["classes"].append("book-quoted-messages")


def quoted_messages(paragraph: nodes.paragraph) -> bool:
    """Whether the paragraph is a bold label and inline code alone (the error atlas's
    "**Message:** `…`"), with nothing between the codes but punctuation."""
    children = [child for child in paragraph.children  # MyST starts a paragraph with an empty text
                if not isinstance(child, wbr) and not (isinstance(child, nodes.Text) and not str(child))]
    if len(children) < 2 or not isinstance(children[0], nodes.strong):
        return False
    rest = children[1:]
    return any(isinstance(child, nodes.literal) for child in rest) and all(
        isinstance(child, nodes.literal) or (isinstance(child, nodes.Text) and not str(child).strip(" ,:;，、：；"))
        for child in rest)


# How wide a table's narrowest layout is, estimated from what cannot break (book.css sets
# tables in .85rem, 13.6 px): a word of prose, a piece of code (whole: code in a table never
# breaks), two Chinese characters (a line may end after any one, but not before closing
# punctuation). Measured in Chromium on the book's tables; the browser tests check the result.
PHONE_COLUMN = 343  # px: the article column on a 375 px phone
CELL_PADDING = 17  # px: a cell's padding and border
TEXT_CHAR, CODE_CHAR, HAN_CHAR = 7.6, 7.2, 13.6  # px
HAN_RUN = re.compile(f"[{HAN}]+")


def narrowest(entry: nodes.entry, code_breaks: bool = False) -> float:
    """The width (px) a cell cannot be narrower than: its widest unbreakable piece
    (``code_breaks``: its code wraps between words, as in a table of quoted messages)."""
    widest = 0.0
    for text in entry.findall(nodes.Text):
        if any(isinstance(a, cell_label) for a in ancestors(text)):
            continue
        if not code_breaks and any(isinstance(a, nodes.literal) for a in ancestors(text)):
            widest = max(widest, len(str(text)) * CODE_CHAR)
            continue
        for word in str(text).split():
            latin = HAN_RUN.split(word)
            widest = max(widest, *(len(piece) * TEXT_CHAR for piece in latin),
                         2 * HAN_CHAR if HAN_RUN.search(word) else 0)
    return widest + CELL_PADDING


def too_wide_for_a_phone(table: nodes.table) -> bool:
    """Whether the table, laid out as a table, cannot fit a phone's column."""
    columns: dict[int, float] = {}
    code_breaks = bool(MESSAGE_TABLES & set(table["classes"]))
    for row in table.findall(nodes.row):
        for index, entry in enumerate(cell for cell in row.children if isinstance(cell, nodes.entry)):
            columns[index] = max(columns.get(index, 0.0), narrowest(entry, code_breaks))
    # A margin for the fonts the estimate does not know (a Chinese page's Latin letters are wider).
    return sum(columns.values()) > 0.95 * PHONE_COLUMN


class folded_input(nodes.General, nodes.Element):
    """A code cell's source folded away on the web page (the cell's ``hide-input`` tag: a
    long program, page_sources.unfolded_programs), as a ``<details>`` whose summary is text.
    myst-nb's own fold puts paragraphs in the ``<summary>``, which HTML does not allow."""


def visit_folded_input(self, node: folded_input) -> None:
    self.body.append(f'<details class="book-folded-input"><summary>{html.escape(node["prompt"])}</summary>\n')


def depart_folded_input(self, node: folded_input) -> None:
    self.body.append("</details>\n")


class FoldInputs(SphinxPostTransform):
    """Fold the source of each cell tagged ``hide-input`` in a :class:`folded_input`. Runs
    just before myst-nb's HideInputCells, which folds only the cells that still have a
    ``hide_mode`` (the offline editions show every cell: offline_builders.ShowHiddenCells)."""

    default_priority = 198
    builders = ("html", "dirhtml")

    def run(self, **kwargs) -> None:
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or cell.get("hide_mode") != "input" or not cell.children:
                continue
            source = cell.children[0]
            if source.get("nb_element") != "cell_code_source":
                continue
            del cell["hide_mode"]
            fold = folded_input(prompt=cell["prompt_show"].replace("{type}", "source"))
            cell.replace(source, fold)
            fold.append(source)


HAN_TEXT = re.compile(f"[{HAN}]")
# Words jieba cuts apart that a Chinese line does not start with: they go with the word before
# (particles, and the place words after a noun: 模式下, 单元里). Not 后: 后端.
TRAILING_PARTICLES = {"的", "之", "了", "地", "得", "中", "时", "上", "下", "里", "外", "内"}
# Words jieba cuts in two that a Chinese line must not split (helper-113): the book's terms
# and common words that its dictionary lacks.
KEPT_WHOLE = ("梯度累积", "混合精度", "反向节点", "可重入", "统计量", "前向", "后端", "调度器", "基张量",
              "未选中", "跳过")
# Punctuation a line neither starts with (closing) nor ends with (opening), Chinese and Latin.
CLOSING = (*CJK_CLOSING, "”", "’", "…", ")", "]", ",", ".", ":", ";", "!", "?")
CJK_OPENING = ("（", "「", "『", "【", "《", "“")
OPENING = (*CJK_OPENING, "‘", "(", "[")


def break_between_words(app: Sphinx, root: nodes.Element) -> None:
    """Chinese text under ``root`` (a table's header, a section's title) breaks between words
    only: a ``<wbr>`` between jieba's words, and book.css lets no line break elsewhere in it
    (a narrow column broke 共享版本计/数器, a phone's heading DDP 下的梯度累/积)."""
    for text in list(root.findall(nodes.Text)):
        if isinstance(text.parent, nodes.literal) or not HAN_TEXT.search(text):
            continue
        words: list[str] = []
        for word in chinese_words(app, str(text)):
            # 原计算图的 / 反向传播: no line starts with 的 (helper-101), nor with a closing mark,
            # and none ends with an opening one; a term stays whole; and a line breaks only
            # beside a Chinese character or mark, never inside Latin text (torch.func).
            if words and (word in TRAILING_PARTICLES or word.startswith(CLOSING) or words[-1].endswith(OPENING)
                          or any(term.startswith(words[-1] + word) for term in KEPT_WHOLE)
                          or not (chinese(words[-1][-1]) or chinese(word[0]))):
                words[-1] += word
            else:
                words.append(word)
        pieces: list[nodes.Node] = []
        for word in words:
            pieces += [wbr(), nodes.Text(word)] if pieces else [nodes.Text(word)]
        text.parent.replace(text, pieces)


def chinese(character: str) -> bool:
    """A Han character or Chinese punctuation: a Chinese line may break beside it."""
    return bool(HAN_TEXT.match(character)) or character in CJK_CLOSING or character in CJK_OPENING


def break_headers_between_words(app: Sphinx, table: nodes.table) -> None:
    """A Chinese table's column headers break between words only (:func:`break_between_words`)."""
    for head in table.findall(nodes.thead):
        break_between_words(app, head)


def label_tables_and_titles(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    # Late (priority 900), after the pages that fill their tables in when every page is
    # read (provenance_page.py, device_page.py).
    if app.builder.name in LABELLED_BUILDERS:
        chinese = (app.config.language or "").startswith("zh")
        for table in list(doctree.findall(nodes.table)):
            if too_wide_for_a_phone(table):  # its rows become cards on a phone (book.css)
                table["classes"].append("book-wide")
            if chinese:
                break_headers_between_words(app, table)
            label_cells(table)
        if chinese:  # section titles too; the search reads their text whole (title.astext())
            for title in doctree.findall(nodes.title):
                if isinstance(title.parent, nodes.section):
                    break_between_words(app, title)


def setup(app: Sphinx) -> None:
    app.add_node(wbr, html=(visit_wbr, None))
    app.add_node(long_name, html=(visit_long_name, None))
    app.add_node(cell_label, html=(visit_cell_label, depart_cell_label))
    app.connect("doctree-resolved", label_tables_and_titles, priority=900)
    # Printed text's break opportunities go into what Sphinx wrote for the block (ReadableLayout
    # wraps it). Should that stop working, test_browser_layout.py finds broken tokens.
    app.add_node(printed_text, html=(visit_printed_text, depart_printed_text))
    app.add_post_transform(ReadableLayout)
    app.add_node(folded_input, html=(visit_folded_input, depart_folded_input))
    app.add_post_transform(FoldInputs)


# The book's own nodes in the builders that have no markup of their own for them (LaTeX, text,
# man, Texinfo): written as a container, or as a paragraph.
def as_container(self, node: nodes.Element) -> None:
    self.visit_container(node)


def end_container(self, node: nodes.Element) -> None:
    self.depart_container(node)


def as_paragraph(self, node: nodes.Element) -> None:
    self.visit_paragraph(node)


def end_paragraph(self, node: nodes.Element) -> None:
    self.depart_paragraph(node)


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
