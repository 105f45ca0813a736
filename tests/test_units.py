"""The checks' building blocks, on inline inputs."""

from pathlib import Path

import pytest

from book_extensions.checks import parity, remote_loads
from book_extensions.execution.cell_checks import ADDRESS, expectation


@pytest.mark.parametrize("html, remote", [
    ('<script src="https://cdn.example.com/a.js"></script>', ["https://cdn.example.com/a.js"]),
    ('<script src="_static/a.js"></script>', []),
    ('<link rel="stylesheet" href="//fonts.example.com/f.css">', ["//fonts.example.com/f.css"]),
    ('<link rel="preload" as="font" href="https://x.example/f.woff2">', ["https://x.example/f.woff2"]),
    ('<link rel="alternate" hreflang="en" href="https://book.example/en/">', []),
    ('<link rel="canonical" href="https://book.example/en/">', []),
    ('<a href="https://pytorch.org/docs/">docs</a>', []),
    ('<img src="data:image/png;base64,AAAA">', []),
    ('<img srcset="a.png 1x, https://img.example/b.png 2x">', ["https://img.example/b.png"]),
    ('<div style="background: url(https://img.example/bg.png)"></div>', ["https://img.example/bg.png"]),
    ('<style>@import "https://css.example/x.css";</style>', ["https://css.example/x.css"]),
    ('<iframe src="https://www.youtube.com/embed/x"></iframe>', ["https://www.youtube.com/embed/x"]),
    # The site's own scripts run, but load from this site only; SVG and refresh as an output's.
    ('<script>fetch("https://api.example/")</script>', []),
    ('<svg><image xlink:href="https://img.example/a.png"/></svg>', ["https://img.example/a.png"]),
    ('<meta http-equiv="refresh" content="0; url=https://away.example/">', ["<meta http-equiv=refresh>"]),
    ('<link rel="dns-prefetch" href="//dns.example">', ["//dns.example"]),
])
def test_remote_loads_in_html(tmp_path, html, remote):
    page = tmp_path / "page.html"
    page.write_text(f"<html><head></head><body>{html}</body></html>")
    found = remote_loads.remote_loads(page)  # one problem each, naming its URL or element
    assert len(found) == len(remote) and all(what in problem for what, problem in zip(remote, found)), found


def test_remote_loads_in_css_and_own_host(tmp_path):
    css = tmp_path / "a.css"
    css.write_text("@font-face { src: url('https://fonts.example/x.woff2'); } .a { background: url(img.png) }")
    assert remote_loads.remote_loads(css) == ["loads https://fonts.example/x.woff2"]
    page = tmp_path / "p.html"
    page.write_text('<script src="https://book.example/_static/a.js"></script>')
    assert remote_loads.remote_loads(page, own_host="book.example") == []


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


def test_expectation_schema():
    assert expectation({"expect_error": {"type": "RuntimeError", "message": "inplace"}}) == ("RuntimeError", "inplace")
    assert "non-empty" in expectation({"expect_error": {"type": "RuntimeError"}})
    assert "unknown keys: match" in expectation({"expect_error": {"type": "E", "message": "m", "match": "x"}})
    assert "mapping" in expectation({"expect_error": "RuntimeError"})


def test_addresses_are_recognised():
    assert ADDRESS.sub("0x…", "<SigmoidBackward0 object at 0x7f3b2c1d9e80>") == "<SigmoidBackward0 object at 0x…>"
    assert ADDRESS.sub("0x…", "tensor([0x10])") == "tensor([0x10])"


def test_line_breaks_inside_chinese_prose_are_found():
    from book_extensions.checks.typography import cjk_line_breaks

    text = "# 标题\n\n第一行，\n第二行。\n\n```{code-cell} ipython3\nprint('中\\n文')\n```\nEnglish\n代码\n末尾\n"
    assert cjk_line_breaks(text) == [3, 10]


def test_graph_figures_come_from_the_real_graph_and_are_deterministic():
    import torch

    from book_extensions.kernel.figures import autograd_graph, record_graph

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    out = a.sigmoid()
    c = out.detach()
    graph = record_graph({"a": a, "out": out, "c": c})
    labels = {n: graph.nodes[n]["label"] for n in graph.nodes}
    sigmoid = next(n for n, label in labels.items() if label == "SigmoidBackward0")
    assert set(graph.edges) == {("a", sigmoid), (sigmoid, "out")}
    assert graph.degree("c") == 0  # the detached tensor stands alone
    first = autograd_graph(a=a, out=out, c=c).data
    assert first == autograd_graph(a=a, out=out, c=c).data
    assert first.lstrip().startswith(("<?xml", "<svg"))


