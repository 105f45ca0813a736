"""Nothing between a page's HTML and its first paint: the CSS the page uses is inline
and its scripts wait for the page to be parsed (issue 24).

Lighthouse's phone (150 ms round trips, 1.6 Mbit/s) waited for eight stylesheets and
seven scripts in the head before it painted anything. After an html build, and after
:mod:`.asset_trimming` has trimmed the themes' sheets, each page's head is rewritten:

- **the page's CSS, inline.** The rules of the page's stylesheets (in their order,
  ``@import`` followed) whose selectors can match the page (``asset_trimming.Vocabulary``
  decides, as for trimming: the classes the scripts add count), with the custom
  properties, ``@font-face`` and ``@keyframes`` those use, go into one ``<style>``
  where the first ``<link>`` was; their ``url()``\\ s are rewritten relative to the
  page. The ``<link>``\\ s go (a comment names each). The same rules in the same order,
  so the page looks as before, with JavaScript or without.

  Why not "the first screen's CSS inline, the rest deferred": measured on the real
  book, the rules of a page's first screen (everything down to 4000 characters of its
  article: the header, sidebars and dialogs are on every screen) were 66 of its 76 KB,
  so the deferred sheets brought almost nothing new, cost those bytes twice (the
  error atlas went over tests/test_assets.py's budget) and restyled the whole page a
  second time when they arrived (Lighthouse's total blocking time). Preloading the
  icon font the inline CSS declares made the first paint later, not earlier: the
  font competed with the page for the slow network, and only icons use it.
- **scripts deferred.** The head's blocking scripts (except on a page with one of
  :data:`KEEP_BLOCKING`: the search page) get ``defer``, placed before the
  scripts that were already deferred, so everything still runs in the order it ran in.
  An inline script runs where it stands and cannot wait for a deferred one: a script that
  declares a global name the head's inline scripts use is inlined instead (on the book's
  pages, Sphinx's ``documentation_options.js``, 320 bytes, which declares the
  ``DOCUMENTATION_OPTIONS`` the theme's inline scripts assign to).

The step is idempotent: a page written by an earlier build (an incremental build
leaves it) is first put back as the theme wrote it, then rewritten.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from contextlib import suppress
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging

from ..paths import build_store
from . import asset_trimming

logger = sphinx_logging.getLogger(__name__)

MARK = "data-book-first-paint"

# Scripts whose page keeps all its scripts as they are. searchtools.js starts the search
# with doctools.js's _ready(): blocking, that waits for DOMContentLoaded, after the
# deferred book-search.js has replaced its ranking; deferred, it would start at once.
# And book-search.js expects searchindex.js (after searchtools.js) to have run. The
# search page only (its CSS is inline all the same).
KEEP_BLOCKING = {"searchtools.js"}
HEAD = re.compile(r"<head>.*?</head>", re.S)
STYLESHEET = re.compile(r"""<link\b[^>]*\brel=["']?stylesheet\b[^>]*>""")
HREF = re.compile(r"""(?<![\w-])href=["']([^"']+)["']""")
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S)
SRC = re.compile(r"""(?<![\w-])src=["']([^"']+)["']""")
URL = re.compile(r"""url\(\s*(["']?)([^"')]+)\1\s*\)""")
# A global name an inline script uses: an identifier that no dot qualifies (string literals
# left out first), and a script's top-level way of declaring one.
JS_STRING = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`""")
GLOBAL_NAME = re.compile(r"(?<![\w.$])[A-Za-z_$][\w$]*")
JS_COMMENT = re.compile(r"/\*.*?\*/|(?<![:\\])//[^\n]*", re.S)
DECLARATION = r"\b(?:const|let|var|function|class)\s+({names})\b"  # a global at the top level only
GLOBAL_ASSIGNMENT = r"\b(?:window|globalThis)\.({names})\s*=(?!=)"  # anywhere
IMPORT = re.compile(r"""^@import\s+(?:url\(\s*)?["']?([^"')\s]+)["']?\s*\)?\s*(.*)$""", re.S)

# Beside the doctrees: what every page's rewrite read, and each page as this step left it.
RECORD = "book-first-paint.json"

# What an earlier run of this step wrote, to be undone first.
OLD_STYLE = re.compile(rf"<style {MARK}>.*?</style>\n?", re.S)
OLD_LINK = re.compile(rf"<!-- {MARK}: (.+?) -->")
OLD_OPTIONS = re.compile(rf'<script {MARK}-src="([^"]+)">.*?</script>', re.S)
OLD_DEFER = re.compile(rf' defer {MARK}-deferred')


def local(url: str) -> bool:
    return not re.match(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", url, re.I)


def undo(page: str) -> str:
    """The page as the theme wrote it, before any earlier run of this step."""
    if MARK not in page:
        return page
    page = OLD_STYLE.sub("", page)
    page = OLD_LINK.sub(lambda m: f'<link rel="stylesheet" href="{m.group(1)}">', page)
    page = OLD_OPTIONS.sub(lambda m: f'<script src="{m.group(1)}"></script>', page)
    return OLD_DEFER.sub("", page)


def rebase(css: str, sheet: str, page_dir: str) -> str:
    """``url()``\\ s of a sheet at ``sheet`` (a path from the site root), relative to the page."""
    def moved(match: re.Match) -> str:
        url = match.group(2)
        if not local(url) or url.startswith(("data:", "/")):
            return match.group()
        target = posixpath.normpath(posixpath.join(posixpath.dirname(sheet), url))
        return f"url({posixpath.relpath(target, page_dir or '.')})"
    return URL.sub(moved, css)


# pydata-sphinx-theme's sheet writes a transition's delay as a string ("0s"): browsers drop
# that declaration (a string is no <time>), and the HTML checker rejects it once it is inline.
# Dropped here too, so the page renders as it did and its HTML is valid.
QUOTED_TRANSITION = re.compile(r"""^\s*(-webkit-)?transition(-[a-z-]+)?\s*:.*["']""", re.S | re.I)


def without_dropped(nodes: list[asset_trimming.Node]) -> list[asset_trimming.Node]:
    """``nodes`` without the declarations a browser drops (:data:`QUOTED_TRANSITION`)."""
    return [node if node.children is None else asset_trimming.Node(node.prelude, without_dropped(node.children))
            for node in nodes if not (node.children is None and QUOTED_TRANSITION.match(node.prelude))]


def read_sheet(root: Path, path: str, seen: set[str], store: Path | None = None) -> list[tuple[str, list[asset_trimming.Node]]]:
    """(sheet path, its rules) for the sheet at ``path`` and, in their place, the sheets it
    ``@import``\\ s (without a media condition; one with a condition stays an @import).
    ``store``: asset_trimming's, where the themes' sheets are kept parsed."""
    if path in seen or not (root / path).is_file():
        return []
    seen.add(path)
    found: list[tuple[str, list[asset_trimming.Node]]] = []
    rules: list[asset_trimming.Node] = []
    for node in without_dropped(asset_trimming.parsed_sheet((root / path).read_text(encoding="utf8"), store)):
        imported = IMPORT.match(node.prelude) if node.children is None and node.prelude.lower().startswith("@import") else None
        if imported and not imported.group(2).strip() and local(imported.group(1)):
            found.append((path, rules))
            found.extend(read_sheet(root, posixpath.normpath(posixpath.join(posixpath.dirname(path), imported.group(1))),
                                    seen, store))
            rules = []
        elif not (node.children is None and node.prelude.lower().startswith(("@import", "@charset"))):
            rules.append(node)
    found.append((path, rules))
    return [(name, nodes) for name, nodes in found if nodes]


def rewrite(page: str, page_path: str, root: Path, scripts: list[str], cache: dict, every_script: str = "",
            store: Path | None = None) -> str:
    """``page`` (at ``page_path`` from ``root``) with its CSS inline and its head's
    scripts deferred. ``scripts`` are the book's own (their strings count as classes);
    ``every_script`` is the text of all the site's scripts, whose custom properties stay
    (bootstrap.js reads ``--bs-position`` to place a dropdown)."""
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
    sheets: list[tuple[str, list[asset_trimming.Node]]] = []
    for _, href in links:
        path = posixpath.normpath(posixpath.join(page_dir, href.split("?")[0].split("#")[0]))
        if path not in cache:
            cache[path] = read_sheet(root, path, set(), store)
        sheets.extend(cache[path])
    words = asset_trimming.vocabulary([page], scripts)
    kept = {index: asset_trimming.keep_rules([copy(node) for node in nodes], words) for index, (_, nodes) in enumerate(sheets)}
    styles = "\n".join(re.findall(r"""\sstyle\s*=\s*"([^"]*)""", page))
    asset_trimming.prune_properties(kept, "\n".join([styles, every_script or "\n".join(scripts)]))
    used = "\n".join([styles, *(asset_trimming.usage_text(nodes) for nodes in kept.values())])
    pruned = {index: asset_trimming.prune_at_rules(asset_trimming.without_empty(nodes), used) for index, nodes in kept.items()}
    css = "".join(rebase(asset_trimming.serialize(pruned[index]), name, page_dir) for index, (name, _) in enumerate(sheets))

    # The page's CSS where the first sheet was; each <link> leaves a comment that names
    # it (what undo() puts back).
    first = links[0][0]
    out = [head_text[:first.start()], f"<style {MARK}>{css}</style>\n"]
    position = first.start()
    for match, href in links:
        out.append(head_text[position:match.start()])
        out.append(f"<!-- {MARK}: {href} -->")
        position = match.end()
    out.append(head_text[position:])
    head_text = defer_scripts("".join(out), root, page_dir)
    return page[:head.start()] + head_text + page[head.end():]


def copy(node: asset_trimming.Node) -> asset_trimming.Node:
    """A deep copy: keep_rules and prune_properties change the nodes they are given."""
    return asset_trimming.Node(node.prelude, None if node.children is None else [copy(child) for child in node.children])


def inline_globals(head: str) -> set[str]:
    """The global names that the head's inline scripts use."""
    names: set[str] = set()
    for match in SCRIPT.finditer(head):
        if SRC.search(match.group(1)) is None and not re.search(r"\btype=", match.group(1)):
            names.update(GLOBAL_NAME.findall(JS_STRING.sub('""', match.group(2))))
    return names


def declares(script: str, names: set[str]) -> bool:
    """Whether ``script`` declares one of ``names`` as a global: ``const NAME`` (``let``,
    ``var``, ``function``, ``class``) outside every block, or ``window.NAME =``."""
    if not names:
        return False
    code = JS_COMMENT.sub(" ", JS_STRING.sub('""', script))
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    if re.search(GLOBAL_ASSIGNMENT.format(names=alternatives), code):
        return True
    return any(code.count("{", 0, match.start()) == code.count("}", 0, match.start())
               for match in re.finditer(DECLARATION.format(names=alternatives), code))


def defer_scripts(head: str, root: Path, page_dir: str) -> str:
    """The head's blocking scripts deferred and moved before the deferred ones (so the
    order they run in is the same); one that declares a global the head's inline scripts
    use, inlined."""
    blocking, deferred, first = [], [], None
    if any((src := SRC.search(match.group(1))) and posixpath.basename(src.group(1).split("?")[0]) in KEEP_BLOCKING
           for match in SCRIPT.finditer(head)):
        return head
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
    tags, used = [], inline_globals(head)
    for match in blocking:
        src = SRC.search(match.group(1)).group(1)
        path = root / posixpath.normpath(posixpath.join(page_dir, src.split("?")[0]))
        text = path.read_text(encoding="utf8") if path.is_file() else ""
        if declares(text, used):
            tags.append(f'<script {MARK}-src="{src}">{text.strip()}</script>')
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


def rewrite_site(outdir: Path, record: Path | None = None, store: Path | None = None) -> tuple[int, int, int]:
    """Every page of ``outdir`` rewritten; (pages, pages rewritten now, largest inline CSS in bytes).

    With ``record`` (a file beside the doctrees), a page is rewritten only when it changed
    since this step last left it, or when what every page's rewrite reads changed (the
    site's stylesheets and scripts, this code): after a prose edit, Sphinx writes a few pages again and
    only those are redone; the others are already what this step would make of them."""
    static = outdir / "_static"
    # Each script read once: the book's own name classes; as in asset_trimming.trim_site, a
    # property any script names is kept.
    texts = {path: path.read_text(encoding="utf8", errors="replace")
             for path in asset_trimming.site_scripts(outdir)}
    scripts = [text for path, text in texts.items()
               if path.parent == static and (asset_trimming.OWN_SCRIPTS / path.name).exists()]
    every_script = "\n".join(texts.values())
    # This step's own code, and the trimming's it calls, count too.
    inputs = hashlib.sha256(Path(__file__).read_bytes() + Path(asset_trimming.__file__).read_bytes())
    inputs.update(every_script.encode())
    for path in sorted(outdir.rglob("*.css")):
        inputs.update(path.relative_to(outdir).as_posix().encode() + b"\0" + path.read_bytes())
    inputs = inputs.hexdigest()
    noted = {}
    if record is not None:
        with suppress(OSError, ValueError):
            noted = json.loads(record.read_text(encoding="utf8"))
    done = noted.get("pages", {}) if isinstance(noted, dict) and noted.get("inputs") == inputs else {}
    left: dict[str, str] = {}  # each page, as this step leaves it: the digest of its text
    cache: dict = {}
    count, rewritten, largest = 0, 0, 0
    for path in sorted(outdir.rglob("*.html")):
        relative = path.relative_to(outdir)
        if relative.parts[0] in ("_static", "_sources", "_notebooks", "_downloads", "_images"):
            continue
        page = path.read_text(encoding="utf8")
        digest = hashlib.sha256(page.encode()).hexdigest()
        if done.get(relative.as_posix()) == digest:
            new = page
        else:
            new = rewrite(page, relative.as_posix(), outdir, scripts, cache, every_script, store)
            if new != page:
                path.write_text(new, encoding="utf8")
                digest = hashlib.sha256(new.encode()).hexdigest()
            rewritten += 1
        left[relative.as_posix()] = digest
        style = OLD_STYLE.search(new)
        largest = max(largest, len(style.group().encode()) if style else 0)
        count += 1
    if record is not None:
        record.write_text(json.dumps({"inputs": inputs, "pages": left}), encoding="utf8")
    return count, rewritten, largest


def inline_first_paint(app: Sphinx) -> None:
    pages, rewritten, largest = rewrite_site(Path(app.outdir), Path(app.doctreedir) / RECORD,
                                             build_store(app.config.book_cache_root))
    logger.info(f"first paint: {pages} pages ({rewritten} rewritten now), inline CSS at most {largest // 1024} KB")
