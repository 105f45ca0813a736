"""What makes the site findable and shareable.

- a Content-Security-Policy on every page of the site (and the root's index and 404): the
  browser loads, runs and sends nothing but this site's files, whatever a page holds
  (:mod:`..checks.remote_loads` refuses such pages first, naming the cell or file);
- Open Graph tags on every page read from a source (title, type, the page's absolute URL
  when ``book_base_url`` is set and none without it, site name, description, locale);
- only the theme's message catalogs of the language built;
- in every page's footer, in the reader's language: the licences (text CC BY-SA 4.0,
  code MIT-0; see LICENSE) and, when ``book_repository`` is set, links to report a
  mistake on the page and to edit its source;
- beside the doctrees, this language's manifest (base URL, translated strings), from
  which the build driver writes the site root once every language is built
  (:mod:`.root_files`: language chooser, 404, robots.txt, sitemap.xml).
"""

from __future__ import annotations

import json
import re
import shutil
from html import escape, unescape
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from ..configuration.languages import current_language
from ..configuration.messages import message
from .device_page import cuda_recorded

LICENCES = {
    "text": ("CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0/"),
    "code": ("MIT-0", "https://spdx.org/licenses/MIT-0.html"),
}


# What the browser may load on the site's pages: only this site's files, and the data:
# images and fonts its stylesheets inline. Inline scripts and styles are the theme's and the
# book's own (first_paint inlines each page's CSS); no output has any (remote_loads). Neither
# frame-ancestors nor reporting works from a <meta>; a <meta> covers what comes after it, so
# it is the first tag after the charset and viewport. 'unsafe-eval': Sphinx's doctools.js
# compiles the catalog's plural rule with new Function() on a translated page (without it the
# Chinese search fails); evaluating code loads nothing from another host.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
                           "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
                           "object-src 'none'; base-uri 'self'; form-action 'self'")


def add_content_security_policy(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """The web site's pages only: the offline editions are files, printed or read offline."""
    if app.builder.name == "html":
        meta = f'<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_SECURITY_POLICY)}">\n'
        context["metatags"] = meta + context.get("metatags", "")


def description(doctree: nodes.document | None, limit: int = 200) -> str:
    """The page's first paragraph, as plain text, cut at a word."""
    if doctree is None:
        return ""
    texts = [re.sub(r"\s+", " ", p.astext()).strip() for p in doctree.findall(nodes.paragraph)
             if "book-provenance" not in p["classes"]]
    text = next((t for t in texts if len(t) > 40), texts[0] if texts else "")
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def add_description(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """The page's first real paragraph, as written (the Open Graph description too).

    Pages Sphinx generates (search, index) have no doctree, and a page may have no
    paragraph: they get the book's description (Lighthouse's SEO audit wants one on every page).
    """
    text = description(doctree) or message(app.config, "book_description")
    if text:
        context["book_description"] = text
        context["metatags"] = context.get("metatags", "") + f'<meta name="description" content="{escape(text)}">\n'


def title_text(title: str) -> str:
    """The page title Sphinx gives templates is HTML (inline code, entities): its text."""
    return unescape(re.sub(r"<[^>]*>", "", title))


def open_graph_tag(name: str, content: str) -> str:
    # The quote is escaped, as in every attribute; the rest as sphinxext-opengraph wrote them
    # (its tags, byte for byte, until issue 30 replaced it).
    return f'<meta property="{name}" content="{escape(content, quote=False).replace(chr(34), "&quot;")}" />'


def add_open_graph(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Open Graph's tags for a page read from a source (generated pages have none).

    Written here rather than by sphinxext-opengraph, which imports matplotlib (its social
    cards, off here) in every Sphinx start: 0.4 s of each build's start-up, for six tags.
    """
    if doctree is None or app.builder.name != "html":
        return
    language = current_language(app.config)
    base = app.config.book_base_url.rstrip("/")
    tags = {"og:title": title_text(context.get("title", "")), "og:type": "article"}
    if base:  # Open Graph needs an absolute URL, or none
        tags["og:url"] = f"{base}/{language.code}/{app.builder.get_target_uri(pagename)}"
    tags["og:site_name"] = app.config.project
    if context.get("book_description"):
        tags["og:description"] = context["book_description"]
    tags["og:locale"] = language.hreflang.replace("-", "_")
    context["metatags"] = context.get("metatags", "") + "\n".join(
        open_graph_tag(name, content) for name, content in tags.items()) + "\n"


def link(text: str, href: str) -> str:
    return f'<a href="{escape(href)}">{escape(text)}</a>'


def add_footer(app: Sphinx, pagename, templatename, context, doctree) -> None:
    from urllib.parse import quote, urlencode

    say = lambda key: message(app.config, key)  # noqa: E731
    licences = {kind: link(*LICENCES[kind]) for kind in LICENCES}
    footer = say("footer_licence").format(**licences)
    repository = app.config.book_repository
    if repository and doctree is not None:
        code = current_language(app.config).code
        source = f"docs/{code}/{pagename}.md"
        issue = urlencode({"title": f"{source}: ", "body": f"Page: {source}\n\n"}, quote_via=quote)
        footer += "<br/>" + " · ".join([
            link(say("footer_report"), f"https://github.com/{repository}/issues/new?{issue}"),
            link(say("footer_edit"), f"https://github.com/{repository}/edit/main/{quote(source)}"),
        ])
    context["book_footer"] = footer


def drop_unused_catalogs(outdir: Path, language: str) -> None:
    """sphinx-book-theme copies its catalogs for ~40 languages into every build."""
    locales = outdir / "_static" / "locales"
    if locales.is_dir():
        for folder in locales.iterdir():
            if folder.is_dir() and folder.name != language:
                shutil.rmtree(folder)


MANIFEST = "book-site.json"


def write_manifest(app: Sphinx) -> None:
    """What the site root needs from this language, beside its doctrees.

    The build driver assembles the root (language chooser, 404, robots.txt, sitemap)
    once every language is built: :mod:`.root_files`.
    """
    outdir = Path(app.outdir)
    drop_unused_catalogs(outdir, app.config.language)
    language = current_language(app.config)
    if outdir.name != language.code:
        return  # not the book's site layout (for example a one-off build)
    manifest = {
        "code": language.code,
        "base_url": app.config.book_base_url.rstrip("/"),
        "root_title": message(app.config, "root_title"),
        "not_found": message(app.config, "not_found"),
        "not_found_hint": message(app.config, "not_found_hint"),
        "not_found_link": message(app.config, "not_found_link"),
        # Pages left out of every table of contents, so out of the sitemap too: the device
        # page until a CUDA run is recorded (device_page.py).
        "hidden": [app.config.book_device_page] if app.config.book_device_page and not cuda_recorded(app) else [],
    }
    Path(app.doctreedir, MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n",
                                              encoding="utf8")


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", add_description, priority=400)
    app.connect("html-page-context", add_open_graph)
    app.connect("html-page-context", add_footer)
    app.connect("html-page-context", add_content_security_policy, priority=900)
