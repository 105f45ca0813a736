"""Every place where the book leans on another project's internals, or on a copy of its files.

Each entry says where, why, and when it can go. :func:`problems` checks that every
internal name still exists (a method, or an attribute that the class's own code sets on
its instances), that a function we call, override or replace still takes the
parameters we wrote against (its signature without type annotations), and that every
copied file is still the version we copied (by digest), so that an upgrade that moves
one fails ``tests/test_upstream.py`` with the entry's name, instead of quietly breaking
a page.

    python -m book_extensions upstream     # list them, and what has changed
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

Pinned = tuple[str, str, str]  # (package, file inside it, sha256 prefix of the version we wrote against)


@dataclass(frozen=True)
class Workaround:
    """One root cause: where, why, until when; with every internal name and file it involves.

    ``internal`` is one "module:attribute.attribute" that is not public API, or a tuple of
    them; ``signature`` (as :func:`parameters` writes it, for one we call, override or
    replace; "" for one we do not) one string, or a tuple as long as ``internal``'s.
    ``copied`` (files we copied) and ``read`` (files whose contents we rely on) are one
    :data:`Pinned` each, or a tuple of them.
    """

    where: str  # our file(s), ", "-separated
    why: str
    until: str  # when it can go
    internal: str | tuple[str, ...] = ""
    signature: str | tuple[str, ...] = ""
    copied: Pinned | tuple[Pinned, ...] = ()
    read: Pinned | tuple[Pinned, ...] = ()

    def __post_init__(self) -> None:
        if len(self.signatures) != len(self.internals):
            raise ValueError(f"{self.where}: one signature per internal name")

    @property
    def internals(self) -> tuple[str, ...]:
        return (self.internal,) if isinstance(self.internal, str) and self.internal else tuple(self.internal)

    @property
    def signatures(self) -> tuple[str, ...]:
        if isinstance(self.signature, str):  # "" for each internal, or the signature of the one
            return (self.signature,) if self.signature else ("",) * len(self.internals)
        return self.signature

    @property
    def copies(self) -> tuple[Pinned, ...]:
        return pinned(self.copied)

    @property
    def reads(self) -> tuple[Pinned, ...]:
        return pinned(self.read)


def pinned(value: Pinned | tuple[Pinned, ...]) -> tuple[Pinned, ...]:
    return (value,) if value and isinstance(value[0], str) else tuple(value)


WORKAROUNDS = [
    Workaround(
        "book_extensions/execution/runner.py",
        "replaces myst-nb's client for the 'cache' execution mode (no setting selects another): "
        "TCP port races between parallel kernels, a dead kernel crashing the build, pages run beside "
        "their sources, jupyter-cache's record trimming racing between parallel readers, UTC read as local",
        "myst-nb and jupyter-cache handle these, or let a project choose its client",
        internal="myst_nb.sphinx_:create_client",
        signature="(notebook, source, nb_config, logger, read_fmt=None)",
    ),
    Workaround(
        "book_extensions/kernel/startup.py",
        "ipykernel's private flush interval is raised so that what a cell prints arrives in one "
        "chunk: chunking by timing made outputs differ between runs, and no setting changes it "
        "(OutStream.flush_interval is an undocumented class attribute)",
        "ipykernel can be told to flush only when a cell ends",
        internal="ipykernel.iostream:OutStream.flush_interval",
    ),
    Workaround(
        "book_extensions/static/book.js",
        "sphinx-copybutton's zh-CN 'copied' message ends in a half-width '!' (复制成功!); book.js "
        "corrects the script's message table and check icon, which are globals of copybutton.js: "
        "sphinx-copybutton has no setting for its messages",
        "sphinx-copybutton's zh-CN message is corrected upstream",
        copied=("sphinx_copybutton", "_static/copybutton.js_t", "27b279ec3a816003"),
    ),
    Workaround(
        "book_extensions/editions/offline_builders.py",
        "the offline editions unfold hidden cells by removing the 'hide_mode' that myst-nb's "
        "HideInputCells post-transform reads, just before it runs: no setting turns folding off "
        "for one builder",
        "myst-nb lets a builder opt out of folding cells",
        internal="myst_nb.sphinx_:HideInputCells",
    ),
    Workaround(
        "book_extensions/site/search.py",
        "Chinese search subclasses Sphinx's SearchChinese (undocumented; the documented base is "
        "SearchLanguage) to load the book's jieba dictionary only when a page needs it, where "
        "SearchChinese loads the dictionary it is given when it is made (0.6 s a build), and to keep "
        "one-letter Latin words",
        "Sphinx loads jieba lazily itself",
        internal="sphinx.search.zh:SearchChinese",
        signature="(options)",
    ),
    Workaround(
        "book_extensions/execution/runner.py",
        "jupyter-cache cannot remove a damaged record: it commits a record before writing its notebook, "
        "crashes on a record whose notebook is missing or truncated, and only its database helpers "
        "remove a record by hash and only a private method names the record's folder; drop() "
        "removes both, for a failed store (rolled back) and a damaged record found when reading",
        "jupyter-cache writes the notebook before committing the record, and treats a damaged record as missing",
        internal=("jupyter_cache.cache.main:JupyterCacheBase._get_notebook_path_cache",
                  "jupyter_cache.cache.db:NbCacheRecord.remove_records",
                  "jupyter_cache.cache.db:NbCacheRecord.record_from_hashkey"),
        signature=("(self, hashkey, raise_on_missing=False)", "(pks, db)", "(hashkey, db)"),
    ),
    Workaround(
        "book_extensions/site/search.py",
        "Sphinx's search does not expose a page's words: the html builder's indexer gets a feed that "
        "calls Sphinx's (a wrapper with the same parameters), then counts the page's words with the "
        "private word collector that feed itself uses, so the counts hold the words of the search "
        "index by construction; the pages in the index are read from its private _titles (a page "
        "without a title, or kept out of search, has none)",
        "Sphinx's search exposes the words of a page, or ranks results itself",
        internal=("sphinx.search:IndexBuilder._word_collector", "sphinx.search:IndexBuilder.feed",
                  "sphinx.search:IndexBuilder._titles"),
        signature=("(self, doctree)", "(self, docname, filename, title, doctree)", ""),
    ),
    Workaround(
        "book_extensions/templates/sbt-sidebar-nav.html, book_extensions/templates/toggle-primary-sidebar.html, "
        "book_extensions/templates/toggle-secondary-sidebar.html, book_extensions/templates/layout.html",
        "sphinx-book-theme 1.4.0 writes these strings as literals, which no setting or catalog translates: "
        "the sidebar's aria-label and the two sidebar buttons' tooltips (templates copied, the strings "
        "made translatable), and the print-only table of contents' aria-label=\"Page\" (layout.html's "
        "docs_body replaces it in the theme's own)",
        "sphinx-book-theme translates them",
        copied=(("sphinx_book_theme", "theme/sphinx_book_theme/components/sbt-sidebar-nav.html", "38342bd744042ee1"),
                ("sphinx_book_theme", "theme/sphinx_book_theme/components/toggle-primary-sidebar.html",
                 "316c98ec6677c656"),
                ("sphinx_book_theme", "theme/sphinx_book_theme/components/toggle-secondary-sidebar.html",
                 "0cf39e5b61b02a71")),
        read=("sphinx_book_theme", "theme/sphinx_book_theme/layout.html", "2cd2fbbe2caedf3a"),
    ),
    Workaround(
        "book_extensions/templates/layout.html",
        "its extrahead block repeats pydata-sphinx-theme's without the search scripts and the search "
        "index, which the theme loads on every page for search-as-you-type (off in the book): the block "
        "writes them as literals, with no setting to leave them out",
        "pydata-sphinx-theme loads them only where search-as-you-type is on",
        copied=("pydata_sphinx_theme", "theme/pydata_sphinx_theme/layout.html", "1f98508aa73a49d0"),
    ),
    Workaround(
        "book_extensions/templates/layout.html, book_extensions/templates/search.html",
        "the book's <title> form: layout.html's htmltitle block replaces Sphinx's, whose <title> repeats "
        "the site's title on a page of the same title (the home page) and which the search page writes "
        "with another separator; search.html's replaces pydata-sphinx-theme's \"Search - <site>\": "
        "neither has a setting for the <title>'s form",
        "never: the title's form is the book's",
        copied=(("sphinx", "themes/basic/layout.html", "f1a2b815cb29544b"),
                ("pydata_sphinx_theme", "theme/pydata_sphinx_theme/search.html", "098d19aa34f7874c")),
    ),
    Workaround(
        "book_extensions/templates/layout.html",
        "its css block resolves the theme's \"auto\" mode to light or dark as pydata-sphinx-theme.js "
        "does when it runs: with the head's scripts deferred (site/first_paint.py) the page paints before "
        "it, and its colours and code borders exist for light and dark only (a reflow, CLS 0.26); "
        "the theme has no setting for an inline head script",
        "the theme resolves the mode in its own inline head script",
        read=("pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/scripts/pydata-sphinx-theme.js",
              "73b151b7df2d9239"),
    ),
    Workaround(
        "book_extensions/site/first_paint.py",
        "documentation_options.js is inlined rather than deferred: pydata-sphinx-theme's layout assigns "
        "to DOCUMENTATION_OPTIONS in inline head scripts, which cannot wait for a deferred one",
        "Sphinx and the theme load their scripts deferred themselves",
        read=("sphinx", "themes/basic/static/documentation_options.js.jinja", "ec5866733c7f79ad"),
    ),
    Workaround(
        "book_extensions/site/readable_layout.py",
        "every HTML code block goes through Sphinx's own visit_literal_block/depart_literal_block, "
        "then the printed text it wrote gets break opportunities (<wbr>) between its tokens",
        "never: Sphinx has no hook between highlighting a block and writing it",
        internal="sphinx.writers.html5:HTML5Translator.visit_literal_block",
        signature="(self, node)",
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
        "book_extensions/site/asset_trimming.py",
        "myst-nb copies its stylesheet at build-finished without overwriting a changed copy (no setting "
        "makes it), so the trimmed copy of the last build is removed when a build starts",
        "myst-nb copies its stylesheet as Sphinx copies the themes' (force=True)",
        internal="myst_nb.sphinx_ext:add_global_html_resources",
        signature="(app, exception)",
    ),
    Workaround(
        "book_extensions/site/asset_trimming.py",
        "RUNTIME_CLASSES lists the classes that bootstrap.js, pydata-sphinx-theme.js, "
        "sphinx-book-theme.js, copybutton.js, sphinx_highlight.js and searchtools.js add at run time, "
        "which no built page holds: the stylesheets keep their rules; the scripts declare nowhere "
        "which classes they add",
        "never: a script that changes may add other classes",
        read=(("pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/scripts/bootstrap.js", "75d931f3e2c5dff5"),
              ("pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/scripts/pydata-sphinx-theme.js",
               "73b151b7df2d9239"),
              ("sphinx_book_theme", "theme/sphinx_book_theme/static/scripts/sphinx-book-theme.js",
               "20f5c4379fa2fa1a"),
              ("sphinx_copybutton", "_static/copybutton.js_t", "27b279ec3a816003"),
              ("sphinx", "themes/basic/static/sphinx_highlight.js", "c551409f6bae30d6"),
              ("sphinx", "themes/basic/static/searchtools.js", "954625d140412a9d")),
    ),
    Workaround(
        "book_extensions/execution/changed_pages.py",
        "which pages to read again is decided by content: a page's dependencies (includes, images), "
        "which Sphinx notes through the public note_dependency but keeps in an undocumented mapping, "
        "are digested as they were before the build read them; Sphinx compares them by time only",
        "Sphinx decides by content, or documents a way to read a page's dependencies",
        internal="sphinx.environment:BuildEnvironment.dependencies",
    ),
]


def resolve(internal: str) -> object:
    """The object an internal names; None for an attribute that the class's own code sets on
    its instances (``self.<name> =``), which no class attribute shows."""
    module, _, attributes = internal.partition(":")
    found: object = importlib.import_module(module)
    names = attributes.split(".")
    for number, name in enumerate(names):
        try:
            found = getattr(found, name)
        except AttributeError:
            last = number == len(names) - 1
            if last and inspect.isclass(found) and re.search(
                    rf"\bself\.{re.escape(name)}\s*[:=]", inspect.getsource(found)):
                return None
            raise
    return found


def parameters(function: object) -> str:
    """A callable's parameters (names, kinds, defaults) without type annotations: what a
    caller or an override depends on; an annotation may be reworded without changing them."""
    signature = inspect.signature(function)
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=bare, return_annotation=inspect.Signature.empty))


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
        for name, signature in zip(item.internals, item.signatures, strict=True):
            try:
                internal = resolve(name)
            except (ImportError, AttributeError) as error:
                found.append(f"{item.where}: {name} is gone ({error}); {item.why}")
                continue
            now = (parameters(internal) if callable(internal) else "nothing callable") if signature else ""
            if now != signature:
                found.append(f"{item.where}: {name} takes {now} now, not {signature}: "
                             "check our code against it, then update the signature in book_extensions/upstream.py")
        # A copied file is merged again; a read one is checked against what we rely on.
        for files, verb, then in ((item.copies, "copied", "merge the change into our copy"),
                                  (item.reads, "read", f"{item.why}; check that")):
            for package, path, sha in files:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions upstream", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Exit 1 when an entry has moved (tests/test_upstream.py fails then too).")
    parser.parse_args(argv)
    for item in WORKAROUNDS:
        print(f"- {item.where}: {item.why}.\n  Until: {item.until}.")
    found = problems()
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    return 1 if found else 0
