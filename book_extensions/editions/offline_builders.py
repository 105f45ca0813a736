"""The offline editions: the whole book as one PDF and one EPUB per language.

The PDF is Chromium's print of the ``singlehtml`` build, and the EPUB is Sphinx's
``epub`` builder (both made by :mod:`.make_editions`, from the HTML build's execution
cache). This module is what the Sphinx builds do for them:

- the EPUB's metadata (title, author, language, identifier) comes from the language's
  ``book_languages`` entry, as the site's does;
- the first page of an offline edition says what produced its outputs (torch, device,
  date), since a reader holding a PDF cannot open the provenance page;
- a page links its executed notebook only on the web (a relative link means nothing in
  a PDF), and links the offline editions of its language that exist when the site is
  built, and were built from the same sources; the site then carries them under ``offline/``.

An edition built from other sources (older pages, another branch) would be published as
if it were this book: :mod:`.make_editions` writes beside each edition a stamp, the
digest of the sources it was built from (:func:`sources_digest`), and an html build
whose sources digest to something else leaves that edition out and says so in one line.
That line is no warning: the edition is another command's output (``nox -s pdf``), the
site stays right without it, and a prose edit must not fail ``nox -s docs`` until the
PDF is printed again.
"""

from __future__ import annotations

import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms.post_transforms import SphinxPostTransform

from .. import build_state
from ..configuration import settings
from ..configuration.languages import current_language
from ..configuration.messages import message
from ..configuration.site_inputs import digest_of, edition_parts
from ..paths import write_atomically

OFFLINE_BUILDERS = ("singlehtml", "epub")
OFFLINE = "offline"  # in the site: <language>/offline/; in the build: <out>/<device>/offline/<language>/
KINDS = ("pdf", "epub")


def edition_file_name(slug: str, code: str, kind: str) -> str:
    """An edition's file name, in the build (:mod:`.make_editions` writes it) and in the site."""
    return f"{slug}-{code}.{kind}"


def file_name(config: Config, kind: str) -> str:
    return edition_file_name(config.book_slug, current_language(config).code, kind)


STAMP_SUFFIX = ".sources"  # <edition>.sources: the digest of the sources it was built from


def sources_digest(docs: Path, code: str, confdir: Path, device: str, config=None) -> str:
    """What one language's edition is made from (:func:`..configuration.site_inputs.edition_parts`: the inputs
    the html build digests, with that language's pages), and its language and device.
    ``config``: conf.py's settings, Sphinx's or (by default) :func:`..configuration.settings.read`'s."""
    config = settings.read(confdir) if config is None else config
    return digest_of({"language": code, "device": device, **edition_parts(docs, code, confdir, config)})


def stamp_of(edition: Path) -> Path:
    return edition.with_name(edition.name + STAMP_SUFFIX)


def write_stamp(edition: Path, digest: str) -> None:
    """Say what ``edition`` was built from; written after the edition, so that a run
    stopped between the two leaves an edition that no stamp vouches for."""
    write_atomically(stamp_of(edition), digest + "\n")


def device_folder(app: Sphinx) -> Path:
    """<out>/<device>: what the output's and the doctrees' folders have in common."""
    return Path(os.path.commonpath([Path(app.outdir).resolve(), Path(app.doctreedir).resolve()]))


def current_editions(app: Sphinx) -> list[Path]:
    """The offline editions of this language that the build folder holds, built from the
    sources this build reads; one line for each one left out."""
    code = current_language(app.config).code
    folder = device_folder(app) / OFFLINE / code
    held = [path for path in (folder / file_name(app.config, kind) for kind in KINDS) if path.is_file()]
    if not held:
        return []
    digest = sources_digest(Path(app.srcdir).parent, code, Path(app.confdir), app.config.book_device, app.config)
    current = []
    for path in held:
        try:
            built_from = stamp_of(path).read_text(encoding="utf8").strip()
        except OSError:
            built_from = None
        if built_from == digest:
            current.append(path)
            continue
        # Printed, not logged: -q hides Sphinx's info lines, and this is no warning (see above).
        print(f"{path.relative_to(folder.parent.parent).as_posix()} was not built from these sources"
              f"{'' if built_from else f' (it has no {stamp_of(path).name})'}: run `nox -s {path.suffix[1:]}` "
              "again; until then the site neither links nor carries it", file=sys.stderr, flush=True)
    return current


def find_current_editions(app: Sphinx) -> None:
    """Once per html build, before any page is read or written (parallel writers inherit it)."""
    if app.builder.name == "html":
        build_state.site(app.env).current_editions = current_editions(app)


def built_editions(app: Sphinx) -> list[Path]:
    """The offline editions of this language that the site links and carries."""
    return build_state.site(app.env).current_editions


def configure_epub(app: Sphinx, config: Config) -> None:
    language = current_language(config)
    config.epub_basename = file_name(config, "epub").removesuffix(".epub")
    config.epub_title = language.project
    config.epub_author = config.author
    config.epub_publisher = config.author
    config.epub_language = language.hreflang
    config.epub_copyright = config.copyright
    # The NCX table of contents repeats the identifier as an XML name: one name for both.
    config.epub_identifier = config.epub_uid = f"{config.book_slug}-{language.code}"
    config.epub_contributor = config.author
    config.epub_description = message(config, "book_description")
    config.epub_use_index = False  # the book has no index entries: an empty last page
    # Sphinx keeps the last build's info as .buildinfo.bak when the settings change.
    config.epub_exclude_files = [*config.epub_exclude_files, ".buildinfo.bak"]
    config.epub_show_urls = "no"  # a link's address printed after it, in every paragraph: noise
    if not config.version:  # EPUB 3 wants one; the book's is the day it was built
        config.version = datetime.now(UTC).strftime("%Y.%m.%d")


