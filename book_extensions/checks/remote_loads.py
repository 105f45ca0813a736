"""Nothing a reader's browser does with the site loads or runs anything from another host.

Readers may be offline or behind a firewall that blocks CDNs, and a page that pulls a
script, font or image from elsewhere also tells that host who read it. Three layers:

- every cell's outputs, when its page is read (:func:`check_outputs`): each MIME type of
  every output, glued ones included and those the page does not show (the downloadable
  notebook carries them all), is taken as a browser takes it: HTML parsed as the page's
  body parses it (html5lib, the WHATWG algorithm, so that what is checked is what the
  browser builds), SVG as the XML document its image file is, markdown rendered as myst
  renders it. An output runs nothing (no script, no ``on*`` handler, no ``javascript:``
  URL, no widget, no ``application/javascript``), embeds no other document, moves none of
  the page's URLs (``<base>``, ``<meta http-equiv>``) and loads nothing but from this site
  or a checked ``data:`` URL. One warning per output names the page, the cell and the
  cause;
- every page, stylesheet and SVG file written (:func:`check_build`): the same rules over the
  site's own HTML (the templates, raw HTML in a page's prose) and images (an SVG a page shows
  is a file a reader can open, where no policy holds), except that the site's own scripts
  run, as long as no inline script or ``on*`` handler names another host's URL (raw HTML in
  prose is the site's too), and a frame's ``srcdoc`` is read as the document it is; it names
  the file;
- every page of the site carries a Content-Security-Policy that lets the browser load
  and connect to this site only (:mod:`..site.meta_and_footer`), so what the two checks
  above miss still loads nothing from another host. The site's check reads pages with
  html.parser, faster than html5lib (19 s against 43 s for the whole site here) but not the
  browser's algorithm (comments and CDATA sections a browser ends early are read again as
  markup): the policy is what holds there.

A URL counts as a load wherever the browser fetches it without the reader's doing: an
attribute the browser takes as a URL (``src``, ``srcset``, ``href`` but on a link, ``poster``,
``data``, ``action``...), CSS ``url()``, ``image-set()`` and ``@import``, and, in any other
attribute, anything shaped like an absolute URL. A link the reader follows (``<a href>``,
``<area href>``, ``<link rel=alternate|canonical...>``) and text meant for people (``title``,
``alt``, ``content``...) are not.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit
from xml.etree import ElementTree

from sphinx.application import Sphinx
from sphinx.util import logging

from ..paths import build_store, keep_in_store
from .clean_files import known_clean

logger = logging.getLogger(__name__)

HTML, SVG, MATHML = "http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg", "http://www.w3.org/1998/Math/MathML"
XLINK = "http://www.w3.org/1999/xlink"
# Elements of other namespaces (an SVG's RDF metadata) are never rendered, so never fetch.
RENDERED = {HTML, SVG, MATHML, None}  # None: the site's pages, read without namespaces

# Elements that show another document, whose own loads this check cannot see.
EMBEDDING = {"iframe", "frame", "frameset", "object", "embed", "applet", "portal", "fencedframe"}
# Attributes the browser takes as a URL (or a list of them) and fetches.
URL_ATTRIBUTES = {"src", "href", "poster", "data", "action", "formaction", "background", "codebase",
                  "manifest", "icon", "lowsrc", "dynsrc", "profile", "classid"}
URL_LIST_ATTRIBUTES = {"srcset", "imagesrcset", "ping", "archive"}
# Attributes that hold words for people or data for scripts: never fetched.
TEXT_ATTRIBUTES = {"title", "alt", "content", "value", "placeholder", "label", "cite", "longdesc",
                   "itemtype", "itemid", "itemprop", "summary", "abbr", "datetime", "class", "id",
                   "name", "lang", "hreflang", "rel", "type", "xmlns"}
NAVIGATION_RELS = {"alternate", "canonical", "next", "prev", "author", "license",
                   "help", "search", "index", "top", "up", "first", "last", "copyright"}
# CSS functions whose string arguments are URLs.
CSS_URL_FUNCTIONS = {"url", "src", "image", "image-set", "-webkit-image-set", "cross-fade", "-webkit-cross-fade"}
SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
# What, in an attribute that is not a URL, looks like one: a scheme-relative or
# hierarchical URL, or a scheme that fetches or runs without slashes.
URL_LIKE = re.compile(r"(?://|[a-zA-Z][a-zA-Z0-9+.-]*://|(?:javascript|vbscript|data|https?):)", re.I)
MAY_HOLD_URL = re.compile(r"[:/\\]")


def clean_url(value: str) -> str:
    """A URL as the browser reads it: ends stripped of spaces and controls, tabs and line
    breaks dropped, and a backslash taken for a slash (``\\\\host`` is ``//host``)."""
    return re.sub(r"[\t\n\r]", "", value.strip("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"
                                                  "\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18"
                                                  "\x19\x1a\x1b\x1c\x1d\x1e\x1f\x20")).replace("\\", "/")


# An absolute URL inside code the site runs (an inline script, an on* handler): with its scheme,
# or protocol-relative right after a quote or parenthesis (not a "//" comment).
CODE_URL = re.compile(r"""(?:\b(?:https?|wss?):|(?<=["'`(]))//[^\s"'`<>)\\]+""", re.I)


def code_problems(code: str, own_host: str, what: str) -> Iterator[str]:
    """What code the site runs would fetch from another host: any absolute URL in it
    (its own scripts hold none; prose's raw HTML might)."""
    for url in CODE_URL.findall(code):
        problem = url_problem(url, own_host)
        if problem:
            yield f"{problem} ({what})"


def shown(url: str, limit: int = 100) -> str:
    return url if len(url) <= limit else url[:limit] + "…"


def url_problem(value: str, own_host: str = "", navigation: bool = False) -> str | None:
    """Why a browser taking ``value`` as a URL would go beyond this site, or None.

    ``navigation``: the reader follows it (a link); only running code is refused then."""
    url = clean_url(value)
    match = SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme in ("javascript", "vbscript"):
        return f"runs code ({shown(url, 60)})"
    if navigation or not url:
        return None
    if scheme == "data":
        return data_url_problem(url, own_host)
    if not scheme and not url.startswith("//"):
        return None  # relative: this site
    if scheme in ("", "http", "https") and own_host and urlsplit(url).netloc == own_host:
        return None
    return f"loads {shown(url)}"


def data_url_problem(url: str, own_host: str) -> str | None:
    """A data: URL is part of the page; what it holds is checked as what it is."""
    header, _, payload = url[5:].partition(",")
    media_type = header.split(";")[0].strip().lower() or "text/plain"
    try:
        data = base64.b64decode(unquote_to_bytes(payload)) if header.lower().endswith(";base64") \
            else unquote_to_bytes(payload)
        text = data.decode("utf8", errors="replace")
    except ValueError:
        return f"loads a data: URL that does not decode ({media_type})"
    if media_type == "image/svg+xml":
        found = svg_problems(text, own_host)
    elif media_type == "text/css":
        found = css_problems(text, own_host, sheet=True)
    elif media_type.startswith(("image/", "font/", "application/font-")):
        return None
    else:
        return f"loads a data: URL of type {media_type}"
    return f"loads a data: URL ({media_type}) that {found[0]}" if found else None


def css_urls(tokens: Iterable) -> Iterator[str]:
    """Every URL in CSS tokens (tinycss2's): url(), image-set() and the like, @import."""
    for token in tokens:
        kind = token.type
        if kind == "url":
            yield token.value
        elif kind == "function":
            if token.lower_name in CSS_URL_FUNCTIONS:
                yield from (t.value for t in token.arguments if t.type == "string")
            yield from css_urls(token.arguments)
        elif kind in ("() block", "[] block", "{} block"):
            yield from css_urls(token.content)
        elif kind in ("at-rule", "qualified-rule"):
            if kind == "at-rule" and token.lower_at_keyword == "import":
                yield from (t.value for t in token.prelude if t.type == "string")
            yield from css_urls(token.prelude or [])
            yield from css_urls(token.content or [])


@functools.lru_cache(maxsize=256)
def css_problems(text: str, own_host: str, sheet: bool) -> tuple[str, ...]:
    """What CSS (a stylesheet, or a ``style`` attribute's declarations) would load. Remembered:
    every page the first paint rewrote inlines the same rules (tens of KB to tokenize)."""
    import tinycss2

    tokens = tinycss2.parse_stylesheet(text) if sheet else tinycss2.parse_component_value_list(text)
    problems = (url_problem(url, own_host) for url in css_urls(tokens))
    return tuple(problem for problem in problems if problem)


def attribute_problems(element: str, name: str, value: str, own_host: str, *, rels: set[str],
                       scripts: bool) -> Iterator[str]:
    """What one attribute would make the browser load or run. ``name`` is the local name
    (``xlink:href`` is ``href``); ``scripts``: the site's own scripts may run."""
    what = f"<{element} {name}>"
    if name.startswith("on") and len(name) > 2:
        if not scripts:
            yield f"runs code ({what})"
        else:
            yield from code_problems(value, own_host, what)
        return
    if name == "style":
        yield from (f"{p} ({what})" for p in css_problems(value, own_host, sheet=False))
        return
    if name in TEXT_ATTRIBUTES or name.startswith(("aria-", "data-", "xmlns")):
        return
    if name == "href" and (element in ("a", "area") or (element == "link" and rels and rels <= NAVIGATION_RELS)):
        problem = url_problem(value, own_host, navigation=True)
        if problem:
            yield f"{problem} ({what})"
        return
    if name in URL_ATTRIBUTES:
        candidates = [value]
    elif name in URL_LIST_ATTRIBUTES:  # "a.png 1x, b.png 2x"; ping and archive: by spaces
        candidates = [c.split()[0] for c in value.split(",") if c.split()] if "srcset" in name else value.split()
    elif MAY_HOLD_URL.search(value):
        # An attribute not known to take a URL: SVG's fill="url(…)", a future attribute…
        if "(" in value:
            yield from (f"{p} ({what})" for p in css_problems(value, own_host, sheet=False))
        candidates = [c for c in re.split(r"[\s,;]+", value) if URL_LIKE.match(clean_url(c))]
    else:
        return
    for candidate in candidates:
        problem = url_problem(candidate, own_host)
        if problem:
            yield f"{problem} ({what})"


def element_problems(namespace: str | None, element: str, attributes: dict[str, str], own_host: str, *,
                     scripts: bool) -> Iterator[str]:
    """What one element would make the browser load or run, by its name and attributes
    (``{namespace}name`` keys as html5lib and ElementTree give them)."""
    if namespace not in RENDERED:
        return
    local = {key.rsplit("}", 1)[-1]: value for key, value in attributes.items()
             if not key.startswith("{") or key.startswith(f"{{{XLINK}}}")}
    if element == "script" and not scripts:
        yield "runs a script (<script>)"
        return
    if namespace in (HTML, None):
        if element in EMBEDDING and not scripts:
            yield f"embeds another document (<{element}>)"
            return
        if element == "base":
            yield "moves every relative URL of the page (<base>)"
        if element == "meta" and "http-equiv" in local:
            equiv = local["http-equiv"].strip().lower()
            if not scripts or equiv == "refresh":
                yield f"acts on the whole page (<meta http-equiv={equiv}>)"
    rels = set(local.get("rel", "").lower().split()) if element == "link" else set()
    for name, value in local.items():
        yield from attribute_problems(element, name.lower(), value, own_host, rels=rels, scripts=scripts)


def tree_problems(root, own_host: str, scripts: bool) -> list[str]:
    """Every problem of an element tree (html5lib's or ElementTree's)."""
    found = []
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue  # a comment or processing instruction
        namespace, _, element = node.tag[1:].partition("}") if node.tag.startswith("{") else (None, "", node.tag)
        found += element_problems(namespace, element, dict(node.attrib), own_host, scripts=scripts)
        if element == "style" and namespace in (HTML, SVG) and node.text:
            found += [f"{p} (<style>)" for p in css_problems(node.text, own_host, sheet=True)]
    return found


def html_problems(text: str, own_host: str = "") -> list[str]:
    """What an output's HTML would make the page load or run, parsed as the body of a page parses it."""
    import html5lib

    return tree_problems(html5lib.parseFragment(text, container="div"), own_host, scripts=False)


def svg_problems(text: str, own_host: str = "") -> list[str]:
    """What an SVG image would load or run when opened on its own (its file is published):
    parsed as XML, as the browser parses it, entities expanded; as HTML where it is not
    well-formed (the browser then shows an error, but a mistake on the safe side costs nothing)."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return html_problems(text, own_host)
    return tree_problems(root, own_host, scripts=False)


def markdown_problems(text: str, own_host: str = "") -> list[str]:
    """What a markdown output would: rendered to HTML by myst's parser, as the page renders it.

    A MyST directive or role in an output is refused: it is book source, which can include
    files, raw HTML or images that only the page's build would see."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    parser = create_md_parser(MdParserConfig(enable_extensions={"colon_fence", "deflist"}), RendererHTML)
    found = []
    tokens = parser.parse(text)
    for token in tokens:
        for t in [token, *(token.children or [])]:
            if t.type in ("fence", "colon_fence") and t.info.strip().startswith("{"):
                found.append(f"uses the MyST directive {t.info.split()[0]}")
            elif t.type == "myst_role":
                found.append(f"uses the MyST role {{{t.meta.get('name', '')}}}")
    return found + html_problems(parser.renderer.render(tokens, parser.options, {}), own_host)


GLUED = "application/papermill.record/"  # myst-nb's glue: the MIME type it stores, prefixed


def output_problems(mime_type: str, data, own_host: str = "", mathjax: str = "") -> list[str]:
    """What one MIME type of an output would make the page load or run.

    ``mathjax``: the address MathJax is loaded from, which a LaTeX output makes the page load."""
    mime_type = mime_type.removeprefix(GLUED)
    text = data if isinstance(data, str) else "".join(data) if isinstance(data, list) else json.dumps(data)
    if "javascript" in mime_type or "ecmascript" in mime_type:
        return ["runs a script"]
    if "jupyter.widget" in mime_type:
        return ["is an interactive widget, which runs scripts"]
    if mime_type == "text/html":
        return html_problems(text, own_host)
    if mime_type == "image/svg+xml":
        return svg_problems(text, own_host)
    if mime_type == "text/markdown":
        return markdown_problems(text, own_host)
    if mime_type == "text/latex" and mathjax:
        problem = url_problem(mathjax, own_host)
        return [f"is LaTeX, which makes the page load MathJax ({problem})"] if problem else []
    return []


def check_outputs(app: Sphinx, docname: str, notebook) -> int:
    """Warn about every output that would make its page load or run anything from
    another host (or run anything at all); count the outputs."""
    from ..execution.cell_checks import cell_line

    own_host = urlsplit(app.config.book_base_url).netloc
    mathjax = getattr(app.config, "mathjax_path", "") or ""
    problems = 0
    widgets = notebook.metadata.get("widgets")
    if widgets:
        problems += 1
        logger.warning("the page's cells left interactive widgets' state, which myst-nb shows with scripts "
                       "from another host; show data, not widgets", location=(docname, 1),
                       type="book", subtype="remote_output")
    code_cells = [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    for number, (index, cell) in enumerate(code_cells, start=1):
        for output in cell.get("outputs", []):
            for mime_type, data in (output.get("data") or {}).items():
                found = output_problems(mime_type, data, own_host, mathjax)
                if not found:
                    continue
                problems += 1
                more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
                logger.warning(
                    f"code cell {number}'s {mime_type.removeprefix(GLUED)} output {found[0]}{more}: an output "
                    "may load only from this site and run nothing; show data, not a web page",
                    location=(docname, cell_line(notebook, index)), type="book", subtype="remote_output")
    return problems


class ResourceFinder(HTMLParser):
    """The site's pages, read fast (html.parser) by the same rules; the site's own scripts run."""

    def __init__(self, own_host: str) -> None:
        super().__init__(convert_charrefs=True)
        self.own_host = own_host
        self.found: list[str] = []
        self._in_style = self._in_script = False

    def handle_starttag(self, tag, attrs):
        values = {name: value or "" for name, value in attrs}
        # html.parser keeps "xlink:href" whole: the browser reads it as href in the XLink namespace.
        values = {name.removeprefix("xlink:"): value for name, value in values.items()}
        self.found += element_problems(None, tag, values, self.own_host, scripts=True)
        if "srcdoc" in values:  # a whole document, which the frame loads as it would any other
            self._markup(values["srcdoc"])
        self._in_style, self._in_script = tag == "style", tag == "script"

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self._in_style = self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.found += code_problems(data, self.own_host, "<script>")
        elif self._in_style:
            # Inside an SVG's <style>, a CDATA section's text is the sheet; html.parser keeps the markers.
            sheet = re.sub(r"<!\[CDATA\[|\]\]>", " ", data)
            self.found += [f"{p} (<style>)" for p in css_problems(sheet, self.own_host, sheet=True)]

    def handle_comment(self, data):
        # html.parser ends a comment at the first "-->" only; a browser also at "<!-->", "<!--->"
        # and "--!>", and reads what follows as markup: <!--> <img src=https://…> --> loads.
        if data.startswith(("->", ">")):
            self._markup(data[2:] if data.startswith("->") else data[1:])
        elif "--!>" in data:
            self._markup(data.partition("--!>")[2])

    def unknown_decl(self, data):
        # <![CDATA[…]]> outside SVG and MathML is a comment to a browser, which ends at the first ">".
        if data.startswith("CDATA[") and ">" in data:
            self._markup(data.partition(">")[2])

    def _markup(self, text: str) -> None:
        finder = ResourceFinder(self.own_host)
        finder.feed(text)
        finder.close()
        self.found += finder.found


def remote_loads(path: Path, own_host: str = "") -> list[str]:
    """What an html, css or svg file of the site would load from another host (an SVG is
    published as a file of its own, which a reader can open)."""
    text = path.read_text(encoding="utf8", errors="replace")
    kind = path.suffix.lower()  # a server types pic.SVG as it types pic.svg
    if kind == ".css":
        return list(css_problems(text, own_host, sheet=True))
    if kind == ".svg":
        return svg_problems(text, own_host)
    finder = ResourceFinder(own_host)
    finder.feed(text)
    finder.close()
    return finder.found


def check_site(outdir: Path, own_host: str = "", known_clean: dict | None = None,
               shared: Path | None = None, rules: str = "") -> list[tuple[str, str]]:
    """(file relative to outdir, problem) for every remote load in a built site.

    ``known_clean`` maps files found clean before to the digest of their contents; those
    are skipped while unchanged (Sphinx copies the static files again at every build, and
    first_paint rewrites pages, with the same bytes), and the map is updated in place.
    ``shared``, a folder that other builds' checks use too, keeps one empty file per clean
    content, named by the digest of ``rules``, the host, the kind of file and its bytes: a
    verdict depends on nothing else, and every new build folder copies the same theme sheets
    (tokenizing them was a third of a small book's checks after the build).
    """
    problems = []
    known_clean = {} if known_clean is None else known_clean
    for path in sorted(outdir.rglob("*")):
        kind = path.suffix.lower()  # a server types pic.SVG as it types pic.svg
        if kind in (".html", ".css", ".svg") and path.is_file():
            rel = path.relative_to(outdir).as_posix()
            data = path.read_bytes()
            stamp = hashlib.sha256(data).hexdigest()
            if known_clean.get(rel) == stamp:
                continue
            marker = None
            if shared is not None:
                key = hashlib.sha256(f"{rules}\0{own_host}\0{kind}\0".encode() + data)
                marker = shared / key.hexdigest()
                if marker.is_file():
                    known_clean[rel] = stamp
                    continue
            found = [(rel, problem) for problem in remote_loads(path, own_host)]
            if found:
                known_clean.pop(rel, None)
            else:
                known_clean[rel] = stamp
                keep_in_store(marker, b"")
            problems += found
    return problems


def check_build(app: Sphinx) -> None:
    own_host = urlsplit(app.config.book_base_url).netloc
    outdir = Path(app.outdir)
    # Scanning every page takes longer than a build that changed nothing; a page
    # is scanned again when it is rewritten, and until it is clean.
    # A verdict holds for the rules that gave it: the record names this module's digest, and
    # another version of the rules scans every file again.
    # Clean contents found by other builds are kept beside the trimmed sheets: the same store.
    import platform

    import html5lib
    import tinycss2

    record = Path(app.doctreedir) / f"book-offline-clean-{own_host or 'relative'}.json"
    # The rules: this module, and the parsers it reads with (html.parser and ElementTree are
    # Python's own).
    parsers = f"{tinycss2.__version__} {html5lib.__version__} {platform.python_version()}"
    rules = hashlib.sha256(Path(__file__).read_bytes() + parsers.encode()).hexdigest()
    with known_clean(record, rules) as clean:
        problems = check_site(outdir, own_host, clean, build_store(app.config.book_cache_root) / "offline-clean",
                              rules)
    for rel, problem in problems:
        logger.warning(
            f"{outdir.name}/{rel} {problem}: the site loads nothing from another host, and works offline",
            type="book", subtype="offline",
        )



def check_prose(app: Sphinx, doctree) -> None:
    """Raw HTML in a page's prose, by the rules of an output: it runs nothing (no script, no
    ``on*`` handler, no frame) and loads nothing from another host. The site's scan lets the
    site's own scripts run, and reads pages with html.parser, which ends a script where a
    browser does not (``</script x>``); obfuscated code (``\\/\\/``, ``atob``) defeats any
    reading of a script's URLs. Outputs are checked as they are executed (check_outputs)."""
    from docutils import nodes

    for node in doctree.findall(nodes.raw):
        if "html" not in node.get("format", "").split():
            continue
        parent = node.parent
        while parent is not None and "cell_output" not in parent.get("classes", []):
            parent = parent.parent
        if parent is not None:
            continue
        for problem in dict.fromkeys(html_problems(node.astext(), urlsplit(app.config.book_base_url).netloc)):
            logger.warning(f"the page's raw HTML {problem}: prose runs nothing and loads nothing from another "
                           "host", location=node, type="book", subtype="offline")


def setup(app: Sphinx) -> None:
    app.connect("doctree-read", check_prose)
