"""The parity check's comparison of two languages' pages, on inline pages."""

from pathlib import Path

import pytest

from book_extensions.checks import parity

pytestmark = pytest.mark.unit


FRONT = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"


def page(tmp_path: Path, name: str, body: str) -> parity.Page:
    path = tmp_path / name
    path.write_text(FRONT + body)
    return parity.read_page(path)


def test_parity_ignores_prose_but_not_structure(tmp_path):
    en = page(tmp_path, "en.md", "# `x`\n\n(lab)=\n## Part\n\nWords.\n\n```{code-cell} ipython3\nx = 1\n```\n")
    zh = page(tmp_path, "zh.md", "# `x`\n\n(lab)=\n## 部分\n\n文字。\n\n```{code-cell} ipython3\nx = 1\n```\n")
    assert parity.first_difference(zh, en, "en") is None
    fewer = page(tmp_path, "a.md", "# `x`\n\n(lab)=\n文字。\n\n```{code-cell} ipython3\nx = 1\n```\n")
    assert parity.first_difference(fewer, en, "en") == "it has 1 headings, en has 2"
    relabel = page(tmp_path, "b.md", "# `x`\n\n(other)=\n## 部分\n\n```{code-cell} ipython3\nx = 1\n```\n")
    assert parity.first_difference(relabel, en, "en") == "its labels ['other'] differ from en's ['lab']"
    tagged = page(tmp_path, "c.md", "# `x`\n\n(lab)=\n## 部分\n\n```{code-cell} ipython3\n:tags: [hide-input]\nx = 1\n```\n")
    assert parity.first_difference(tagged, en, "en").startswith("code cell 1 has metadata")


def test_parity_names_the_code_line_that_differs_even_at_the_end(tmp_path):
    en = page(tmp_path, "en.md", "# T\n\n```{code-cell} ipython3\nx = 1\ny = 2\n```\n")
    edited = page(tmp_path, "zh.md", "# T\n\n```{code-cell} ipython3\nx = 1\ny = 3\n```\n")
    assert parity.first_difference(edited, en, "en") == \
        "code cell 1's code (comments and docstrings aside) differs from en's: 'y = 3' here, 'y = 2' there"
    longer = page(tmp_path, "zh2.md", "# T\n\n```{code-cell} ipython3\nx = 1\ny = 2\nz = 3\n```\n")
    assert parity.first_difference(longer, en, "en") == \
        "code cell 1's code (comments and docstrings aside) differs from en's: 'z = 3' here, no such line there"


def test_every_code_cell_that_differs_is_named_in_one_run(tmp_path):
    # Attack 11, case 14: one difference a page a run, so each fix showed the next one.
    cells = "".join(f"```{{code-cell}} ipython3\nx = {n}\n```\n\n" for n in range(1, 6))
    en = page(tmp_path, "en.md", "# T\n\n" + cells)
    zh = page(tmp_path, "zh.md", "# T\n\n" + cells.replace("x = 3", "x = 33").replace("x = 5", "x = 55"))
    assert parity.differences(zh, en, "en") == [
        "code cell 3's code (comments and docstrings aside) differs from en's: 'x = 33' here, 'x = 3' there",
        "code cell 5's code (comments and docstrings aside) differs from en's: 'x = 55' here, 'x = 5' there"]
    assert parity.differences(en, en, "en") == []


def test_a_page_that_is_not_utf8_is_named_not_crashed_on(tmp_path):
    # Attack 11, case 19: a Latin-1 page in both languages stopped Sphinx with a traceback (the
    # check of program references read it strictly). The language's own page is reported where
    # its pages are read; its twin in the reference language, here.
    docs = tmp_path / "docs"
    for code in ("en", "zh"):
        (docs / code).mkdir(parents=True)
        (docs / code / "latin.md").write_bytes(b"# Caf\xe9\n")
        (docs / code / "fine.md").write_text(FRONT + "# T\n")
    (docs / "zh" / "fine.md").write_bytes(b"# Caf\xe9\n")  # zh's fine page is bad, en's is not
    assert parity.compare(docs, "zh", "en", read_by_sphinx=True) == []
    assert parity.compare(docs, "zh", "en") == [  # the parity verb, which no Sphinx check precedes
        ("docs/zh/fine.md", "is not valid UTF-8 (byte 0xe9 at line 1): save the page as UTF-8"),
        ("docs/zh/latin.md", "is not valid UTF-8 (byte 0xe9 at line 1): save the page as UTF-8")]
    assert parity.compare(docs, "en", "zh", read_by_sphinx=True) == [
        ("docs/en/fine.md", "cannot be compared with zh/fine.md, which is not valid UTF-8 (byte 0xe9 at line 1): "
                            "save that page as UTF-8")]
    # An example program and its twin, both undecodable: each is named.
    (tmp_path / "examples" / "zh").mkdir(parents=True)
    for program in (tmp_path / "examples" / "p.py", tmp_path / "examples" / "zh" / "p.py"):
        program.write_bytes(b"x = 1\n# caf\xe9\n")
    assert parity.twin_problems(tmp_path / "examples", "zh") == [
        ("examples/zh/p.py", "not valid UTF-8 (byte 0xe9 at line 2): save the program as UTF-8"),
        ("examples/p.py", "not valid UTF-8 (byte 0xe9 at line 2): save the program as UTF-8")]


