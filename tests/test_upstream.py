"""Each workaround's upstream is still what the workaround was written against."""

import re
from pathlib import Path

import pytest

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


def test_every_private_name_the_code_uses_is_listed():
    # A private attribute of another project's object, read or set anywhere in the package
    # (``self._x`` is taken for the book's own, as CheckedClient's _shown).
    package = Path(upstream.__file__).parent
    names = {name for path in package.rglob("*.py")
             for owner, name in re.findall(r"(\w*\)?)\.(_[a-z]\w*)\b", path.read_text(encoding="utf8"))
             if owner not in ("self", "cls")}
    names |= {name for path in package.rglob("*.py")
              for name in re.findall(r"getattr\(\w+, \"(_[a-z]\w*)\"", path.read_text(encoding="utf8"))}
    # A private module counts as listed too (an internal "a._b.c:D" lists _b).
    listed = {part for w in upstream.WORKAROUNDS for internal in w.internals for part in re.split(r"[.:]", internal)}
    assert names - listed == set()


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
