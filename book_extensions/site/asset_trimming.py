"""A lighter first load: the themes' stylesheets cut to the rules the book's pages can use,
and Font Awesome cut to the icons they show.

pydata-sphinx-theme ships all of Bootstrap and every component of its own in one
stylesheet (377 KB) and the whole Font Awesome solid font (112 KB); a chapter uses a
small part of either, and a phone on a slow network waits for all of the stylesheet
before it paints anything. After an html build, each language's copies are rewritten:

- a style rule stays when one of its selectors can match: every class, id and element
  name it requires (outside ``:not()``, ``:is()``, ``:has()`` and attribute tests,
  which are read as "may match") occurs in some page of that language, or is one the
  scripts add at run time (:data:`RUNTIME_CLASSES`, each line saying which script);
  the selectors that cannot match are dropped from its list. Attribute tests are never
  required, so ``html[data-theme=dark]`` rules (dark mode) follow their classes;
- a custom property stays when some kept rule, any stylesheet of the site, a page's
  ``style`` attribute or a script names it (``var(--x)``, ``"--x"``), and so on for the
  properties those name; ``@font-face`` stays when a kept rule names its family,
  ``@keyframes`` when one names its animation; ``@media``/``@supports`` blocks left
  empty go;
- each Font Awesome font that stays is subset (fontTools, which needs brotli for WOFF2)
  to the characters the kept rules put in ``content``/``--fa`` strings, beside the
  original; the stylesheet points at the new file.

Only the third-party sheets in :data:`TRIMMED` are touched; the book's own
(``book*.css``) stay whole, and the string literals of its own scripts count as classes
they may add. The editions' builders (singlehtml, epub) are left alone. The trimmed sheets
are kept in the doctrees with the digest of everything trimming read (:data:`TRIM_RECORD`),
so a rebuild whose pages hold the same classes, ids and elements writes them again without
parsing a stylesheet.
``tests/test_assets.py`` trims the theme's sheet against a fixture page and checks what
stays and what goes; that nothing visible changed was checked by comparing screenshots
of the site built with and without this step (issue 20's note).

The stylesheet is split into rules, and selectors into what they require, by tinycss2
(CSS Syntax Level 3, pinned in requirements.txt): comments go, strings, escapes and
brackets are the parser's business, whitespace stays as tinycss2 gives it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import tinycss2
from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging
from tinycss2.serializer import serialize_identifier

from ..paths import PACKAGE, build_store, keep_in_store, write_atomically

logger = sphinx_logging.getLogger(__name__)

# Third-party sheets that every page loads, relative to _static/ (globs).
TRIMMED = ("styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css", "mystnb.*.css", "basic.css",
           "pygments.css")

# Classes that the pages' scripts add at run time, so that no built page holds them.
RUNTIME_CLASSES = {
    # bootstrap.js (loaded by pydata-sphinx-theme): the tooltips the theme makes of every
    # [data-bs-toggle=tooltip] (a div.tooltip with its arrow and inner box, placed by
    # Popper), dropdowns and collapses opening and closing.
    "tooltip", "tooltip-arrow", "tooltip-inner", "bs-tooltip-auto", "bs-tooltip-top", "bs-tooltip-end",
    "bs-tooltip-bottom", "bs-tooltip-start", "fade", "show", "showing", "hiding", "collapse", "collapsing",
    "collapsed", "dropdown-menu-end", "dropdown-menu-start",
    # pydata-sphinx-theme.js: the theme switcher's current mode, the dark dropdowns, search
    # results of the dialog, a squeezed header, a revealed element.
    "active", "dropdown-menu-dark", "empty", "pst-squeeze", "d-none",
    # sphinx-book-theme.js: header shadow once scrolled, sidebars hidden or shown, print.
    "scrolled", "hide", "noprint", "pst-sidebar-hidden",
    # sphinx-copybutton: the button it puts on every code block, its tooltip and "copied".
    "copybtn", "o-tooltip--left", "success",
    # Sphinx's sphinx_highlight.js (search terms marked on the page they lead to) and
    # searchtools.js (the results list of search.html).
    "highlighted", "highlight-link", "search", "search-summary", "context",
}
# Elements those scripts create (most pages hold them anyway): copybutton.js's icon is an svg,
# which a page of its own may have none of.
RUNTIME_ELEMENTS = {"div", "span", "button", "img", "a", "p", "ul", "li", "h2", "section", "strong", "i", "svg"}

@dataclass
class Node:
    """A declaration or statement (``children`` None), or a prelude with a ``{}`` block."""
    prelude: str
    children: list[Node] | None = None

    def text(self) -> str:
        if self.children is None:
            return self.prelude
        return self.prelude + "{" + serialize(self.children) + "}"


def serialize(nodes: list[Node]) -> str:
    """Rules one after another; statements and declarations each closed by ';'."""
    return "".join(node.text() if node.children is not None else node.text() + ";" for node in nodes)


def node(item) -> Node | None:
    """tinycss2's rule or declaration as a :class:`Node`; a parse error (which a browser
    skips too) as None."""
    if item.type == "declaration":
        return Node(item.serialize())
    if item.type not in ("qualified-rule", "at-rule"):
        return None
    keyword = "@" + serialize_identifier(item.at_keyword) if item.type == "at-rule" else ""
    prelude = (keyword + tinycss2.serialize(item.prelude)).strip()
    if item.content is None:
        return Node(prelude)
    # Any block holds declarations, rules or both (nesting), which this reads alike.
    return Node(prelude, nodes(tinycss2.parse_blocks_contents(item.content, skip_comments=True, skip_whitespace=True)))


def nodes(items) -> list[Node]:
    return [found for item in items if (found := node(item)) is not None]


def parse(css: str) -> list[Node]:
    """Top-level statements and rules of a stylesheet, blocks nested; comments dropped."""
    return nodes(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True))


def as_lists(nodes: list[Node]) -> list:
    return [[node.prelude, None if node.children is None else as_lists(node.children)] for node in nodes]


def from_lists(items: list) -> list[Node]:
    return [Node(prelude, None if children is None else from_lists(children)) for prelude, children in items]


def parsed_sheet(css: str, store: Path | None) -> list[Node]:
    """:func:`parse`, kept in ``store`` (a folder) by the digest of the sheet, this module and
    tinycss2's version: the themes' sheets are the same in every build, and tokenizing them is
    most of a small book's trimming (1.3 s of a 4.5 s fixture build). A damaged entry is
    parsed anew; each call gets nodes of its own (trimming changes them)."""
    if store is None:
        return parse(css)
    digest = hashlib.sha256(module_bytes() + tinycss2.__version__.encode() + b"\0" + css.encode())
    entry = store / f"{digest.hexdigest()}.json"
    try:
        kept = json.loads(entry.read_text(encoding="utf8"))
        found = from_lists(kept["nodes"])
        selectors = {text: tuple(selector for selector, *_ in items) for text, items in kept["selectors"].items()}
        needs = {selector: tuple(frozenset(names) for names in needed)
                 for items in kept["selectors"].values() for selector, *needed in items}
        if not all(isinstance(selector, str) and len(needed) == 3 for selector, needed in needs.items()):
            raise ValueError("not what parsed_sheet writes")
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # absent or damaged
        pass
    else:
        SELECTOR_LISTS.update(selectors)
        REQUIREMENTS.update(needs)
        return found
    found = parse(css)
    # The selectors of every style rule, split and read, go with the rules.
    selectors = {node.prelude: [[selector, *(sorted(names) for names in requirements(selector))]
                                for selector in split_top_level(node.prelude)]
                 for node in walk_all(found) if node.children is not None and not node.prelude.startswith("@")}
    keep_in_store(entry, json.dumps({"nodes": as_lists(found), "selectors": selectors}).encode())
    return found


def walk_all(nodes: list[Node]):
    """Every node, at-rules' blocks included."""
    for node in nodes:
        yield node
        if node.children is not None:
            yield from walk_all(node.children)


