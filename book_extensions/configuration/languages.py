"""One book, several languages: per-language settings and the links between them.

``book_languages`` in conf.py declares the languages (checked by :mod:`.settings`); each is
built separately from ``docs/<code>/`` into ``<site>/<code>/``. This module

- applies what depends on the language (project name, search, myst-nb prompts,
  the html ``lang`` attribute);
- gives every page, when ``book_base_url`` is set, ``<link rel="alternate" hreflang>``
  for each language plus ``x-default`` (absolute, percent-encoded addresses; none without
  a base URL, since search engines refuse relative ones), and a visible switch to the same
  page in the other languages (in the side bar and in the top bar);
- compiles the book's catalog of the theme's gaps for Sphinx (:mod:`.messages` reads its own strings).

The site's root page, which sends visitors to the language their browser prefers,
is written by the build driver once every language is built (:mod:`..site.root_files`).
"""

from __future__ import annotations

from dataclasses import asdict
from html import escape
from pathlib import Path
from urllib.parse import quote

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.util import logging

from .. import build_state
from ..paths import PACKAGE
from .messages import CATALOG, compiled_catalog, message
from .settings import Language

logger = logging.getLogger(__name__)



def current_language(config: Config) -> Language:
    """The language being built: the one whose Sphinx language this run builds."""
    for language in config.book_languages:
        if language.sphinx == config.language:
            return language
    known = ", ".join(language.sphinx for language in config.book_languages)
    raise ConfigError(f"language {config.language!r} is not in book_languages ({known})")


def configure_language(app: Sphinx, config: Config) -> None:
    language = current_language(config)
    srcdir = Path(app.srcdir)
    if srcdir.name != language.code:
        raise ConfigError(
            f"language {config.language!r} is built from docs/{language.code}/, not {srcdir}"
        )
    config.project = language.project
    if config.book_base_url:
        # Sphinx then writes each page's canonical URL.
        config.html_baseurl = f"{config.book_base_url.rstrip('/')}/{language.code}/"
    config.html_title = language.project
    config.templates_path = [*config.templates_path, str(PACKAGE / "templates")]
    config.html_static_path = [*config.html_static_path, str(PACKAGE / "static")]
    config.author = language.author
    config.copyright = config.copyright.replace("{author}", config.author)
    config.html_theme_options = {
        # The other languages in the top bar, beside the theme's buttons: reachable on
        # a phone without opening the site menu.
        "article_header_end": ["book-language-links.html", "article-header-buttons.html"],
        **config.html_theme_options,
        "search_bar_text": message(config, "search_placeholder"),
    }
    config.nb_code_prompt_show = message(config, "code_prompt_show")
    config.nb_code_prompt_hide = message(config, "code_prompt_hide")
    if not config.html_sidebars:
        config.html_sidebars = {"**": [
            "navbar-logo.html", "book-language-switch.html",
            "search-button-field.html", "sbt-sidebar-nav.html",
        ]}


def page_exists(srcdir: Path, pagename: str, suffixes) -> bool:
    return any((srcdir / f"{pagename}{suffix}").is_file() for suffix in suffixes)


def alternates(app: Sphinx, pagename: str) -> list[tuple[Language, str]]:
    """The same page in every language that has it: the language, and the page's address there."""
    config = app.config
    srcdir = Path(app.srcdir)
    to_root = "../" * (pagename.count("/") + 1)
    base = config.book_base_url.rstrip("/")
    generated = pagename in ("genindex", "search")
    result = []
    for language in config.book_languages:
        other_src = srcdir.parent / language.code
        if not generated and not page_exists(other_src, pagename, config.source_suffix):
            continue  # the parity check reports it
        path = quote(f"{language.code}/{pagename}.html")  # page names may hold spaces, or be Chinese
        result.append((language, f"{base}/{path}" if base else to_root + path))
    return result


def add_language_links(app: Sphinx, pagename, templatename, context, doctree) -> None:
    links = alternates(app, pagename)
    # hreflang links only with absolute addresses: search engines refuse relative ones
    # (Lighthouse: "Relative href value"). Without book_base_url a page has none; its
    # visible language switch (book_alternates) links relatively either way.
    if app.config.book_base_url:
        tags = [f'<link rel="alternate" hreflang="{language.hreflang}" href="{escape(href)}">'
                for language, href in links]
        default = next((href for language, href in links if language == app.config.book_languages[0]), None)
        if default:
            tags.append(f'<link rel="alternate" hreflang="x-default" href="{escape(default)}">')
        context["metatags"] = context.get("metatags", "") + "\n".join(tags) + "\n"
    # What the templates read of each: the language's fields, its href, and whether it is this one.
    here = current_language(app.config)
    context["book_alternates"] = [{**asdict(language), "href": href, "current": language == here}
                                  for language, href in links]
    context["book_switch_label"] = message(app.config, "switch_label")


def source_pages(folder: Path, suffixes) -> list[str]:
    """The page names (``detach``, ``sub/page``) of one language's source folder."""
    return sorted(p.relative_to(folder).with_suffix("").as_posix()
                  for suffix in suffixes for p in folder.rglob(f"*{suffix}"))


def pages_of_every_language(app: Sphinx) -> list[str]:
    docs = Path(app.srcdir).parent
    return sorted(f"{language.code}/{page}" for language in app.config.book_languages
                  for page in source_pages(docs / language.code, app.config.source_suffix))


def rewrite_when_other_languages_change(app: Sphinx, env, added, changed, removed) -> list[str]:
    # Each page links to its twins; when a language gains or loses a page, Sphinx
    # sees no change in this one, so its pages would keep stale links. (Sphinx saves
    # the environment only when it reads a page: hence "unknown" counts as changed.)
    now = pages_of_every_language(app)
    state = build_state.site(env)
    before, state.language_pages = state.language_pages, now
    return sorted(env.found_docs) if before != now else []


def compile_theme_catalogs(app: Sphinx) -> Path:
    """Compile the .po files of locale/ into the doctree folder and return it; but
    sphinx.po, which Sphinx compiles itself (conf.py's ``locale_dirs``), and book.po, which
    :mod:`.messages` reads itself."""
    target = Path(app.doctreedir) / "book-locale"
    for po in (PACKAGE / "locale").rglob("*.po"):
        if po.stem in ("sphinx", CATALOG):
            continue
        mo = target / po.relative_to(PACKAGE / "locale").with_suffix(".mo")
        # By content, not by time: a .po restored with an older time (cp -p, tar) still counts.
        compiled = compiled_catalog(po)
        if not mo.is_file() or mo.read_bytes() != compiled:
            mo.parent.mkdir(parents=True, exist_ok=True)
            mo.write_bytes(compiled)
    return target


def setup(app: Sphinx) -> None:
    # Registered now, before the theme registers its own catalogs, so that ours come first
    # for the theme's domain; Sphinx's own domain comes from conf.py's locale_dirs.
    catalogs = compile_theme_catalogs(app)
    app.add_message_catalog("booktheme", str(catalogs))
    app.connect("config-inited", configure_language)
    app.connect("html-page-context", add_language_links)
    app.connect("env-get-outdated", rewrite_when_other_languages_change)
    app.add_css_file("book.css")
    app.add_css_file("book-navigation.css")
    app.add_js_file("book.js", loading_method="defer")
