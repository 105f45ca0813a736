"""Each workaround's upstream is still what the workaround was written against."""

from pathlib import Path

import pytest
from books import FIXTURES

from book_extensions import upstream
from book_extensions.upstream import Workaround


def test_every_internal_exists_and_every_copied_file_is_the_copied_version():
    assert upstream.problems() == []


def test_a_moved_internal_and_a_changed_file_are_reported():
    moved = Workaround("ours.py", "why", "until", internal="myst_nb.sphinx_:no_such_function")
    changed = Workaround("templates/x.html", "why", "until",
                         copied=("sphinx_book_theme", "theme/sphinx_book_theme/layout.html", "0000000000000000"))
    found = upstream.problems([moved, changed])
    assert len(found) == 2
    assert found[0].startswith("ours.py: myst_nb.sphinx_:no_such_function is gone")
    assert found[1].startswith("templates/x.html: sphinx_book_theme/theme/sphinx_book_theme/layout.html changed "
                               "since it was copied (sha256 0000000000000000…, now ")


def test_a_changed_signature_is_reported():
    # IndexBuilder.feed as if it had lost a parameter since we wrapped it.
    feed = Workaround("search.py", "why", "until", internal="sphinx.search:IndexBuilder.feed",
                      signature="(self, docname, title, doctree)")
    [found] = upstream.problems([feed])
    assert found == ("search.py: sphinx.search:IndexBuilder.feed takes (self, docname, filename, title, doctree) "
                     "now, not (self, docname, title, doctree): check our code against it, then update the "
                     "signature in book_extensions/upstream.py")
    assert upstream.problems([Workaround("x.py", "why", "until", internal="sphinx.search:IndexBuilder.feed",
                                         signature="(self, docname, filename, title, doctree)")]) == []


def test_every_internal_and_file_of_an_entry_is_checked():
    # One root cause, several names and files: each is checked, and reported with the entry.
    entry = Workaround("ours.py", "why", "until",
                       internal=("sphinx.search:IndexBuilder.feed", "myst_nb.sphinx_:no_such_function",
                                 "sphinx.search:IndexBuilder._titles"),
                       signature=("(self, docname, title, doctree)", "", ""),
                       read=(("sphinx", "themes/basic/static/searchtools.js", "954625d140412a9d"),
                             ("sphinx", "themes/basic/static/sphinx_highlight.js", "0000000000000000")))
    found = upstream.problems([entry])
    assert len(found) == 3
    assert found[0].startswith("ours.py: sphinx.search:IndexBuilder.feed takes (self, docname, filename, title, "
                               "doctree) now, not (self, docname, title, doctree)")
    assert found[1].startswith("ours.py: myst_nb.sphinx_:no_such_function is gone")
    assert found[2].startswith("ours.py: sphinx/themes/basic/static/sphinx_highlight.js changed since it was read")


def test_an_entry_gives_one_signature_per_internal():
    with pytest.raises(ValueError, match="one signature per internal name"):
        Workaround("ours.py", "why", "until", internal=("a:b", "c:d"), signature="(self)")
    with pytest.raises(ValueError, match="one signature per internal name"):
        Workaround("ours.py", "why", "until", internal=("a:b", "c:d"), signature=("(self)",))


def test_an_attribute_set_on_instances_counts_as_there_until_the_class_stops_setting_it():
    titles = Workaround("search.py", "why", "until", internal="sphinx.search:IndexBuilder._titles")
    gone = Workaround("search.py", "why", "until", internal="sphinx.search:IndexBuilder._no_such_titles")
    assert upstream.problems([titles]) == []
    [found] = upstream.problems([gone])
    assert found.startswith("search.py: sphinx.search:IndexBuilder._no_such_titles is gone")


def test_the_list_has_at_most_15_entries():
    # Issue 30: each entry is a mine for the next upgrade. A new one means another goes, or a
    # public way instead (the entries say why none exists for them).
    assert len(upstream.WORKAROUNDS) <= 15, [w.where for w in upstream.WORKAROUNDS]


def test_every_lean_in_the_package_is_listed():
    assert [str(lean) for lean in upstream.unlisted_leans()] == []


LEANS = FIXTURES / "unlisted_leans" / "leans.py"