# --- which selectors can match -------------------------------------------------------

# Both are asked the same selectors for every page of every build (first paint trims each
# page's CSS): tokenizing them once is most of that step's time.
# What split_top_level and requirements found, by their argument: filled as they are asked, and
# from the sheets kept parsed (parsed_sheet), whose selectors are then not tokenized again.
SELECTOR_LISTS: dict[str, tuple[str, ...]] = {}
REQUIREMENTS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}


def split_top_level(text: str) -> tuple[str, ...]:
    """A selector list's selectors: ``text`` split at the commas outside brackets and strings."""
    found = SELECTOR_LISTS.get(text)
    if found is None:
        found = SELECTOR_LISTS[text] = split_selector_list(text)
    return found


def split_selector_list(text: str) -> tuple[str, ...]:
    parts: list[list] = [[]]
    for token in tinycss2.parse_component_value_list(text, skip_comments=True):
        if token.type == "literal" and token.value == ",":
            parts.append([])
        else:
            parts[-1].append(token)
    return tuple(tinycss2.serialize(part).strip() for part in parts)


ESCAPE = re.compile(r"\\(.)")
COMBINATORS = (">", "+", "~")


def requirements(selector: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(classes, ids, elements) that ``selector`` needs on the page. Attribute tests and
    the arguments of functional pseudo-classes (``:not``, ``:is``, ``:has``...) require
    nothing for certain: they are blocks and functions, passed over whole."""
    found = REQUIREMENTS.get(selector)
    if found is None:
        found = REQUIREMENTS[selector] = selector_requirements(selector)
    return found


def selector_requirements(selector: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    classes, ids, elements = set(), set(), set()
    previous = None  # the token before, whitespace included
    for token in tinycss2.parse_component_value_list(selector, skip_comments=True):
        if token.type == "ident" and previous is not None and previous.type == "literal" and previous.value == ".":
            classes.add(token.value)
        elif token.type == "ident" and (previous is None or previous.type == "whitespace"
                                        or previous.type == "literal" and previous.value in COMBINATORS):
            elements.add(token.lower_value)
        elif token.type == "hash":
            ids.add(token.value)
        previous = token
    return frozenset(classes), frozenset(ids), frozenset(elements)


@dataclass
class Vocabulary:
    """What the pages of one language hold: classes, ids, element names."""
    classes: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    elements: set[str] = field(default_factory=set)

    def can_match(self, selector: str) -> bool:
        classes, ids, elements = requirements(selector)
        return classes <= self.classes and ids <= self.ids and elements <= self.elements


CLASS_ATTRIBUTE = re.compile(r"""\sclass\s*=\s*(?:"([^"]*)"|'([^']*)')""")
ID_ATTRIBUTE = re.compile(r"""\sid\s*=\s*(?:"([^"]*)"|'([^']*)')""")
TAG = re.compile(r"<([a-zA-Z][\w-]*)")


