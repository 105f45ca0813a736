"""Every place where the book leans on another project's internals, or on a copy of its files.

A lean is what an upgrade of another project may break without breaking its documented
API: a private name, an undocumented attribute or behaviour (such as the order in which
it calls our override), a copied file, a file whose contents we rely on. Documented API
is none: Sphinx's events, template blocks (``htmltitle``, ``extrahead``...) and template
variables, the environment's documented attributes (:data:`DOCUMENTED_ENV`), a node of
the book's own with its visitors, a configuration value. Each entry says where, why no
public way exists, and when it can go; there are at most 15 (``tests/test_upstream.py``).

:func:`unlisted_leans` finds, in the package's source and the test suite's shared modules
(conftest.py and its helpers), the leans that no entry names: a
private attribute or module of another project, an undocumented attribute of Sphinx's
environment (one another extension sets, as ``env.mystnb_config``), another project's
module or class changed, a function put in place of an object's attribute, ``sys.modules``
changed, a class attribute of another project's class set in a subclass.

:func:`problems` checks that every internal name still exists (a method, or an attribute
that the class's own code sets on its instances), that a function we call, override or
replace still takes the parameters we wrote against (its signature without type
annotations), and that every copied or read file is still the version we wrote against
(by digest), so that an upgrade that moves one fails ``tests/test_upstream.py`` with the
entry's name, instead of quietly breaking a page.

    python -m book_extensions upstream     # list them, and what has changed
"""

from __future__ import annotations

