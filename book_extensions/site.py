"""What makes the site findable and shareable.

- Open Graph tags on every page, by sphinxext-opengraph (title, description, locale,
  and the page's absolute URL when ``book_base_url`` is set);
- only the theme's message catalogs of the language built;
- in every page's footer, in the reader's language: the licences (text CC BY-SA 4.0,
  code MIT-0; see LICENSE) and, when ``book_repository`` is set, links to report a
  mistake on the page and to edit its source;
- at the site root, beside the language chooser: a bilingual ``404.html``,
  ``robots.txt`` and, when ``book_base_url`` is set (a sitemap needs absolute
  URLs), ``sitemap.xml`` with every page's ``hreflang`` alternates.
"""

from __future__ import annotations

import re
import shutil
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from .languages import current_language, source_pages
from .messages import message

LICENCES = {
    "text": ("CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0/"),
    "code": ("MIT-0", "https://spdx.org/licenses/MIT-0.html"),
}


def description(doctree: nodes.document | None, limit: int = 200) -> str:
    """The page's first paragraph, as plain text, cut at a word."""
    if doctree is None:
        return ""
    texts = [re.sub(r"\s+", " ", p.astext()).strip() for p in doctree.findall(nodes.paragraph)
             if "book-provenance" not in p["classes"]]
    text = next((t for t in texts if len(t) > 40), texts[0] if texts else "")
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def add_description(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Runs before sphinxext-opengraph, which then uses it for og:description too.

    Its own description joins the page's text nodes with spaces ("没有 grad_fn 。")
    and runs into the provenance line; this is the first real paragraph, as written.
    """
    text = description(doctree)
    if text:
        context["meta"] = {**(context.get("meta") or {}), "og:description": text}
        context["metatags"] = context.get("metatags", "") + f'<meta name="description" content="{escape(text)}">\n'


def link(text: str, href: str) -> str:
    return f'<a href="{escape(href)}">{escape(text)}</a>'


def add_footer(app: Sphinx, pagename, templatename, context, doctree) -> None:
    from urllib.parse import quote, urlencode

    say = lambda key: message(key)  # noqa: E731
    licences = {kind: link(*LICENCES[kind]) for kind in LICENCES}
    footer = say("footer_licence").format(**licences)
    repository = app.config.book_repository
    if repository and doctree is not None:
        code = current_language(app.config)["code"]
        source = f"docs/{code}/{pagename}.md"
        issue = urlencode({"title": f"{source}: ", "body": f"Page: {source}\n\n"}, quote_via=quote)
        footer += "<br/>" + " · ".join([
            link(say("footer_report"), f"https://github.com/{repository}/issues/new?{issue}"),
            link(say("footer_edit"), f"https://github.com/{repository}/edit/main/{source}"),
        ])
    context["book_footer"] = footer


def configure_open_graph(app: Sphinx, config) -> None:
    """sphinxext-opengraph's settings for the language being built."""
    language = current_language(config)
    base = config.book_base_url.rstrip("/")
    config.ogp_site_url = f"{base}/{language['code']}/" if base else ""
    config.ogp_type = "article"
    # It would draw a PNG card per page with matplotlib: pages are text, and light.
    config.ogp_social_cards = {"enable": False}
    locale = language["hreflang"].replace("-", "_")
    config.ogp_custom_meta_tags = [*config.ogp_custom_meta_tags, f'<meta property="og:locale" content="{locale}" />']


NOT_FOUND = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>404 · {title}</title>
</head>
<body>
{sections}
</body>
</html>
"""
NOT_FOUND_TEXT = {
    "en": ("This page does not exist.", "Go to the start of the book"),
    "zh_CN": ("没有这个页面。", "回到本书首页"),
}


def sitemap(base: str, languages: list[dict], docs: Path, suffixes) -> str:
    by_language = {lang["code"]: set(source_pages(docs / lang["code"], suffixes)) for lang in languages}
    entries = []
    for lang in languages:
        for page in sorted(by_language[lang["code"]]):
            links = [(other["hreflang"], f"{base}/{other['code']}/{page}.html")
                     for other in languages if page in by_language[other["code"]]]
            links.append(("x-default", f"{base}/{languages[0]['code']}/{page}.html"))
            alternates = "".join(
                f'\n    <xhtml:link rel="alternate" hreflang="{h}" href="{escape(u)}"/>' for h, u in links)
            entries.append(f"  <url>\n    <loc>{escape(base)}/{lang['code']}/{page}.html</loc>{alternates}\n  </url>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
            'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n' + "\n".join(entries) + "\n</urlset>\n")


def drop_unused_catalogs(outdir: Path, language: str) -> None:
    """sphinx-book-theme copies its catalogs for ~40 languages into every build."""
    locales = outdir / "_static" / "locales"
    if locales.is_dir():
        for folder in locales.iterdir():
            if folder.is_dir() and folder.name != language:
                shutil.rmtree(folder)


def write_site_files(app: Sphinx, exception: Exception | None) -> None:
    if exception or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    drop_unused_catalogs(outdir, app.config.language)
    languages = app.config.book_languages
    if outdir.name != current_language(app.config)["code"]:
        return  # not the book's site layout
    root = outdir.parent
    # A 404 page answers for any missing path, so its links cannot be relative.
    base = app.config.book_base_url.rstrip("/")
    sections = "\n".join(
        f'<section lang="{lang["hreflang"]}"><h1>{NOT_FOUND_TEXT[lang["sphinx"]][0]}</h1>'
        f'<p><a href="{base}/{lang["code"]}/index.html">{NOT_FOUND_TEXT[lang["sphinx"]][1]}</a></p></section>'
        for lang in languages
    )
    (root / "404.html").write_text(
        NOT_FOUND.format(lang=languages[0]["hreflang"], title=escape(languages[0]["project"]),
                         sections=sections), encoding="utf8")
    robots = "User-agent: *\nAllow: /\n" + (f"Sitemap: {base}/sitemap.xml\n" if base else "")
    (root / "robots.txt").write_text(robots, encoding="utf8")
    if base:
        docs = Path(app.srcdir).parent
        (root / "sitemap.xml").write_text(
            sitemap(base, languages, docs, app.config.source_suffix), encoding="utf8")


def setup(app: Sphinx) -> None:
    app.setup_extension("sphinxext.opengraph")
    app.connect("config-inited", configure_open_graph)
    app.connect("html-page-context", add_description, priority=400)
    app.connect("html-page-context", add_footer)
    app.connect("build-finished", write_site_files)