OWN_SCRIPTS = PACKAGE / "static"
WORD = re.compile(r"[A-Za-z_][\w-]*")
JS_STRING = re.compile(r""""((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`""")


def script_words(scripts: list[str]) -> set[str]:
    """Every word in the string literals of the book's own scripts: the classes they may
    add (a few words more do no harm), without a list to keep up as they change."""
    return {word for script in scripts for groups in JS_STRING.findall(script)
            for literal in groups for word in WORD.findall(literal)}


def vocabulary(pages: list[str], scripts: list[str] = ()) -> Vocabulary:
    found = Vocabulary(set(RUNTIME_CLASSES) | script_words(scripts), set(), set(RUNTIME_ELEMENTS))
    for html in pages:
        for double, single in CLASS_ATTRIBUTE.findall(html):
            found.classes.update((double or single).split())
        for double, single in ID_ATTRIBUTE.findall(html):
            found.ids.add(double or single)
        found.elements.update(tag.lower() for tag in TAG.findall(html))
    found.elements.update({"html", "body", "head"})  # a parser makes them if a page omits them
    return found


# --- trimming --------------------------------------------------------------------------

VENDOR_PSEUDO = re.compile(r":-[a-z]")
GROUPS = ("@media", "@supports", "@container", "@layer", "@document")


