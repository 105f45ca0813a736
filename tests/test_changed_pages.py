"""Which pages Sphinx reads again: by content, whatever the files' times
(book_extensions/execution/changed_pages.py; the build's side: test_build_driver.py)."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from book_extensions.execution import changed_pages, page_state

pytestmark = pytest.mark.unit


def environment(src: Path):
    return SimpleNamespace(srcdir=src, config=SimpleNamespace(source_encoding="utf-8-sig"), docname="page",
                           doc2path=lambda docname: src / f"{docname}.md", found_docs={"page"}, dependencies={})


def read(env, text: str) -> None:
    """As a build reads the page: source-read gets the text it parses."""
    changed_pages.note_source(SimpleNamespace(env=env), "page", [text])


def test_an_edit_made_while_the_page_was_read_is_read_by_the_next_build(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Before\n", encoding="utf8")
    env = environment(tmp_path)
    read(env, "# Before\n")
    assert changed_pages.pages_with_other_content(None, env, set(), set(), set()) == []
    # Edited after Sphinx took the text, before it stamped the page: the note holds what was parsed.
    page.write_text("# After\n", encoding="utf8")
    assert changed_pages.pages_with_other_content(None, env, set(), set(), set()) == ["page"]
    # Put back as it was read (a restore, whatever its time): nothing to read.
    page.write_text("# Before\n", encoding="utf8")
    assert changed_pages.pages_with_other_content(None, env, set(), set(), set()) == []


def test_the_text_is_compared_as_sphinx_decodes_it(tmp_path):
    page = tmp_path / "page.md"
    page.write_bytes(b"\xef\xbb\xbf# Title\r\n")  # a BOM and Windows line ends, read as "# Title\n"
    env = environment(tmp_path)
    read(env, page.read_text(encoding="utf-8-sig"))
    assert not changed_pages.changed(env, "page")


def test_a_dependency_with_other_content_reads_its_page_again(tmp_path):
    page, figure = tmp_path / "page.md", tmp_path / "figure.svg"
    page.write_text("# Page\n", encoding="utf8")
    figure.write_text("<svg>one</svg>\n", encoding="utf8")
    env = environment(tmp_path)
    env.dependencies = {"page": {figure}}
    app = SimpleNamespace(env=env)
    changed_pages.snapshot(app, env, ["page"])  # before the build reads anything
    figure.write_text("<svg>two</svg>\n", encoding="utf8")  # while the build runs, before the page reads it
    read(env, "# Page\n")
    changed_pages.note_dependencies(app, None)
    assert changed_pages.changed(env, "page")  # the next build reads it: it may have read either


def test_a_page_read_before_the_digests_were_noted_is_read_again(tmp_path):
    (tmp_path / "page.md").write_text("# Page\n", encoding="utf8")
    env = environment(tmp_path)
    page_state.of(env, "page")  # a state without a digest (an older environment)
    assert changed_pages.changed(env, "page")


def test_a_page_showing_a_value_glued_from_another_is_read_again_when_that_page_changed(tmp_path):
    # Attack 12, case 30: the gluing page executed again (a file its cell read changed), and
    # the page showing its value kept the old one, "unchanged" ever after.
    data = tmp_path / "data.txt"
    data.write_text("111\n", encoding="utf8")
    env = environment(tmp_path)
    for name in ("gluing", "shown"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n", encoding="utf8")
        page_state.of(env, name).source = changed_pages.text_digest(f"# {name}\n")
    page_state.of(env, "gluing").dependencies = {str(data): changed_pages.content_digest(data)}  # its reads
    page_state.of(env, "shown").glued_from = ["gluing"]
    page_state.of(env, "gluing").glued_from = ["shown"]  # pages that glue from each other end
    assert not changed_pages.changed(env, "shown")
    data.write_text("222\n", encoding="utf8")
    assert changed_pages.changed(env, "gluing") and changed_pages.changed(env, "shown")


@pytest.mark.unit
def test_a_computed_page_is_written_again_only_when_what_it_fills_in_changed(monkeypatch):
    env = SimpleNamespace()
    html, epub = (SimpleNamespace(builder=SimpleNamespace(name=name)) for name in ("html", "epub"))
    shown = {"rows": [1]}
    monkeypatch.setitem(page_state.WRITE_INPUTS, "a-directive", lambda app, env: shown["rows"])
    page_state.of(env, "computed").computed.add("a-directive")
    page_state.of(env, "other").computed.add("a-directive-without-inputs")
    page_state.of(env, "plain")
    assert page_state.rewrite_computed_pages(html, env) == ["computed", "other"]  # never written with these
    assert page_state.rewrite_computed_pages(html, env) == []
    shown["rows"] = [1, 2]
    assert page_state.rewrite_computed_pages(html, env) == ["computed"]
    assert page_state.rewrite_computed_pages(html, env) == []
    # Another builder sharing the environment writes into its own folder: what html wrote
    # does not count for it.
    assert page_state.rewrite_computed_pages(epub, env) == ["computed", "other"]
    assert page_state.rewrite_computed_pages(epub, env) == []
    page_state.every(env).pop("computed")  # read again: its state is new, and it is written anyway
    page_state.of(env, "computed").computed.add("a-directive")
    assert page_state.rewrite_computed_pages(html, env) == ["computed"]
