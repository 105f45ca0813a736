"""Each workaround's upstream is still what the workaround was written against."""

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


def test_every_copied_template_is_listed():
    listed = {w.where for w in upstream.WORKAROUNDS if w.copied}
    from pathlib import Path

    templates = Path(upstream.__file__).with_name("templates")
    copies = {f"book_extensions/templates/{p.name}" for p in templates.glob("*.html")
              if "sphinx-book-theme's" in p.read_text(encoding="utf8").split("-#}")[0]}
    assert copies and copies <= listed
