"""Nothing between a page's HTML and its first paint: the CSS its first screen needs is
inline, the rest loads without blocking, scripts wait for the page, and the icon font
of the first screen is asked for at once (issue 24).

Lighthouse's phone (150 ms round trips, 1.6 Mbit/s) waited for eight stylesheets and
seven scripts in the head before it painted anything. After an html build, and after
:mod:`.assets` has trimmed the themes' sheets, each page's head is rewritten:

- **the first screen's CSS, inline.** The rules of the page's stylesheets (in their
  order, ``@import`` followed) whose selectors can match the page as it is down to
  :data:`FIRST_SCREEN` characters of the article's text (all the chrome: header,
  sidebars, their dialogs, footer; ``assets.Vocabulary`` decides, as for trimming),
  with the custom properties, ``@font-face`` and ``@keyframes`` those use, go into one
  ``<style>``; their ``url()``\\ s are rewritten relative to the page;
- **the whole sheets, later.** Each ``<link rel=stylesheet>`` becomes ``media=print``
  (fetched without blocking) and all of them are switched to ``media=all`` together
  when the last one has arrived, so that the cascade is never one sheet short (a theme
  rule winning over the book's own for a moment); a ``<noscript>`` holds the plain
  links for a reader without JavaScript. The inline rules are a subset of the sheets in
  the same order, so once the sheets apply the page is styled exactly as before;
- **scripts deferred.** The head's blocking scripts get ``defer``, placed before the
  scripts that were already deferred, so everything still runs in the order it ran in;
  ``documentation_options.js`` (320 bytes, which the head's inline scripts assign to) is
  inlined instead;
- **the icon font preloaded.** Each web font the inline CSS declares (Font Awesome's
  subsets: the menu, search and theme icons of the header) is preloaded.

The step is idempotent: a page written by an earlier build (an incremental build
leaves it) is first put back as the theme wrote it, then rewritten.
"""

from __future__ import annotations

import html
import posixpath
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging

from . import assets

logger = sphinx_logging.getLogger(__name__)

# Characters of the article's text that the inline CSS covers: a 1280 px screen shows
# about 3000 of English prose, a phone far fewer (code and headings take more room per
# character). Below it an element waits a moment for the sheets; it is off screen.
FIRST_SCREEN = 4000

MARK = "data-book-first-paint"
HEAD = re.compile(r"<head>.*?</head>", re.S)
STYLESHEET = re.compile(r"""<link\b[^>]*\brel=["']?stylesheet\b[^>]*>""")
HREF = re.compile(r"""(?<![\w-])href=["']([^"']+)["']""")
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S)
SRC = re.compile(r"""(?<![\w-])src=["']([^"']+)["']""")
ARTICLE = re.compile(r"""<article\b[^>]*\bclass=["'][^"']*\bbd-article\b[^>]*>""")
TAG_OR_TEXT = re.compile(r"<[^>]*>|[^<]+")
URL = re.compile(r"""url\(\s*(["']?)([^"')]+)\1\s*\)""")
IMPORT = re.compile(r"""^@import\s+(?:url\(\s*)?["']?([^"')\s]+)["']?\s*\)?\s*(.*)$""", re.S)
FACE_URL = re.compile(r"""url\(([^)]+?\.woff2)\)""")

# What an earlier run of this step wrote, to be undone first.
OLD_STYLE = re.compile(rf"<style {MARK}>.*?</style>\n?", re.S)
OLD_BLOCK = re.compile(rf"<(?:noscript|script) {MARK}>.*?</(?:noscript|script)>\n?", re.S)
OLD_PRELOAD = re.compile(rf"<link {MARK}[^>]*>\n?")
OLD_LINK = re.compile(rf"""<link rel="stylesheet" href="([^"]+)" media="print" {MARK} onload="[^"]*" onerror="[^"]*">""")
OLD_OPTIONS = re.compile(rf'<script {MARK}-src="([^"]+)">.*?</script>', re.S)
OLD_DEFER = re.compile(rf' defer {MARK}-deferred')