def test_every_interface_string_is_translated_with_the_same_placeholders():
    import string

    from babel.messages.pofile import read_po

    from book_extensions.configuration.messages import ENGLISH

    po = Path(__file__).resolve().parent.parent / "book_extensions" / "locale" / "zh_CN" / "LC_MESSAGES" / "book.po"
    with po.open("rb") as source:
        catalog = {m.context: m for m in read_po(source) if m.id}
    assert set(catalog) == set(ENGLISH), "book.po and messages.ENGLISH list different keys"
    fields = lambda text: {f for _, f, _, _ in string.Formatter().parse(text) if f}  # noqa: E731
    for key, english in ENGLISH.items():
        entry = catalog[key]
        assert entry.id == english, f"{key}: book.po translates an older English text"
        assert entry.string, f"{key}: not translated"
        # A translation may leave a value out (the zh code prompt omits myst-nb's English
        # {type}), never ask for one the code does not pass.
        assert fields(entry.string) <= fields(english), key


def test_each_build_has_a_page_executor_of_its_own(tmp_path):
    from book_extensions.execution.runner import PageRunner
    from book_extensions.paths import ROOT

    log = tmp_path / "doctrees" / "book-writes.log"
    log.parent.mkdir()
    log.write_text("an earlier build's line\n")
    build = PageRunner.for_build(ROOT, ROOT / "docs", [tmp_path / "out"], limit=10, log=log)
    assert (build.watched_sources, build.sources_root, build.output_limit) == ([ROOT], ROOT, 10)
    assert log.read_text() == ""  # an earlier build's writes are not this one's
    build.executed_notebooks["page.md"] = object()
    bare = PageRunner()  # a tool's, outside a build: nothing watched, no limit, nothing shared
    assert (bare.watched_sources, bare.writes_log, bare.output_limit, bare.executed_notebooks) == ([], None, None, {})
    log.write_text(f"page-a\t{ROOT}/README.md\npage-b\t{ROOT}/docs/x\n")
    assert build.written_by_other_pages("page-b") == {f"{ROOT}/README.md"}
    before, after = {f"{ROOT}/a": (1, 1)}, {f"{ROOT}/a": (2, 1), f"{ROOT}/b": (1, 1)}
    assert build.changed_sources(before, after, {f"{ROOT}/b"}) == ["a"]


def test_a_compiled_catalog_that_is_not_its_po_is_compiled_again_whatever_its_time(tmp_path):
    # A .po restored with an older time (cp -p, tar) must not leave the .mo of another text.
    import os
    from types import SimpleNamespace

    from book_extensions.configuration import languages

    catalogs = languages.compile_theme_catalogs(SimpleNamespace(doctreedir=str(tmp_path)))
    compiled = sorted(catalogs.rglob("*.mo"))
    assert compiled
    good = compiled[0].read_bytes()
    compiled[0].write_bytes(b"stale")
    os.utime(compiled[0], (4_000_000_000, 4_000_000_000))  # newer than any .po
    languages.compile_theme_catalogs(SimpleNamespace(doctreedir=str(tmp_path)))
    assert compiled[0].read_bytes() == good


def test_a_compiled_catalog_older_than_its_po_is_dated_anew_so_sphinx_leaves_it(tmp_path, monkeypatch):
    # Sphinx compiles a .mo older than its .po again, with other bytes than ours: the book's
    # own sources would then change under a build (the offline editions' stamps went stale).
    import os
    import shutil

    from book_extensions.commands import build
    from book_extensions.paths import PACKAGE

    shutil.copytree(PACKAGE / "locale", tmp_path / "locale")
    monkeypatch.setattr(build, "PACKAGE", tmp_path)
    build.compile_sphinx_catalogs()
    po = next((tmp_path / "locale").glob("*/LC_MESSAGES/book.po"))
    mo = po.with_suffix(".mo")
    compiled = mo.read_bytes()
    os.utime(mo, (1_000_000_000, 1_000_000_000))  # as a checkout leaves it: the .po newer
    build.compile_sphinx_catalogs()
    assert mo.read_bytes() == compiled and mo.stat().st_mtime_ns >= po.stat().st_mtime_ns