def keep_rules(nodes: list[Node], words: Vocabulary) -> list[Node]:
    """The style rules that can match (with only their selectors that can), inside the
    conditional groups that still hold one; every other at-rule as it is, for now."""
    kept = []
    for node in nodes:
        if node.children is None:
            kept.append(node)  # @import, @charset...
        elif node.prelude.startswith("@"):
            if node.prelude.lower().startswith(GROUPS):
                inner = keep_rules(node.children, words)
                if inner:
                    kept.append(Node(node.prelude, inner))
            else:
                kept.append(node)  # @font-face, @keyframes, @page, @property: decided later
        else:
            selectors = split_top_level(node.prelude)
            possible = [selector for selector in selectors if words.can_match(selector)]
            if not possible:
                continue
            # A list with a selector Chromium rejects is ignored whole: dropping that one
            # would switch the rule on, so such lists stay as they are.
            if VENDOR_PSEUDO.search(node.prelude):
                possible = selectors
            kept.append(Node(",".join(possible), node.children))
    return kept


def walk(nodes: list[Node]):
    for node in nodes:
        yield node
        if node.children is not None and not node.prelude.startswith("@"):
            yield from node.children
        elif node.children is not None and node.prelude.lower().startswith(GROUPS):
            yield from walk(node.children)


CUSTOM = re.compile(r"--[\w-]+")
VAR = re.compile(r"var\(\s*(--[\w-]+)")


def declaration(node: Node) -> tuple[str, str]:
    name, _, value = node.prelude.partition(":")
    return name.strip(), value


def prune_properties(sheets: dict[Path, list[Node]], elsewhere: str) -> None:
    """Drop the custom properties nothing uses: not a kept declaration, not ``elsewhere``
    (other stylesheets, pages' style attributes, scripts), not another used property."""
    used = set(CUSTOM.findall(elsewhere))
    values: dict[str, list[str]] = {}
    for nodes in sheets.values():
        for node in walk(nodes):
            if node.children is not None and not node.prelude.startswith("@"):
                for child in node.children:
                    name, value = declaration(child)
                    if name.startswith("--"):
                        values.setdefault(name, []).append(value)
                    else:
                        used.update(VAR.findall(child.prelude))
            elif node.children is not None:  # @font-face, @keyframes...: kept or not, later
                used.update(VAR.findall(node.text()))
    pending = list(used)
    while pending:
        for value in values.get(pending.pop(), ()):
            for name in VAR.findall(value):
                if name not in used:
                    used.add(name)
                    pending.append(name)
    for nodes in sheets.values():
        for node in walk(nodes):
            if node.children is not None and not node.prelude.startswith("@"):
                node.children = [child for child in node.children
                                 if not declaration(child)[0].startswith("--") or declaration(child)[0] in used]


def without_empty(nodes: list[Node]) -> list[Node]:
    kept = []
    for node in nodes:
        if node.children is not None and not node.children and not node.prelude.startswith("@font-face"):
            continue
        if node.children is not None and node.prelude.lower().startswith(GROUPS):
            node.children = without_empty(node.children)
            if not node.children:
                continue
        kept.append(node)
    return kept


FONT_FAMILY = re.compile(r"font-family\s*:\s*([^;]+)", re.I)


def family_key(text: str) -> str:
    return " ".join(ESCAPE.sub(r"\1", text).strip().strip("\"'").lower().split())


def prune_at_rules(nodes: list[Node], used_text: str, used: str = "") -> list[Node]:
    """Drop @font-face whose family and @keyframes whose name ``used_text`` never names."""
    used = used or family_key(ESCAPE.sub(r"\1", used_text).replace('"', " ").replace("'", " "))
    kept = []
    for node in nodes:
        lower = node.prelude.lower()
        if lower.startswith("@font-face"):
            family = FONT_FAMILY.search(node.text())
            if family and family_key(family.group(1)) not in used:
                continue
        elif lower.startswith(("@keyframes", "@-webkit-keyframes")):
            name = node.prelude.split(None, 1)[1].strip() if " " in node.prelude else ""
            if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", used_text):
                continue
        elif node.children is not None and lower.startswith(GROUPS):
            node.children = prune_at_rules(node.children, used_text, used)
        kept.append(node)
    return kept


def usage_text(nodes: list[Node]) -> str:
    """Everything kept except @font-face and @keyframes: where fonts and animations get named."""
    return "\n".join(node.text() for node in nodes
                     if not node.prelude.lower().startswith(("@font-face", "@keyframes", "@-webkit-keyframes")))