import argparse
import ast
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
        "book_extensions/execution/runner.py",
        "CheckedClient puts the book's SIGINT/SIGTERM handlers in place of nbclient's by adding them in "
        "async_start_new_kernel, which nbclient's async_setup_kernel calls just after adding its own (it "
        "removes both when the page ends): nbclient's shut the kernel down and make an interrupted page an "
        "ordinary failing one. That order is nbclient's code, not its documentation, and no setting or hook "
        "comes between (on_notebook_start runs once the kernel answers: too late for a signal while it starts)",
        "nbclient lets a client choose what SIGINT and SIGTERM do while a page runs",
        internal=("nbclient.client:NotebookClient.async_setup_kernel",
                  "nbclient.client:NotebookClient.async_start_new_kernel"),
        signature=("(self, **kwargs)", "(self, **kwargs)"),
        read=("nbclient", "client.py", "5a61fded74a94fd0"),
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
        "one-letter Latin words. The subclass calls itself English (language_name): Sphinx 9.0 names "
        "the browser's stemmer '<language_name>Stemmer' but ships the English stemmer for Chinese, so "
        "'ChineseStemmer is not defined' stops every search (sphinx-doc/sphinx#14229); language_name "
        "is not among SearchLanguage's documented attributes, and no setting names the stemmer",
        "Sphinx loads jieba lazily and names the stemmer after the file it ships "
        "(sphinx-doc/sphinx#14416, merged after 9.0.4)",
        internal=("sphinx.search.zh:SearchChinese", "sphinx.search:SearchLanguage.language_name",
                  "sphinx.search:IndexBuilder.get_js_stemmer_code"),
        signature=("(options)", "", "(self)"),
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
        "without a title, or kept out of search, has none), a page an earlier build indexed is counted "
        "from its stored doctree (get_doctree), and the indexer is the html builder's (its indexer "
        "attribute; a builder without search has none): none of these is documented",
        "Sphinx's search exposes the words of a page, or ranks results itself",
        internal=("sphinx.search:IndexBuilder._word_collector", "sphinx.search:IndexBuilder.feed",
                  "sphinx.search:IndexBuilder._titles", "sphinx.builders.html:StandaloneHTMLBuilder.indexer",
                  "sphinx.environment:BuildEnvironment.get_doctree"),
        signature=("(self, doctree)", "(self, docname, filename, title, doctree)", "", "", "(self, docname)"),
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
        "book_extensions/static/book-search.js",
        "replaces searchtools' Search.query and _performSearch, calls its _parseQuery and _finishSearch, "
        "and clears the sphinx_highlight_terms it stores, to rank with BM25, link each result to its "
        "section and highlight whole words",
        "never: Sphinx's search offers no hook for ranking or excerpts",
        read=("sphinx", "themes/basic/static/searchtools.js", "954625d140412a9d"),
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
        "book_extensions/execution/changed_pages.py, book_extensions/checks/unique_names.py",
        "two attributes of the environment Sphinx does not document: which pages to read again is "
        "decided by content, and a page's dependencies (includes, images), which Sphinx notes through "
        "the public note_dependency but keeps in an undocumented mapping, are digested as they were "
        "before the build read them (Sphinx compares them by time only); and a label, term or object "
        "defined on two pages is refused under parallel reads too, from every domain's public "
        "get_objects(), the domains being reached through the undocumented domains attribute (Sphinx "
        "merges parallel readers' domain data without a check)",
        "Sphinx decides by content and checks duplicates when it merges parallel reads, or documents "
        "a page's dependencies and an environment's domains",
        internal=("sphinx.environment:BuildEnvironment.dependencies", "sphinx.environment:BuildEnvironment.domains"),
    ),
    Workaround(
        "tests/conftest.py",
        "pytest-xdist's loadgroup scheduler reads a test's group from the '@group' suffix of its node "
        "id, which pytest-xdist 3.8.0 writes to item._nodeid; pytest 9.2 no longer reads that (its ids "
        "are NodeId objects), so no group reached the scheduler and the tests sharing a fixture book "
        "ran on several workers. group_node_ids writes the suffix into the id pytest reads (item._id, "
        "through _pytest's NodeId.parse): neither pytest nor pytest-xdist has a public way to set it",
        "pytest-xdist sets the group on pytest 9.2's node ids (pytest-dev/pytest-xdist#1386)",
        internal=("_pytest.nodes:NodeId.parse", "_pytest.nodes:Node._id"),
        signature=("(nodeid)", ""),
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


# --- leans that no entry names ----------------------------------------------------------
#
# What the package reads or changes of another project's objects, found in its source; each must
# be named by an entry (one part of an entry's internal name), so that the list cannot leave one out.

# The documented attributes and methods of Sphinx's BuildEnvironment
# (https://www.sphinx-doc.org/en/master/extdev/envapi.html); the book's own are named book_*.
DOCUMENTED_ENV = {"app", "config", "project", "srcdir", "doctreedir", "events", "found_docs", "metadata",
                  "titles", "docname", "parser", "current_document", "doc2path", "relfn2path",
                  "note_dependency", "new_serialno", "note_reread"}
# Class attributes that a subclass is documented to set: a transform's default_priority
# (docutils), a post-transform's builders and formats (Sphinx's SphinxPostTransform), a
# directive's arguments and options (docutils' Directive), a search language's lang,
# stopwords and JavaScript code (Sphinx's SearchLanguage), a builder's name, format and
# epilog (Sphinx's Builder).
DOCUMENTED_OVERRIDES = {"default_priority", "builders", "formats", "has_content", "required_arguments",
                        "optional_arguments", "final_argument_whitespace", "option_spec", "lang", "stopwords",
                        "js_splitter_code", "js_stemmer_code", "name", "format", "epilog"}
# The standard library's documented names that start with an underscore.
DOCUMENTED_UNDERSCORED = {"os._exit"}
PACKAGE_NAME = __name__.partition(".")[0]


@dataclass(frozen=True)
class Lean:
    path: str
    line: int
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} ({self.name}), which no entry of book_extensions/upstream.py names"


