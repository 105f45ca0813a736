"""The site root: one folder per language, and around them what belongs to the whole site.

    index.html    sends readers to the language their browser prefers (a list without script);
                  with book_base_url, hreflang links to each language's start (absolute)
    404.html      in every language, with absolute links (it answers for any missing path)
    robots.txt    and, when book_base_url is set, sitemap.xml with every page's hreflang alternates
                  (percent-encoded URLs)

Written once by the build driver after every language is built, from the manifest each
language's run leaves beside its doctrees (its base URL and translated strings: meta_and_footer.py).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from urllib.parse import quote

from ..configuration.languages import source_pages
from ..configuration.settings import Language
from .meta_and_footer import MANIFEST

ROOT_PAGE = """<!DOCTYPE html>
<html lang="{default_lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{alternates}
<script>
// Send the visitor to the first language their browser prefers that the book has.
(function () {{
  var languages = {languages};
  var wanted = navigator.languages || [navigator.language || ""];
  for (var i = 0; i < wanted.length; i++) {{
    var tag = wanted[i].toLowerCase();
    for (var j = 0; j < languages.length; j++) {{
      var lang = languages[j];
      if (tag === lang.hreflang.toLowerCase() || tag.split("-")[0] === lang.hreflang.toLowerCase().split("-")[0]) {{
        window.location.replace(lang.code + "/index.html");
        return;
      }}
    }}
  }}
  window.location.replace(languages[0].code + "/index.html");
}})();
</script>
</head>
<body>
<h1>{title}</h1>
<ul>
{links}
</ul>
</body>
</html>
"""


NOT_FOUND = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>404 — {title}</title>
</head>
<body>
{sections}
</body>
</html>
"""


def sitemap(base: str, languages: list[Language], docs: Path, suffixes) -> str:
    by_language = {lang.code: set(source_pages(docs / lang.code, suffixes)) for lang in languages}
    def url(code: str, page: str) -> str:
        # A sitemap holds URLs: a page name with a space or Chinese characters is percent-encoded.
        return f"{base}/{quote(f'{code}/{page}.html')}"

    entries = []
    for lang in languages:
        for page in sorted(by_language[lang.code]):
            links = [(other.hreflang, url(other.code, page))
                     for other in languages if page in by_language[other.code]]
            links.append(("x-default", url(languages[0].code, page)))
            alternates = "".join(
                f'\n    <xhtml:link rel="alternate" hreflang="{h}" href="{escape(u)}"/>' for h, u in links)
            entries.append(f"  <url>\n    <loc>{escape(url(lang.code, page))}</loc>{alternates}\n  </url>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
            'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n' + "\n".join(entries) + "\n</urlset>\n")


ROOT_FILES = ("index.html", "404.html", "robots.txt", "sitemap.xml")


def write(site: Path, doctrees: Path, languages: list[Language], docs: Path, suffixes=(".md",)) -> str | None:
    """Write the root files into ``site``, or say why not (and leave no stale ones)."""
    manifests = {}
    for lang in languages:
        path = doctrees / lang.code / MANIFEST
        if path.is_file():
            manifests[lang.code] = json.loads(path.read_text(encoding="utf8"))
    missing = [lang.code for lang in languages if lang.code not in manifests]
    bases = {manifest["base_url"] for manifest in manifests.values()}
    problem = (f"it waits for: {', '.join(missing)}" if missing else
               "the languages were built with different book_base_url values; build them all again"
               if len(bases) > 1 else None)
    if problem:
        for name in ROOT_FILES:
            (site / name).unlink(missing_ok=True)
        return problem
    first = manifests[languages[0].code]
    base = first["base_url"]
    (site / "index.html").write_text(ROOT_PAGE.format(
        default_lang=languages[0].hreflang,
        title=escape(first["root_title"]),
        # Absolute, or none: search engines refuse a relative hreflang address.
        alternates="\n".join(
            f'<link rel="alternate" hreflang="{e.hreflang}" href="{escape(base)}/{e.code}/index.html">'
            for e in languages) if base else "",
        languages=json.dumps([{"code": e.code, "hreflang": e.hreflang} for e in languages]),
        links="\n".join(
            f'<li><a href="{e.code}/index.html" hreflang="{e.hreflang}" '
            f'lang="{e.hreflang}">{escape(e.name)}</a></li>' for e in languages),
    ), encoding="utf8")
    sections = "\n".join(
        f'<section lang="{lang.hreflang}"><h1>{escape(manifests[lang.code]["not_found"])}</h1>'
        f'<p><a href="{escape(base)}/{lang.code}/index.html">{escape(manifests[lang.code]["not_found_link"])}</a></p>'
        '</section>'
        for lang in languages
    )
    (site / "404.html").write_text(
        # One page for every language: its title names the book in each of them.
        NOT_FOUND.format(lang=languages[0].hreflang, title=" · ".join(escape(e.project) for e in languages),
                         sections=sections),
        encoding="utf8")
    robots = "User-agent: *\nAllow: /\n" + (f"Sitemap: {base}/sitemap.xml\n" if base else "")
    (site / "robots.txt").write_text(robots, encoding="utf8")
    if base:
        (site / "sitemap.xml").write_text(sitemap(base, languages, docs, suffixes), encoding="utf8")
    else:
        (site / "sitemap.xml").unlink(missing_ok=True)  # from a build that had a base URL
    return None