# --- Font Awesome ------------------------------------------------------------------------

STRING = re.compile(r""""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'""", re.S)
HEX_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)", re.S)
URL = re.compile(r"""url\(\s*['"]?([^'")]+?\.woff2)['"]?\s*\)(\s*format\(\s*['"]?woff2['"]?\s*\))?""")


def characters(css: str) -> set[int]:
    """Every character written in a CSS string (``content: "\\f00d"``, ``--fa: "\\f015"``)."""
    found = set()
    for double, single in STRING.findall(css):
        text = HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), double or single)
        found.update(ord(char) for char in text)
    return found


def subset_icon_fonts(nodes: list[Node], sheet: Path, codepoints: set[int], store: Path | None = None) -> list[Node]:
    """Font Awesome faces cut to ``codepoints`` (beside the original); faces left with no
    glyph go. With ``store`` (a folder), each cut is kept there by the digest of the font, the
    characters and this module, and a later build with the same ones copies it instead
    (reading the font and cutting it is most of a small book's trimming)."""
    import shutil

    from fontTools import subset
    from fontTools.ttLib import TTFont

    try:
        import brotli  # noqa: F401  fontTools reads and writes WOFF2 with it
    except ImportError:
        # A toolchain older than requirements.txt: the fonts stay whole (and
        # tests/test_assets.py fails) rather than every build.
        logger.info("Font Awesome left whole: brotli is missing (re-sync the toolchain)")
        return nodes
    kept = []
    for node in nodes:
        face = node.text()
        url = URL.search(face) if node.prelude.lower().startswith("@font-face") else None
        if url is None or "fontawesome" not in url.group(1) or ".subset." in url.group(1):
            kept.append(node)
            continue
        source = (sheet.parent / url.group(1)).resolve()
        target = source.with_suffix(".subset.woff2")
        relative = url.group(1).rsplit("/", 1)[0] + "/" + target.name
        subset_face = face[:url.start()] + f'url({relative}) format("woff2")' + face[url.end():]
        cut = None if store is None else store / (hashlib.sha256(
            module_bytes() + source.read_bytes() + ",".join(map(str, sorted(codepoints))).encode()
        ).hexdigest() + ".woff2")
        if cut is not None and cut.is_file():  # empty: the font has none of the characters
            if cut.stat().st_size:
                shutil.copyfile(cut, target)
                kept.append(parse(subset_face)[0])
            continue
        font = TTFont(source, recalcTimestamp=False)  # the cut is the same bytes in every build
        wanted = codepoints & set(font.getBestCmap())
        if not wanted:
            keep_in_store(cut, b"")
            continue
        if already_subset(target, font, wanted):  # an earlier build's, of the same font
            keep_in_store(cut, target.read_bytes())
            kept.append(parse(subset_face)[0])
            continue
        options = subset.Options()
        options.flavor = "woff2"
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=wanted)
        chatter = logging.getLogger("fontTools")  # reports every table it touches, at INFO
        level, chatter.level = chatter.level, logging.WARNING
        try:
            subsetter.subset(font)
        finally:
            chatter.setLevel(level)
        font.flavor = "woff2"
        font.save(target)
        keep_in_store(cut, target.read_bytes())
        kept.append(parse(subset_face)[0])  # the same face, its src replaced
    return kept


@functools.cache
def module_bytes() -> bytes:
    """This module's source, read once: every entry of the store is keyed on it."""
    return Path(__file__).read_bytes()


def already_subset(target: Path, font, wanted: set[int]) -> bool:
    """Whether ``target`` is ``font`` cut to ``wanted`` already (subsetting takes most of a
    rebuild's trimming): the same characters, and the same font by its revision and version."""
    from fontTools.ttLib import TTFont

    if not target.is_file():
        return False
    try:
        done = TTFont(target)
        return (set(done.getBestCmap()) == wanted and done["head"].fontRevision == font["head"].fontRevision
                and done["name"].getDebugName(5) == font["name"].getDebugName(5))
    except Exception:  # a damaged or foreign file: made again
        return False


# --- the build step ----------------------------------------------------------------------