def third_party_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it names ("module" or "module:attribute") for every import of another
    project (neither the standard library nor this package), wherever in the module it is."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not own(alias.name):
                    found[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else \
                        alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and not own(node.module):
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return found


def own(module: str) -> bool:
    top = module.partition(".")[0]
    return top == PACKAGE_NAME or top in sys.stdlib_module_names


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def sphinx_env(node: ast.expr, env_names: set[str]) -> bool:
    """Whether ``node`` is a Sphinx environment: ``<x>.env``, or a name the function took as
    ``env`` or bound to ``<x>.env``."""
    return (isinstance(node, ast.Attribute) and node.attr == "env") or (
        isinstance(node, ast.Name) and node.id in env_names)


def leans_in(path: Path, source: str, shown_as: str) -> list[Lean]:
    """Every lean of :func:`unlisted_leans`' kinds in one module, listed or not."""
    tree = ast.parse(source, filename=str(path))
    imports = third_party_imports(tree)
    found: list[Lean] = []

    def add(node: ast.AST, kind: str, name: str) -> None:
        found.append(Lean(shown_as, node.lineno, kind, name))

    for module_name in {*imports.values()}:  # a private module: "a._b"
        for part in re.split(r"[.:]", module_name):
            if private(part):
                line = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
                            and module_name.split(":")[0] in ((n.module or "") if isinstance(n, ast.ImportFrom)
                                                              else " ".join(a.name for a in n.names)))
                found.append(Lean(shown_as, line, "another project's private module or name", part))
    stdlib = {alias.asname or alias.name.partition(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
              for alias in node.names if alias.name.partition(".")[0] in sys.stdlib_module_names}
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    # A parameter named env is Sphinx's environment in a module that uses Sphinx (elsewhere it
    # is a dict of environment variables, or a folder).
    uses_sphinx = any(name.partition(".")[0] == "sphinx" for name in imports.values())

    def scope(function: ast.AST, env_names: set[str]) -> None:
        """Check ``function``'s own statements; each function nested in it sees its env names."""
        env_names = set(env_names)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and uses_sphinx:
            env_names |= {a.arg for a in function.args.args + function.args.kwonlyargs if a.arg == "env"}
        body = list(own_nodes(function))
        for node in body:
            if not isinstance(node, ast.Assign):
                continue
            # env = app.env, and env, docname = app.env, app.env.docname
            pairs = [(target, node.value) for target in node.targets]
            pairs += [pair for target in node.targets if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                      and len(target.elts) == len(node.value.elts) for pair in zip(target.elts, node.value.elts)]
            if any(isinstance(target, ast.Name) and target.id == "env" and isinstance(value, ast.Attribute)
                   and value.attr == "env" for target, value in pairs):
                env_names.add("env")
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope(node, env_names)
            else:
                check(node, env_names)

    def check(node: ast.AST, env_names: set[str]) -> None:
        # Another project's private attribute (self and cls are the book's own classes).
        if isinstance(node, ast.Attribute) and private(node.attr) and not (
                isinstance(node.value, ast.Name) and (node.value.id in ("self", "cls")
                                                      or f"{node.value.id}.{node.attr}" in DOCUMENTED_UNDERSCORED)):
            add(node, "another project's private attribute", node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            name = node.args[1].value
            if private(name):
                add(node, "another project's private attribute", name)
            elif sphinx_env(node.args[0], env_names) and name not in DOCUMENTED_ENV and not name.startswith("book_"):
                add(node, "an undocumented attribute of Sphinx's environment", name)
            elif node.func.id == "setattr" and isinstance(node.args[0], ast.Name) and node.args[0].id in imports:
                add(node, "an attribute of another project's module or class replaced", name)
        # The environment's undocumented attributes, such as those another extension sets on it.
        if isinstance(node, ast.Attribute) and sphinx_env(node.value, env_names) \
                and node.attr not in DOCUMENTED_ENV and not node.attr.startswith("book_"):
            add(node, "an undocumented attribute of Sphinx's environment", node.attr)
        # Monkeypatching: an attribute of another project's module or class replaced, a function
        # put in place of another object's attribute, sys.modules changed. (The standard
        # library's replaceable hooks, such as warnings.formatwarning, are documented.)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
                        and target.value.attr == "modules" and isinstance(target.value.value, ast.Name) \
                        and target.value.value.id == "sys":
                    add(node, "a module replaced in", "sys.modules")
                if not isinstance(target, ast.Attribute) or target.attr.startswith("book_") or (
                        isinstance(target.value, ast.Name) and target.value.id in ("self", "cls", *stdlib)):
                    continue
                value = getattr(node, "value", None)
                if isinstance(target.value, ast.Name) and target.value.id in imports:
                    add(node, "an attribute of another project's module or class replaced", target.attr)
                elif isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in defined):
                    add(node, "a function put in place of an object's attribute", target.attr)

    scope(tree, set())
    # A subclass of another project's class that sets one of its class attributes.
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [base_class_of(imports, base) for base in node.bases]
        bases = [base for base in bases if base is not None]
        for statement in node.body:
            targets = (statement.targets if isinstance(statement, ast.Assign)
                       else [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value else [])
            for target in targets:
                if isinstance(target, ast.Name) and target.id not in DOCUMENTED_OVERRIDES \
                        and not target.id.startswith("__") and any(hasattr(base, target.id) for base in bases):
                    add(statement, "a class attribute of another project's class set in a subclass", target.id)
    return found


def own_nodes(scope: ast.AST):
    """The nodes of ``scope`` (a module, class or function), down to but not into the
    functions and classes it holds, which are yielded themselves."""
    for child in ast.iter_child_nodes(scope):
        yield child
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from own_nodes(child)


def base_class_of(imports: dict[str, str], node: ast.expr) -> object | None:
    """The class a base-class expression names, if another project's (``Name`` or ``module.Name``)."""
    dotted = []
    while isinstance(node, ast.Attribute):
        dotted.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in imports:
        return None
    try:
        return resolve(imports[node.id] + ("." if ":" in imports[node.id] else ":") + ".".join(dotted)
                       if dotted else imports[node.id])
    except (ImportError, AttributeError, ValueError):
        return None


def scanned_files(package: Path) -> list[Path]:
    """Every module of this package, and the test suite's shared modules (conftest.py and the
    helpers beside the test files): every test run goes through them. A test file's own lean
    is that test's: it fails, naming itself, when the name moves."""
    tests = package.parent / "tests"
    return sorted(package.rglob("*.py")) + sorted(p for p in tests.glob("*.py") if not p.name.startswith("test_"))


def unlisted_leans(files: list[Path] | None = None, workarounds: list[Workaround] = WORKAROUNDS,
                   root: Path | None = None) -> list[Lean]:
    """The leans in ``files`` (by default :func:`scanned_files`) that no entry names: another
    project's private attribute or module; an undocumented attribute of Sphinx's
    environment (as ``env.mystnb_config``); an attribute of another project's module or class
    replaced, a function put in place of an object's attribute, ``sys.modules`` changed; a
    class attribute of another project's class set in a subclass, other than the documented
    ones (:data:`DOCUMENTED_OVERRIDES`). A lean is named by an entry when its name is one of
    the entry's internal names in full ("sys.modules" when one is "sys:modules"), or when its
    file is in the entry's ``where`` and its name is an internal name's last part (a private
    module's lean: a private part of its module path). Any part of any entry would do before:
    ``env.cache`` anywhere passed as listed because one entry names ``jupyter_cache.cache``."""
    package = Path(__file__).resolve().parent
    root = root or package.parent
    files = files if files is not None else scanned_files(package)
    in_full = {internal.replace(":", ".") for item in workarounds for internal in item.internals}
    found = []
    for path in files:
        shown_as = path.resolve().relative_to(root).as_posix() if path.resolve().is_relative_to(root) else str(path)
        named = set(in_full)
        for item in workarounds:
            if shown_as in item.where.split(", "):
                for internal in item.internals:
                    module, _, attribute = internal.rpartition(":")
                    named.add(re.split(r"[.:]", internal)[-1])
                    named |= {part for part in module.split(".") + attribute.split(".")[:-1] if private(part)}
        found += [lean for lean in leans_in(path, path.read_text(encoding="utf8"), shown_as)
                  if lean.name not in named]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions upstream", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Exit 1 when an entry has moved (tests/test_upstream.py fails then too).")
    parser.parse_args(argv)
    for item in WORKAROUNDS:
        print(f"- {item.where}: {item.why}.\n  Until: {item.until}.")
    found = problems() + [str(lean) for lean in unlisted_leans()]
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    return 1 if found else 0
