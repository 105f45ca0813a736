"""Every place where the book leans on another project's internals, or on a copy of its files.

Each entry says where, why, and when it can go. :func:`problems` checks that every
internal name still exists and that every copied file is still the version we copied
(by digest), so that an upgrade that moves one fails ``tests/test_upstream.py`` with
the entry's name, instead of quietly breaking a page.

    python -m book_extensions.upstream     # list them, and what has changed
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Workaround:
    where: str  # our file
    why: str
    until: str  # when it can go
    internal: str = ""  # "module:attribute.attribute" that is not public API
    copied: tuple[str, str, str] = ()  # (package, file inside it, sha256 prefix of the copied version)
    read: tuple[str, str, str] = ()  # (package, file, sha256 prefix) of a file whose contents we rely on


WORKAROUNDS = [
    Workaround(
        "book_extensions/executor.py",
        "replaces myst-nb's client for the 'cache' execution mode (no setting selects another): "
        "TCP port races between parallel kernels, a dead kernel crashing the build, pages run beside "
        "their sources, jupyter-cache's record trimming racing between parallel readers, UTC read as local",
        "myst-nb and jupyter-cache handle these, or let a project choose its client",
        internal="myst_nb.sphinx_:create_client",
    ),
    Workaround(
        "book_extensions/executor.py",
        "the executor subclasses myst-nb's client base and fills its exec_metadata",
        "as above",
        internal="myst_nb.core.execute.base:NotebookClientBase.exec_metadata",
    ),
    Workaround(
        "book_extensions/execution.py, provenance.py",
        "each page's execution record (executed or cached, when, failure) is read from myst-nb's collector",
        "myst-nb documents a way to read it",
        internal="myst_nb.sphinx_:NbMetadataCollector.get_exec_data",
    ),
    Workaround(
        "book_extensions/execution.py",
        "per-language executed notebooks go beside the doctrees, not into the published site: "
        "myst-nb's config object is copied with another output_folder",
        "myst-nb gets a setting for where it writes jupyter_execute/",
        internal="myst_nb.core.config:NbParserConfig.copy",
    ),
    Workaround(
        "book_extensions/kernel/startup.py",
        "ipykernel's private flush interval is raised so that what a cell prints arrives in one "
        "chunk: chunking by timing made outputs differ between runs",
        "ipykernel can be told to flush only when a cell ends",
        internal="ipykernel.iostream:OutStream.flush_interval",
    ),
    Workaround(
        "book_extensions/messages.py",
        "the book's strings are looked up with a context (pgettext) in the translator Sphinx "
        "registered for the 'book' catalog; sphinx.locale offers no pgettext of its own",
        "sphinx.locale gets a context-aware lookup",
        internal="sphinx.locale:translators",
    ),
    Workaround(
        "book_extensions/languages.py",
        "the book's 'sphinx' catalog is put before Sphinx's own in its translator, to correct a few "
        "of Sphinx's translations (zh_CN 'Link to this heading' ends in a full stop); Sphinx only "
        "lets a project's catalog fill gaps",
        "Sphinx's zh_CN catalog is corrected, or Sphinx lets a project override its strings",
        internal="sphinx.locale:translators",
    ),
    Workaround(
        "book_extensions/static/book.js",
        "sphinx-copybutton's zh-CN 'copied' message ends in a half-width '!' (复制成功!); book.js "
        "corrects the script's message table and check icon, which are globals of copybutton.js",
        "sphinx-copybutton's zh-CN message is corrected upstream",
        copied=("sphinx_copybutton", "_static/copybutton.js_t", "27b279ec3a816003"),
    ),
    Workaround(
        "book_extensions/editions.py",
        "the offline editions unfold hidden cells by removing the 'hide_mode' that myst-nb's "
        "HideInputCells post-transform reads, just before it runs",
        "myst-nb lets a builder opt out of folding cells",
        internal="myst_nb.sphinx_:HideInputCells",
    ),
    Workaround(
        "book_extensions/search.py",
        "Chinese search subclasses Sphinx's SearchChinese to load jieba only when a page needs it",
        "Sphinx loads jieba lazily itself",
        internal="sphinx.search.zh:SearchChinese",
    ),
    Workaround(
        "book_extensions/templates/sbt-sidebar-nav.html",
        "the sidebar's aria-label made translatable",
        "sphinx-book-theme translates it",
        copied=("sphinx_book_theme", "theme/sphinx_book_theme/components/sbt-sidebar-nav.html", "38342bd744042ee1"),
    ),
    Workaround(
        "book_extensions/templates/toggle-primary-sidebar.html",
        "the button's tooltip made translatable",
        "sphinx-book-theme translates it",
        copied=("sphinx_book_theme", "theme/sphinx_book_theme/components/toggle-primary-sidebar.html",
                "316c98ec6677c656"),
    ),
    Workaround(
        "book_extensions/templates/toggle-secondary-sidebar.html",
        "the button's tooltip made translatable",
        "sphinx-book-theme translates it",
        copied=("sphinx_book_theme", "theme/sphinx_book_theme/components/toggle-secondary-sidebar.html",
                "0cf39e5b61b02a71"),
    ),
    Workaround(
        "book_extensions/templates/layout.html",
        "the print-only table of contents gets a translatable label: its docs_body block repeats "
        "sphinx-book-theme's",
        "sphinx-book-theme translates it",
        copied=("sphinx_book_theme", "theme/sphinx_book_theme/layout.html", "2cd2fbbe2caedf3a"),
    ),
    Workaround(
        "book_extensions/templates/layout.html",
        "the same block also repeats pydata-sphinx-theme's docs_body, one level up",
        "as above",
        copied=("pydata_sphinx_theme", "theme/pydata_sphinx_theme/layout.html", "1f98508aa73a49d0"),
    ),
    Workaround(
        "book_extensions/templates/layout.html",
        "its extrahead block repeats pydata-sphinx-theme's without the search scripts and the search "
        "index, which the theme loads on every page for search-as-you-type (off in the book)",
        "pydata-sphinx-theme loads them only where search-as-you-type is on",
        copied=("pydata_sphinx_theme", "theme/pydata_sphinx_theme/layout.html", "1f98508aa73a49d0"),
    ),
    Workaround(
        "book_extensions/layout.py",
        "every HTML code block goes through Sphinx's own visit_literal_block/depart_literal_block, "
        "then the printed text it wrote gets break opportunities (<wbr>) between its tokens",
        "never: Sphinx has no hook between highlighting a block and writing it",
        internal="sphinx.writers.html5:HTML5Translator.visit_literal_block",
    ),
    Workaround(
        "book_extensions/static/book-search.js",
        "replaces searchtools' Search.query and _performSearch, calls its _parseQuery and _finishSearch, "
        "and clears the sphinx_highlight_terms it stores, to rank with BM25, link each result to its "
        "section and highlight whole words",
        "never: Sphinx's search offers no hook for ranking or excerpts",
        read=("sphinx", "themes/basic/static/searchtools.js", "954625d140412a9d"),
    ),
    Workaround(
        "book_extensions/static/book.js",
        "a tap on an entry of the page-contents or chapter-list dialog lands where a direct link "
        "lands: the theme's close handler (added when the dialog opens) focuses the button that "
        "opened it, which scrolls the page back and leaves its tooltip shown",
        "the theme stops focusing the button after a link in the dialog is followed; "
        "tests/test_browser_reading.py shows when",
        read=("pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/scripts/pydata-sphinx-theme.js",
              "73b151b7df2d9239"),
    ),
    Workaround(
        "book_extensions/assets.py",
        "myst-nb copies its stylesheet at build-finished without overwriting a changed copy, so the "
        "trimmed copy of the last build is removed when a build starts",
        "myst-nb copies its stylesheet as Sphinx copies the themes' (force=True)",
        internal="myst_nb.sphinx_ext:add_global_html_resources",
    ),
    *(Workaround(
        "book_extensions/assets.py",
        f"RUNTIME_CLASSES lists the classes {name} adds at run time, which no built page holds: "
        "the stylesheets keep their rules",
        "never: a script that changes may add other classes",
        read=(package, path, sha),
    ) for name, package, path, sha in (
        ("bootstrap.js", "pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/scripts/bootstrap.js",
         "75d931f3e2c5dff5"),
        ("pydata-sphinx-theme.js", "pydata_sphinx_theme",
         "theme/pydata_sphinx_theme/static/scripts/pydata-sphinx-theme.js", "73b151b7df2d9239"),
        ("sphinx-book-theme.js", "sphinx_book_theme", "theme/sphinx_book_theme/static/scripts/sphinx-book-theme.js",
         "20f5c4379fa2fa1a"),
        ("copybutton.js", "sphinx_copybutton", "_static/copybutton.js_t", "27b279ec3a816003"),
        ("sphinx_highlight.js", "sphinx", "themes/basic/static/sphinx_highlight.js", "c551409f6bae30d6"),
        ("searchtools.js", "sphinx", "themes/basic/static/searchtools.js", "954625d140412a9d"),
    )),
]


def resolve(internal: str) -> object:
    module, _, attributes = internal.partition(":")
    found: object = importlib.import_module(module)
    for name in attributes.split("."):
        found = getattr(found, name)
    return found


def digest(package: str, path: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{package} is not installed")
    file = Path(next(iter(spec.submodule_search_locations))) / path
    return hashlib.sha256(file.read_bytes()).hexdigest()[: 16]


def problems(workarounds: list[Workaround] = WORKAROUNDS) -> list[str]:
    """One line per workaround whose upstream has moved."""
    found = []
    for item in workarounds:
        if item.internal:
            try:
                resolve(item.internal)
            except (ImportError, AttributeError) as error:
                found.append(f"{item.where}: {item.internal} is gone ({error}); {item.why}")
        # A copied file is merged again; a read one is checked against what we rely on.
        for pinned, verb, then in ((item.copied, "copied", "merge the change into our copy"),
                                   (item.read, "read", f"{item.why}; check that")):
            if not pinned:
                continue
            package, path, sha = pinned
            try:
                now = digest(package, path)
            except (FileNotFoundError, OSError) as error:
                found.append(f"{item.where}: {package}/{path} cannot be read ({error})")
                continue
            if now != sha:
                found.append(f"{item.where}: {package}/{path} changed since it was {verb} "
                             f"(sha256 {sha}…, now {now}…): {then}, "
                             "then update the digest in book_extensions/upstream.py")
    return found


def main() -> int:
    for item in WORKAROUNDS:
        print(f"- {item.where}: {item.why}.\n  Until: {item.until}.")
    found = problems()
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
