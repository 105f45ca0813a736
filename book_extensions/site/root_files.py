"""The site root: one folder per language, and around them what belongs to the whole site.

    index.html    sends readers to the language their browser prefers (a list without script);
                  with book_base_url, hreflang links to each language's start (absolute)
    404.html      in every language, with absolute links (it answers for any missing path)
    robots.txt    and, when book_base_url is set, sitemap.xml with every page's hreflang alternates
                  (percent-encoded URLs), less the pages a language hides (the device page
                  until a CUDA run is recorded)

Written once by the build driver after every language is built, from the manifest each
language's run leaves beside its doctrees (its base URL and translated strings: meta_and_footer.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..configuration.languages import source_pages
from ..configuration.settings import Language
from .meta_and_footer import CONTENT_SECURITY_POLICY, MANIFEST

# Each root file is a template of root_templates/, rendered with every value escaped for
# its format (HTML and XML; robots.txt is plain text).
TEMPLATES = Environment(loader=FileSystemLoader(Path(__file__).with_name("root_templates")),
                        autoescape=select_autoescape(["html", "xml"]), keep_trailing_newline=True)


def sitemap_urls(base: str, languages: list[Language], docs: Path, suffixes,
                 hidden: dict[str, list[str]] | None = None) -> list[dict]:
    """Every page readers can reach in every language, with its hreflang alternates (and
    x-default: the first language); not the pages a language's manifest says it hides."""
    hidden = hidden or {}
    by_language = {lang.code: set(source_pages(docs / lang.code, suffixes)) - set(hidden.get(lang.code, ()))
                   for lang in languages}

    def url(code: str, page: str) -> str:
        # A sitemap holds URLs: a page name with a space or Chinese characters is percent-encoded.
        return f"{base}/{quote(f'{code}/{page}.html')}"

    return [{"loc": url(lang.code, page),
             "alternates": [(other.hreflang, url(other.code, page))
                            for other in languages if page in by_language[other.code]]
             + [("x-default", url(languages[0].code, page))]}
            for lang in languages for page in sorted(by_language[lang.code])]


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
    base = manifests[languages[0].code]["base_url"]
    values = {"languages": languages, "manifests": manifests, "base": base,
              "title": manifests[languages[0].code]["root_title"], "policy": CONTENT_SECURITY_POLICY,
              "choices": [{"code": lang.code, "hreflang": lang.hreflang} for lang in languages]}
    for name in ("index.html", "404.html", "robots.txt"):
        (site / name).write_text(TEMPLATES.get_template(name).render(values), encoding="utf8")
    if base:
        urls = sitemap_urls(base, languages, docs, suffixes,
                            {code: manifest.get("hidden", []) for code, manifest in manifests.items()})
        (site / "sitemap.xml").write_text(TEMPLATES.get_template("sitemap.xml").render(urls=urls), encoding="utf8")
    else:
        (site / "sitemap.xml").unlink(missing_ok=True)  # from a build that had a base URL
    return None