def test_parity_lets_comments_and_docstrings_be_in_the_page_language(tmp_path):
    en = page(tmp_path, "en.md", '# T\n\n```{code-cell} ipython3\ndef f(x):\n    """Double it."""\n'
              '    return 2 * x  # twice\n\n# the call\nf(1)\n```\n')
    zh = page(tmp_path, "zh.md", '# T\n\n```{code-cell} ipython3\ndef f(x):\n    """把它翻倍。\n\n    返回两倍。\n    """\n'
              '    return 2 * x  # 两倍\nf(1)  # 调用\n```\n')
    assert parity.first_difference(zh, en, "en") is None
    # A comment is prose, but what a line does is code: moving a statement into a comment is not.
    hidden = page(tmp_path, "zh2.md", "# T\n\n```{code-cell} ipython3\ndef f(x):\n    return 2 * x\n# f(1)\n```\n")
    assert parity.first_difference(hidden, en, "en") == \
        "code cell 1's code (comments and docstrings aside) differs from en's: no such line here, 'f(1)' there"


def test_parity_wants_the_same_section_ids(tmp_path):
    # A heading's id comes from its label, else from its ASCII letters and digits, else a number.
    en = page(tmp_path, "en.md", "(t)=\n# Title\n\n## `detach()` and `data`\n\n## Check yourself\n")
    same = page(tmp_path, "zh.md", "(t)=\n# 标题\n\n## `detach()` 与 `data`\n\n## 自测\n")
    assert parity.first_difference(same, en, "en") == (
        "heading 2 \"detach() 与 data\" has no label and gets #detach-data, en's \"detach() and data\" gets "
        "#detach-and-data: put the same (label)= above it in both languages")
    labelled = page(tmp_path, "zh.md", "(t)=\n# 标题\n\n(d)=\n## `detach()` 与 `data`\n\n(c)=\n## 自测\n")
    en_labelled = page(tmp_path, "en.md", "(t)=\n# Title\n\n(d)=\n## `detach()` and `data`\n\n(c)=\n## Check yourself\n")
    assert parity.first_difference(labelled, en_labelled, "en") is None
    moved = page(tmp_path, "zh.md", "(t)=\n# 标题\n\n(d)=\n\n文字。\n\n## `detach()` 与 `data`\n\n(c)=\n## 自测\n")
    assert parity.first_difference(moved, en_labelled, "en") == \
        "heading 2 has a (label)= right above it in one language only"
    # The same text twice on a page: one of the two gets a number.
    twice = "(t)=\n# T\n\n## `x`\n\n## `x`\n"
    assert "heading 2 \"x\" has no label and gets no id of its own (a number: #id1, #id2…)" in parity.first_difference(
        page(tmp_path, "zh.md", twice), page(tmp_path, "en.md", twice), "en")
    # A label elsewhere on the page takes the id too.
    taken = "(t)=\n# T\n\n## `x`\n\n(x)=\n## Y\n"
    assert parity.first_difference(page(tmp_path, "zh.md", taken), page(tmp_path, "en.md", taken), "en") \
        .startswith("heading 2 \"x\" has no label and gets no id of its own")


def test_parity_compares_doctest_blocks(tmp_path):
    en = page(tmp_path, "en.md", "# T\n\n```{doctest}\n>>> 1 + 1\n2\n```\n")
    zh = page(tmp_path, "zh.md", "# T\n\n```{doctest}\n>>> 1 + 2\n3\n```\n")
    assert parity.first_difference(zh, en, "en") == "its doctest blocks differ from en's"


def test_parity_reads_again_only_the_pairs_that_changed_or_had_a_problem(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    for lang, title in (("en", "Title"), ("zh", "标题")):
        (docs / lang).mkdir(parents=True)
        for name in ("a", "b"):
            (docs / lang / f"{name}.md").write_text(f"{FRONT}(t)=\n# {title}\n\n```{{code-cell}} ipython3\nx = 1\n```\n")
    read = []
    real_read_page = parity.read_page
    monkeypatch.setattr(parity, "read_page", lambda path: read.append(path.relative_to(docs).as_posix()) or real_read_page(path))
    clean: dict = {}
    assert parity.compare(docs, "zh", "en", clean=clean) == []
    assert sorted(clean) == ["a.md", "b.md"] and len(read) == 4
    read.clear()
    assert parity.compare(docs, "zh", "en", clean=clean) == [] and read == []  # nothing changed: nothing read
    (docs / "zh" / "b.md").write_text(f"{FRONT}(t)=\n# 标题\n\n```{{code-cell}} ipython3\nx = 2\n```\n")
    for _ in range(2):  # the problem is found again on the next comparison: it is never noted clean
        read.clear()
        problems = parity.compare(docs, "zh", "en", clean=clean)
        assert [page for page, _ in problems] == ["docs/zh/b.md"] and sorted(read) == ["en/b.md", "zh/b.md"]
        assert sorted(clean) == ["a.md"]