def test_an_unlisted_lean_of_each_kind_is_found():
    found = {(lean.line, lean.kind, lean.name) for lean in upstream.unlisted_leans([LEANS], workarounds=[])}
    assert found == {
        (9, "another project's private module or name", "_pathlib"),
        (9, "another project's private module or name", "_StrPath"),
        (13, "an undocumented attribute of Sphinx's environment", "mystnb_config"),
        (14, "an undocumented attribute of Sphinx's environment", "myst_config"),
        (21, "an undocumented attribute of Sphinx's environment", "toctree_includes"),
        (26, "an attribute of another project's module or class replaced", "create_client"),
        (27, "a function put in place of an object's attribute", "feed"),
        (28, "a module replaced in", "sys.modules"),
        (30, "another project's private attribute", "_titles"),
        (34, "a class attribute of another project's class set in a subclass", "language_name"),
        (46, "an attribute of another project's module or class replaced", "HideInputCells"),
        (47, "an undocumented attribute of Sphinx's environment", "cache"),
        (47, "an undocumented attribute of Sphinx's environment", "search"),
        (47, "an undocumented attribute of Sphinx's environment", "client"),
        (47, "another project's private attribute", "_titles"),
        (52, "an undocumented attribute of Sphinx's environment", "domains"),
        (57, "another project's private attribute", "_getframe"),
    }
    [one] = upstream.unlisted_leans([LEANS], workarounds=[])[:1]
    assert str(one).endswith("leans.py:9: another project's private module or name (_pathlib), "
                             "which no entry of book_extensions/upstream.py names")


INTERNALS = ("sphinx.util._pathlib:_StrPath", "myst_nb.sphinx_ext:create_mystnb_config.mystnb_config",
             "myst_parser.sphinx_ext:myst_config", "sphinx.environment:BuildEnvironment.toctree_includes",
             "myst_nb.sphinx_:create_client", "sphinx.search:IndexBuilder.feed", "sys:modules",
             "sphinx.search:SearchLanguage.language_name", "jupyter_cache.cache.main:JupyterCacheBase.db",
             "sphinx.environment:BuildEnvironment.domains", "sys:_getframe")


def test_a_lean_an_entry_names_is_listed():
    entry = Workaround("tests/fixtures/unlisted_leans/leans.py", "why", "until",
                       internal=(*INTERNALS, "sphinx.search:IndexBuilder._titles"))
    found = {(lean.line, lean.name) for lean in upstream.unlisted_leans([LEANS], workarounds=[entry])}
    # Only the names that are a fragment of an entry's internal name (the module of one, as
    # "cache" or "search", or a module's attribute named as another's) are not listed.
    assert found == {(46, "HideInputCells"), (47, "cache"), (47, "search"), (47, "client")}


def test_a_lean_named_for_another_file_is_not_listed():
    """By its last part, an internal name lists a lean only in the entry's own files."""
    entry = Workaround("book_extensions/elsewhere.py", "why", "until",
                       internal=(*INTERNALS, "sphinx.search:IndexBuilder._titles"))
    found = {lean.name for lean in upstream.unlisted_leans([LEANS], workarounds=[entry])}
    assert found == {lean.name for lean in upstream.unlisted_leans([LEANS], workarounds=[])} - {"sys.modules"}


def test_every_copied_template_is_listed():
    listed = {name for w in upstream.WORKAROUNDS if w.copies for name in w.where.split(", ")}
    templates = Path(upstream.__file__).with_name("templates")
    copies = {f"book_extensions/templates/{p.name}" for p in templates.glob("*.html")
              if "sphinx-book-theme's" in p.read_text(encoding="utf8").split("-#}")[0]}
    assert copies and copies <= listed


def test_every_workaround_names_files_of_ours_that_exist():
    root = Path(upstream.__file__).resolve().parent.parent
    missing = [(w.where, name) for w in upstream.WORKAROUNDS for name in w.where.split(", ")
               if not (root / name).is_file()]
    assert missing == []


def test_the_suites_shared_modules_are_scanned_too():
    files = upstream.scanned_files(Path(upstream.__file__).resolve().parent)
    tests = [p for p in files if p.parent.name == "tests"]
    assert "conftest.py" in {p.name for p in tests} and not any(p.name.startswith("test_") for p in tests)
    without = [w for w in upstream.WORKAROUNDS if w.where != "tests/conftest.py"]
    assert {(lean.path, lean.name) for lean in upstream.unlisted_leans(workarounds=without)} == {
        ("tests/conftest.py", "_pytest"), ("tests/conftest.py", "_id")}