def pages_of(outdir: Path) -> list[str]:
    return [path.read_text(encoding="utf8", errors="replace") for path in sorted(outdir.rglob("*.html"))
            if "_static" not in path.relative_to(outdir).parts]


# Scripts only in name: the search's data (the pages' words and their counts, which change
# with every edit), not code that may add a class or read a custom property.
SEARCH_DATA = ("searchindex.js", "searchcounts.js")


def site_scripts(outdir: Path) -> list[Path]:
    """The site's scripts: what may name a class or a custom property at run time."""
    return sorted(path for path in outdir.rglob("*.js")
                  if "_sources" not in path.parts and path.name not in SEARCH_DATA)


def trim_site(outdir: Path, record: Path | None = None, store: Path | None = None) -> dict[str, tuple[int, int]]:
    """Trim the sheets of :data:`TRIMMED` in ``outdir``; {sheet: (bytes before, after)}.

    With ``record`` (a file outside the site), the trimmed sheets are kept there with the
    digest of everything trimming reads; a rebuild whose pages hold the same classes, ids
    and elements (a prose edit) writes them again without parsing a stylesheet.
    ``store``: a folder where the parsed sheets and the cut fonts are kept for every build
    (:func:`parsed_sheet`, :func:`subset_icon_fonts`)."""
    static = outdir / "_static"
    sheets = sorted({path for pattern in TRIMMED for path in static.glob(pattern)})
    if not sheets:
        return {}
    pages = pages_of(outdir)
    own = [path.read_text(encoding="utf8") for path in sorted(static.glob("*.js"))
           if (OWN_SCRIPTS / path.name).exists()]
    words = vocabulary(pages, own)
    before = {path: path.read_text(encoding="utf8") for path in sheets}

    def read(paths) -> str:
        return "\n".join(path.read_text(encoding="utf8", errors="replace") for path in sorted(paths)
                         if path not in before)

    styles = read(static.rglob("*.css")) + "\n".join(re.findall(r"""\sstyle\s*=\s*"([^"]*)""", "\n".join(pages)))
    scripts = read(site_scripts(outdir))
    key = inputs_key(static, before, words, styles, scripts)
    trimmed = reused(record, key, static)
    if trimmed is None:
        parsed = {path: keep_rules(parsed_sheet(text, store), words) for path, text in before.items()}
        prune_properties(parsed, styles + scripts)
        # Fonts, animations and icons are named in stylesheets only (the scripts name classes).
        used = "\n".join([styles, *(usage_text(nodes) for nodes in parsed.values())])
        codepoints = characters(used)
        trimmed = {path.relative_to(static).as_posix():
                   serialize(subset_icon_fonts(prune_at_rules(without_empty(nodes), used), path, codepoints, store))
                   for path, nodes in parsed.items()}
        remember(record, key, static, trimmed)
    sizes = {}
    for path in sheets:
        name = path.relative_to(static).as_posix()
        path.write_text(trimmed[name], encoding="utf8")
        sizes[name] = (len(before[path].encode()), len(trimmed[name].encode()))
    return sizes


def inputs_key(static: Path, before: dict[Path, str], words: Vocabulary, styles: str, scripts: str) -> str:
    """The digest of everything trimming reads, this module's code included."""
    digest = hashlib.sha256(module_bytes())
    parts = [*(f"{path.relative_to(static).as_posix()}\0{text}" for path, text in sorted(before.items())),
             " ".join(sorted(words.classes)), " ".join(sorted(words.ids)), " ".join(sorted(words.elements)),
             styles, scripts]
    for part in parts:
        digest.update(part.encode() + b"\0\1")
    return digest.hexdigest()


def subset_fonts(static: Path, trimmed: dict[str, str]) -> dict[str, str]:
    """The subset fonts the trimmed sheets point at, each with its digest (None if missing)."""
    found = {}
    for name, text in trimmed.items():
        for match in URL.finditer(text):
            if ".subset." in match.group(1):
                font = ((static / name).parent / match.group(1)).resolve()
                found[font.relative_to(static.resolve()).as_posix()] = (
                    hashlib.sha256(font.read_bytes()).hexdigest() if font.is_file() else None)
    return found