class download_links(nodes.Inline, nodes.Element):
    """Where a page's download links go; filled when the page is written."""


def fill_download_links(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    from ..execution.notebook_downloads import download_link

    for placeholder in list(doctree.findall(download_links)):
        if app.builder.name == "html":
            placeholder.replace_self(download_link(app, docname) + edition_links(app, docname))
        else:
            placeholder.parent.remove(placeholder)


def edition_links(app: Sphinx, docname: str) -> list[nodes.Node]:
    """" The whole book: PDF, EPUB." for the editions that exist."""
    editions = built_editions(app)
    if not editions:
        return []
    language = current_language(app.config)
    up = "../" * docname.count("/")
    links: list[nodes.Node] = [nodes.Text(language.sentence_separator + message(app.config, "whole_book"))]
    for index, path in enumerate(editions):
        if index:
            links.append(nodes.Text(language.list_separator))
        label = path.suffix[1:].upper()
        links.append(nodes.reference(label, label, refuri=f"{up}{OFFLINE}/{path.name}",
                                     classes=[f"book-{path.suffix[1:]}"]))
    links.append(nodes.Text(message(app.config, "full_stop")))
    return links


def title_page_provenance(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under the book's title in an offline edition: what produced its outputs, and when."""
    from ..site.device_page import device_name

    if app.builder.name not in OFFLINE_BUILDERS or docname != app.config.root_doc:
        return
    # The torch the pages' kernel imported, as the pages name it ({{ torch_version }}, set by
    # execution/page_execution.py): read from the settings, since that module imports this one.
    text = message(app.config, "edition_provenance").format(
        torch=app.config.myst_substitutions["torch_version"], device=device_name(app.config.book_device),
        date=datetime.now(UTC).strftime("%Y-%m-%d"))
    title = next(doctree.findall(nodes.title), None)
    note = nodes.paragraph(text, text, classes=["book-edition-provenance"])
    if title is not None:
        title.parent.insert(title.parent.index(title) + 1, note)
    else:
        doctree.insert(0, note)


def rewrite_when_editions_change(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Every page links the editions: when they appear or go, every page is written again."""
    if app.builder.name != "html":
        return []
    now = [path.name for path in built_editions(app)]
    state = build_state.site(env)
    before, state.editions = state.editions, now
    return sorted(env.found_docs - set(removed)) if now != before else []


def epub_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """An EPUB page is XHTML that an e-reader styles: none of the web page's head tags
    (hreflang links, Open Graph and description tags, written as HTML, not XML), and
    not myst-nb's stylesheet, which it copies only after the EPUB is packed."""
    if app.builder.name != "epub":
        return
    context["metatags"] = ""
    context["css_files"] = [css for css in context.get("css_files", [])
                            if not Path(str(getattr(css, "filename", css))).name.startswith("mystnb.")]


class OfflineLinks(SphinxPostTransform):
    """In an offline edition a link to a file of the web site (an example program to
    download, a figure's full-size image) leads nowhere: its text stays, the link goes."""

    default_priority = 900
    builders = OFFLINE_BUILDERS

    def run(self, **kwargs) -> None:
        from sphinx import addnodes

        for node in list(self.document.findall(addnodes.download_reference)):
            node.replace_self(node.children)
        for node in list(self.document.findall(nodes.reference)):
            if node.get("refuri", "").startswith(("_images/", "_downloads/")):
                node.replace_self(node.children)


class ShowHiddenCells(SphinxPostTransform):
    """Paper cannot unfold a cell: the offline editions show the code and outputs a web
    page folds away (myst-nb's ``hide-input`` and friends), and an EPUB stays valid
    (myst-nb's fold puts paragraphs in a ``<summary>``, which XHTML refuses). Runs just
    before myst-nb's HideInputCells, which folds only cells with a ``hide_mode``."""

    default_priority = 198
    builders = OFFLINE_BUILDERS

    def run(self, **kwargs) -> None:
        for node in self.document.findall(nodes.container):
            if node.get("nb_element") == "cell_code" and node.get("hide_mode"):
                del node["hide_mode"]


def offline_builder_settings(app: Sphinx) -> None:
    if app.builder.name in OFFLINE_BUILDERS:
        # A scaled figure links its full-size file: a link to the build machine in a PDF.
        app.config.html_scaled_image_link = False


def copy_editions_into_site(app: Sphinx) -> None:
    target = Path(app.outdir) / OFFLINE
    shutil.rmtree(target, ignore_errors=True)
    for path in built_editions(app):
        target.mkdir(exist_ok=True)
        shutil.copy2(path, target / path.name)


def setup(app: Sphinx) -> None:
    app.add_node(download_links)
    app.add_post_transform(ShowHiddenCells)
    app.add_post_transform(OfflineLinks)
    app.connect("config-inited", configure_epub)
    app.connect("builder-inited", offline_builder_settings)
    app.connect("builder-inited", find_current_editions)
    app.connect("doctree-resolved", fill_download_links)
    app.connect("doctree-resolved", title_page_provenance)
    app.connect("html-page-context", epub_page, priority=900)
    app.connect("env-get-outdated", rewrite_when_editions_change)