def local(url: str) -> bool:
    return not re.match(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", url, re.I)


def undo(page: str) -> str:
    """The page as the theme wrote it, before any earlier run of this step."""
    if MARK not in page:
        return page
    page = OLD_STYLE.sub("", page)
    page = OLD_BLOCK.sub("", page)
    page = OLD_PRELOAD.sub("", page)
    page = OLD_LINK.sub(lambda m: f'<link rel="stylesheet" href="{m.group(1)}">', page)
    page = OLD_OPTIONS.sub(lambda m: f'<script src="{m.group(1)}"></script>', page)
    return OLD_DEFER.sub("", page)


def first_screen(page: str, limit: int = FIRST_SCREEN) -> str:
    """The page with its article cut after ``limit`` characters of text (tags kept whole):
    what the inline CSS has to style. A page without an article is kept whole."""
    start = ARTICLE.search(page)
    if start is None:
        return page
    seen = 0
    for piece in TAG_OR_TEXT.finditer(page, start.end()):
        if not piece.group().startswith("<"):
            seen += len(html.unescape(piece.group()).strip())
            if seen >= limit:
                end = page.find("</article>", piece.end())
                return page[:piece.end()] + (page[end:] if end >= 0 else "")
    return page


def rebase(css: str, sheet: str, page_dir: str) -> str:
    """``url()``\\ s of a sheet at ``sheet`` (a path from the site root), relative to the page."""
    def moved(match: re.Match) -> str:
        url = match.group(2)
        if not local(url) or url.startswith(("data:", "/")):
            return match.group()
        target = posixpath.normpath(posixpath.join(posixpath.dirname(sheet), url))
        return f"url({posixpath.relpath(target, page_dir or '.')})"
    return URL.sub(moved, css)


def read_sheet(root: Path, path: str, seen: set[str]) -> list[tuple[str, list[assets.Node]]]:
    """(sheet path, its rules) for the sheet at ``path`` and, in their place, the sheets it
    ``@import``\\ s (without a media condition; one with a condition stays an @import)."""
    if path in seen or not (root / path).is_file():
        return []
    seen.add(path)
    found: list[tuple[str, list[assets.Node]]] = []
    rules: list[assets.Node] = []
    for node in assets.parse((root / path).read_text(encoding="utf8")):
        imported = IMPORT.match(node.prelude) if node.children is None and node.prelude.lower().startswith("@import") else None
        if imported and not imported.group(2).strip() and local(imported.group(1)):
            found.append((path, rules))
            found.extend(read_sheet(root, posixpath.normpath(posixpath.join(posixpath.dirname(path), imported.group(1))), seen))
            rules = []
        elif not (node.children is None and node.prelude.lower().startswith(("@import", "@charset"))):
            rules.append(node)
    found.append((path, rules))
    return [(name, nodes) for name, nodes in found if nodes]


SWAP = ("<script {mark}>/* The stylesheets below apply together, once all have arrived. */"
        "var bookSheets={count};function bookSheet(){{if(--bookSheets===0)"
        "document.querySelectorAll('link[{mark}]').forEach(function(l){{l.media='all'}})}}</script>\n")


def rewrite(page: str, page_path: str, root: Path, scripts: list[str], cache: dict) -> str:
    """``page`` (at ``page_path`` from ``root``) with the first screen's CSS inline, its
    sheets deferred, its head's scripts deferred and its fonts preloaded."""
    page = undo(page)
    head = HEAD.search(page)
    if head is None:
        return page
    page_dir = posixpath.dirname(page_path)
    head_text = head.group()
    links = [(match, HREF.search(match.group())) for match in STYLESHEET.finditer(head_text)]
    links = [(match, href.group(1)) for match, href in links
             if href and local(href.group(1)) and "media=" not in match.group()]
    if not links:
        return page
    sheets: list[tuple[str, list[assets.Node]]] = []
    for _, href in links:
        path = posixpath.normpath(posixpath.join(page_dir, href.split("?")[0].split("#")[0]))
        if path not in cache:
            cache[path] = read_sheet(root, path, set())
        sheets.extend(cache[path])
    words = assets.vocabulary([first_screen(page)], scripts)
    kept = {index: assets.keep_rules([copy(node) for node in nodes], words) for index, (_, nodes) in enumerate(sheets)}
    styles = "\n".join(re.findall(r"""\sstyle\s*=\s*"([^"]*)""", page))
    assets.prune_properties(kept, styles + "\n".join(scripts))
    used = "\n".join([styles, *(assets.usage_text(nodes) for nodes in kept.values())])
    css = "".join(rebase(assets.serialize(assets.prune_at_rules(assets.without_empty(kept[index]), used)), name, page_dir)
                  for index, (name, _) in enumerate(sheets))
    fonts = []
    for face in re.findall(r"@font-face\{[^}]*\}", css):
        fonts += [url for url in FACE_URL.findall(face) if url not in fonts]

    # The new head: preloads and the inline CSS where the first sheet was, the sheets
    # deferred in place, their plain links in <noscript> after the last.
    first, last = links[0][0], links[-1][0]
    out = [head_text[:first.start()]]
    out += [f'<link {MARK} rel="preload" href="{html.escape(url)}" as="font" type="font/woff2" crossorigin>\n'
            for url in fonts]
    out.append(f"<style {MARK}>{css}</style>\n")
    out.append(SWAP.format(mark=MARK, count=len(links)))
    position = first.start()
    for match, href in links:
        out.append(head_text[position:match.start()])
        out.append(f'<link rel="stylesheet" href="{html.escape(href)}" media="print" {MARK} '
                   'onload="bookSheet()" onerror="bookSheet()">')
        position = match.end()
    out.append(f"<noscript {MARK}>" + "".join(f'<link rel="stylesheet" href="{html.escape(href)}">' for _, href in links)
               + "</noscript>\n")
    out.append(head_text[last.end():])
    head_text = defer_scripts("".join(out), root, page_dir)
    return page[:head.start()] + head_text + page[head.end():]


def copy(node: assets.Node) -> assets.Node:
    """A deep copy: keep_rules and prune_properties change the nodes they are given."""
    return assets.Node(node.prelude, None if node.children is None else [copy(child) for child in node.children])


def defer_scripts(head: str, root: Path, page_dir: str) -> str:
    """The head's blocking scripts deferred and moved before the deferred ones (so the
    order they run in is the same); documentation_options.js inlined."""
    blocking, deferred, first = [], [], None
    for match in SCRIPT.finditer(head):
        attributes = match.group(1)
        src = SRC.search(attributes)
        if src is None or not local(src.group(1)) or re.search(r"\b(?:async|type=)", attributes):
            continue
        if first is None:
            first = match.start()
        if re.search(r"\bdefer\b", attributes):
            deferred.append(match)
        else:
            blocking.append(match)
    if not blocking:
        return head
    tags = []
    for match in blocking:
        src = SRC.search(match.group(1)).group(1)
        path = root / posixpath.normpath(posixpath.join(page_dir, src.split("?")[0]))
        if path.name == "documentation_options.js" and path.is_file():
            tags.append(f'<script {MARK}-src="{src}">{path.read_text(encoding="utf8").strip()}</script>')
        else:
            tags.append(match.group().replace("<script", f"<script defer {MARK}-deferred", 1))
    tags += [match.group() for match in deferred]
    # Every external script comes out of its place (with its line), all go in at the first one's.
    out, position = [], 0
    for match in sorted(blocking + deferred, key=lambda m: m.start()):
        out.append(head[position:match.start()])
        if match.start() == first:
            out.append("\n    ".join(tags))
        position = match.end()
        if head.startswith("\n", position) and match.start() != first:
            position += 1
            out[-1] = out[-1].rstrip(" ")
    out.append(head[position:])
    return "".join(out)


def rewrite_site(outdir: Path) -> tuple[int, int]:
    """Every page of ``outdir`` rewritten; (pages, largest inline CSS in bytes)."""
    static = outdir / "_static"
    scripts = [path.read_text(encoding="utf8") for path in sorted(static.glob("*.js"))
               if (assets.OWN_SCRIPTS / path.name).exists()]
    cache: dict = {}
    count, largest = 0, 0
    for path in sorted(outdir.rglob("*.html")):
        relative = path.relative_to(outdir)
        if relative.parts[0] in ("_static", "_sources", "_notebooks", "_downloads", "_images"):
            continue
        page = path.read_text(encoding="utf8")
        new = rewrite(page, relative.as_posix(), outdir, scripts, cache)
        if new != page:
            path.write_text(new, encoding="utf8")
        style = OLD_STYLE.search(new)
        largest = max(largest, len(style.group().encode()) if style else 0)
        count += 1
    return count, largest


def build_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception or app.builder.name != "html":
        return
    pages, largest = rewrite_site(Path(app.outdir))
    logger.info(f"first paint: {pages} pages, inline CSS at most {largest // 1024} KB")


def setup(app: Sphinx) -> None:
    # After assets.trim_build (900): the inline rules come from the trimmed sheets.
    app.connect("build-finished", build_finished, priority=950)