def reused(record: Path | None, key: str, static: Path) -> dict[str, str] | None:
    """The trimmed sheets of an earlier build of the same inputs, if its fonts are still there."""
    try:
        kept = json.loads(record.read_text(encoding="utf8")) if record else None
        if kept and kept["key"] == key and subset_fonts(static, kept["sheets"]) == kept["fonts"]:
            return kept["sheets"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # a damaged record: trimmed anew
        pass
    return None


def remember(record: Path | None, key: str, static: Path, trimmed: dict[str, str]) -> None:
    if record is not None:
        write_atomically(record, json.dumps({"key": key, "sheets": trimmed, "fonts": subset_fonts(static, trimmed)}))


TRIM_RECORD = "book-trimmed-sheets.json"  # in the doctrees: never published
def forget_trimmed_copies(app: Sphinx) -> None:
    """The sheets of :data:`TRIMMED` that the last build trimmed go when a build starts, so
    that each build trims them as their packages ship them: an extension may copy its sheet
    without overwriting a changed copy (Sphinx's copy_asset_file without ``force``, which
    warns instead, as myst-nb 1.4 copies mystnb.<digest>.css), and the themes' and Sphinx's
    are copied again anyway."""
    if app.builder.name == "html":
        static = Path(app.outdir) / "_static"
        for path in sorted({path for pattern in TRIMMED for path in static.glob(pattern)}):
            path.unlink()


# Pygments' rules in its stylesheet (Sphinx writes one per theme): the code block's own colour,
# and each token class's declarations.
BLOCK_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight\s*\{([^}]*)\}')
TOKEN_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight \.([\w-]+)\s*\{([^}]*)\}')
TOKEN_SPAN = re.compile(r'<span class="([\w-]+)">([^<]*)</span>')


def declarations(body: str) -> dict[str, str]:
    return dict((name.strip(), value.strip()) for name, _, value in
                (item.partition(":") for item in body.split(";")) if name.strip())


def plain_token_classes(pygments_css: str) -> set[str]:
    """The token classes that draw nothing of their own: in every theme, the one declaration of
    their rule is the colour the code block has anyway (``.n``, a name, and ``.p``,
    punctuation, in the theme's styles)."""
    block = {theme: declarations(body).get("color") for theme, body in BLOCK_RULE.findall(pygments_css)}
    rules: dict[str, dict[str, dict[str, str]]] = {}
    for theme, name, body in TOKEN_RULE.findall(pygments_css):
        rules.setdefault(name, {})[theme] = declarations(body)
    return {name for name, by_theme in rules.items()
            if block and None not in block.values() and set(by_theme) == set(block)
            and all(by_theme[theme] == {"color": block[theme]} for theme in block)}


def without_plain_spans(page: str, plain: set[str]) -> str:
    """``page`` with the token spans of ``plain`` classes replaced by their text."""
    return TOKEN_SPAN.sub(lambda m: m[2] if m[1] in plain else m[0], page)


def drop_plain_token_spans(app: Sphinx) -> None:
    """A page's code is about a third of its bytes in token spans, and on the theme's styles
    the commonest, names and punctuation, draw nothing the block does not: they go, before
    the sheets are trimmed (the error atlas loaded 675 KB with them, against a 600 KB budget)."""
    outdir = Path(app.outdir)
    css = outdir / "_static" / "pygments.css"
    plain = plain_token_classes(css.read_text(encoding="utf8")) if css.is_file() else set()
    if not plain:
        return
    for path in sorted(outdir.rglob("*.html")):
        if "_static" in path.relative_to(outdir).parts:
            continue
        page = path.read_text(encoding="utf8")
        lighter = without_plain_spans(page, plain)
        if lighter != page:
            write_atomically(path, lighter)


def trim_build(app: Sphinx) -> None:
    sizes = trim_site(Path(app.outdir), Path(app.doctreedir) / TRIM_RECORD, build_store(app.config.book_cache_root))
    logger.info("trimmed stylesheets: " + ", ".join(
        f"{name} {old // 1024} KB -> {new // 1024} KB" for name, (old, new) in sizes.items()))


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", forget_trimmed_copies)
