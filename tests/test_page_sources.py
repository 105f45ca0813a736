"""What a page's source must be (book_extensions/checks/page_sources.py), on inline pages."""

from __future__ import annotations

import pytest

FOLD_FRONT = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"


def folded_page(tmp_path, lines: int, options: str, include: str = "") -> list[tuple[int, str]]:
    from book_extensions.checks import page_sources

    (tmp_path / "examples").mkdir(exist_ok=True)
    (tmp_path / "examples" / "prog.py").write_text("".join(f"x{n} = {n}\n" for n in range(lines)))
    (tmp_path / "docs").mkdir(exist_ok=True)
    page = tmp_path / "docs" / "p.md"
    page.write_text(f"{FOLD_FRONT}# T\n\n{include}```{{code-cell}} ipython3\n{options}```\n")
    return page_sources.unfolded_programs(page.read_text(), page)


SHOWN = "```{literalinclude} ../examples/prog.py\n:lines: 1-3\n```\n\n"


@pytest.mark.unit
def test_a_long_program_must_be_folded_and_a_part_of_it_shown(tmp_path):
    from book_extensions.checks.page_sources import FOLD_LINES

    yaml_load = "---\nload: ../examples/prog.py\n---\n"
    assert folded_page(tmp_path, FOLD_LINES, yaml_load) == []  # a screen: shown whole
    assert folded_page(tmp_path, FOLD_LINES + 1, yaml_load) == [(9, (
        f"code cell 1 loads ../examples/prog.py, {FOLD_LINES + 1} lines, longer than a screen ({FOLD_LINES}): "
        "fold it (tags: [hide-input]) and show the part the text discusses ({literalinclude} "
        "../examples/prog.py, :pyobject: one function)"))]
    folded = "---\nload: ../examples/prog.py\ntags: [hide-input]\n---\n"
    assert [p for _, p in folded_page(tmp_path, 60, folded)] == [
        "code cell 1 loads ../examples/prog.py, 60 lines, longer than a screen (40): show the part the text "
        "discusses ({literalinclude} ../examples/prog.py, :pyobject: one function)"]
    assert [p for _, p in folded_page(tmp_path, 60, yaml_load, SHOWN)] == [
        "code cell 1 loads ../examples/prog.py, 60 lines, longer than a screen (40): fold it (tags: [hide-input])"]
    assert folded_page(tmp_path, 60, folded, SHOWN) == []
    # the other way to write options, and a part of another program does not count
    assert folded_page(tmp_path, 60, ":load: ../examples/prog.py\n:tags: [hide-input]\n", SHOWN) == []
    assert len(folded_page(tmp_path, 60, folded, SHOWN.replace("prog.py", "other.py"))) == 1


@pytest.mark.unit
def test_source_code_a_page_shows_gets_no_break_marks_but_printed_text_does():
    # A <wbr> breaks even a <pre> in Chromium: at "." and "(" in a literalinclude of a
    # program it put the rest of a statement at the margin, as if another line of Python.
    from docutils import nodes

    from book_extensions.site.readable_layout import printed

    assert not printed(nodes.literal_block("x = a.detach()", "x = a.detach()", language="python"))
    assert printed(nodes.literal_block("tensor([1.])", "tensor([1.])", classes=["output", "stream"]))
    assert printed(nodes.doctest_block(">>> a", ">>> a"))


@pytest.mark.unit
def test_an_indented_printed_line_is_marked_so_that_its_continuation_hangs_right_of_its_text():
    from book_extensions.site.readable_layout import hang_indented

    block = ('<div class="highlight"><pre><span></span>setup:\n'
             '  same weights: <wbr>True\n'
             '    rounded <span class="book-nobr">6.1e-05</span>\n'
             '  <span class="ansi-red">coloured</span>\n'
             '  half <span class="ansi-red">coloured</span>\n'
             '  <span class="n">a_long<wbr>_name</span>\n'
             '  <span class="ansi-red">over\ntwo lines</span>\n'
             '   \n'
             '             deeper than nesting: columns\n'
             '  last</pre></div>')
    assert hang_indented(block) == (
        '<div class="highlight"><pre><span></span>setup:\n'
        '  <span class="book-indented" style="--book-indent: 2">same weights: <wbr>True</span>\n'
        '    <span class="book-indented" style="--book-indent: 4">rounded <span class="book-nobr">6.1e-05</span></span>\n'
        '  <span class="book-indented" style="--book-indent: 2"><span class="ansi-red">coloured</span></span>\n'
        '  <span class="book-indented" style="--book-indent: 2">half <span class="ansi-red">coloured</span></span>\n'
        '  <span class="book-indented" style="--book-indent: 2"><span class="n">a_long<wbr>_name</span></span>\n'
        # an element that goes on past the line: the line is left as it is
        '  <span class="ansi-red">over\n'
        'two lines</span>\n'
        '   \n'
        '             deeper than nesting: columns\n'
        '  <span class="book-indented" style="--book-indent: 2">last</span></pre></div>')


@pytest.mark.unit
def test_cell_options_a_notebook_cannot_hold_are_named_and_dropped(monkeypatch):
    """Attack 7, case 17: myst-nb gives a cell's options to nbformat as its metadata, whose
    validation error (tags written as a string) or JSON writer (a date) stopped Sphinx with a
    traceback naming no page."""
    from book_extensions.checks import page_sources

    assert page_sources.invalid_cell_metadata({"tags": "remove-output"}) == (
        "tags", "'remove-output' is not of type 'array'")
    assert page_sources.invalid_cell_metadata({"created": __import__("datetime").date(2024, 1, 1)}) == (
        "created", "a date, which a notebook cannot hold")
    assert page_sources.invalid_cell_metadata({"tags": ["hide-input"], "load": "x.py"}) is None
    said = []
    monkeypatch.setattr(page_sources.logger, "warning", lambda text, **where: said.append((text, where["location"])))
    fence = "```{code-cell} ipython3\n"
    source = ["# A page\n\n" + fence + "---\ntags: remove-output\nname: a\n---\nprint(1)\n```\n\n"
              + fence + ":created: 2024-01-01\nprint(2)\n```\n\n" + fence + "---\ntags: [hide-input]\n---\nprint(3)\n```\n"]
    page_sources.refuse_malformed_cell_metadata(None, "page", source)
    assert source[0] == ("# A page\n\n" + fence + "---\nname: a\n---\nprint(1)\n```\n\n" + fence + "print(2)\n```\n\n"
                         + fence + "---\ntags: [hide-input]\n---\nprint(3)\n```\n")
    assert [text.split(":")[0] for text, _ in said] == ["code cell 2", "code cell 1"]


@pytest.mark.unit
def test_a_bold_label_and_quoted_code_alone_is_a_line_of_quoted_messages():
    from docutils import nodes

    from book_extensions.site.readable_layout import quoted_messages, wbr

    def paragraph(*children):
        return nodes.paragraph("", "", *children)

    code = lambda text: nodes.literal(text, text)  # noqa: E731
    assert quoted_messages(paragraph(nodes.Text(""), nodes.strong("Message:", "Message:"), nodes.Text(" "),
                                     code("modified by")))
    assert quoted_messages(paragraph(nodes.strong("错误信息", "错误信息"), nodes.Text("："), code("a"), wbr(),
                                     nodes.Text("，"), code("b")))
    assert not quoted_messages(paragraph(nodes.strong("Fix:", "Fix:"), nodes.Text(" call "), code("detach()")))
    assert not quoted_messages(paragraph(nodes.Text("See "), nodes.strong("x", "x"), code("y")))
    assert not quoted_messages(paragraph(nodes.strong("Message:", "Message:")))


@pytest.mark.unit
def test_a_doctree_of_another_page_fails_the_build(monkeypatch, tmp_path):
    # Attack 12, case 19: two doctrees swapped in the build folder published one page's body
    # under the other's title, exit 0.
    from types import SimpleNamespace

    from docutils.utils import new_document

    from book_extensions.checks import page_sources

    warned = []
    monkeypatch.setattr(page_sources.logger, "warning", lambda message, **kind: warned.append((message, kind["location"])))
    app = SimpleNamespace(env=SimpleNamespace(doc2path=lambda docname: tmp_path / "en" / f"{docname}.md"))
    page_sources.refuse_another_pages_doctree(app, new_document(str(tmp_path / "en" / "index.md")), "index")
    assert warned == []
    page_sources.refuse_another_pages_doctree(app, new_document(str(tmp_path / "en" / "second.md")), "index")
    assert warned == [(f"the build folder's doctree of this page is another page's ({tmp_path}/en/second.md): the "
                       "build folder is damaged; build again (every page is read again)", "index")]


@pytest.mark.unit
def test_a_long_name_breaks_only_between_words_of_five_characters_or_more():
    # helper-110: "set_ | model_state_dict", "torch.is_ | inference_mode_enabled()", "…limit_ | hit".
    from book_extensions.site.readable_layout import name_pieces

    assert name_pieces("set_model_state_dict") == ["set_model_", "state_dict"]
    assert name_pieces("fail_on_recompile_limit_hit") == ["fail_on_", "recompile_", "limit_hit"]
    assert name_pieces("torch.is_inference_mode_enabled()") == ["torch.is_inference_", "mode_", "enabled()"]
    assert name_pieces("_checkpoint_wrapped_module") == ["_checkpoint_", "wrapped_", "module"]
    assert name_pieces("requires_grad_") == ["requires_grad_"]  # short: whole
    # Before a capital too (an exercise's choice ran 28 px past its edge at 320 px).
    assert name_pieces("CompiledFunctionBackward True") == ["Compiled", "Function", "Backward True"]
    assert name_pieces("MixedPrecisionPolicy") == ["MixedPrecision", "Policy"]
    assert name_pieces("FailOnRecompileLimitHit") == ["FailOn", "Recompile", "LimitHit"]
    assert name_pieces("ToCopyBackward0") == ["ToCopyBackward0"]  # short: whole


@pytest.mark.unit
def test_a_chinese_header_breaks_between_its_words_only():
    # helper-99: the zh cheat sheet's narrow columns broke 共享版本计/数器 and 原计算/图的反向/传播.
    from types import SimpleNamespace

    from docutils import nodes

    from book_extensions.site.readable_layout import break_headers_between_words, wbr

    def entry(*children):
        return nodes.entry("", nodes.paragraph("", "", *children))

    head = nodes.row("", entry(nodes.Text("共享版本计数器")), entry(nodes.Text("结果的 "), nodes.literal("grad_fn", "grad_fn")),
                     entry(nodes.Text("tool")), entry(nodes.Text("原计算图的反向传播")))
    body = nodes.row("", entry(nodes.Text("计算图")), entry(nodes.Text("x")), entry(nodes.Text("y")), entry(nodes.Text("z")))
    table = nodes.table("", nodes.tgroup("", nodes.thead("", head), nodes.tbody("", body)))
    break_headers_between_words(SimpleNamespace(builder=SimpleNamespace()), table)
    shown = [["|" if isinstance(node, wbr) else node.astext() for node in cell.children[0].children] for cell in head.children]
    # No line starts with 的 (helper-101): it stays with the word before it. (Here jieba lacks the
    # book's terms, which a build's Chinese search gives it: 计算图, 反向传播 stay whole there.)
    assert shown == [["共享", "|", "版本", "|", "计数器"], ["结果的", "|", " ", "grad_fn"], ["tool"],
                     ["原", "|", "计算", "|", "图的", "|", "反向", "|", "传播"]]
    def text(node):
        return "".join(part.astext() for part in node.findall(nodes.Text))

    assert text(body) == "计算图xyz" and not list(body.findall(wbr))  # the body is left alone
    assert text(head) == "共享版本计数器结果的 grad_fntool原计算图的反向传播"  # what is searched and compared is the same


@pytest.mark.unit
def test_a_chinese_section_title_breaks_between_its_words_only_and_an_english_one_is_left_alone():
    # helper-112: at 320 px the zh accumulation page's heading broke DDP 下的梯度累 / 积.
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document

    from book_extensions.site.readable_layout import label_tables_and_titles, wbr

    def page():
        document = new_document("page", get_default_settings())
        section = nodes.section("", nodes.title("", "", nodes.Text("DDP 下的梯度累积："), nodes.literal("no_sync()", "no_sync()"),
                                              nodes.Text("（“一步”）")),
                                nodes.paragraph("", "梯度累积"))
        document += section
        return document, section

    def app(language):
        return SimpleNamespace(builder=SimpleNamespace(name="html"), config=SimpleNamespace(language=language))

    chinese, section = page()
    label_tables_and_titles(app("zh_CN"), chinese, "accumulation")
    title, paragraph = section.children
    assert [("|" if isinstance(node, wbr) else node.astext()) for node in title.children] == [
        "DDP 下的", "|", "梯度累积：", "no_sync()", "（“一步”）"]  # no line starts with "：" nor ends with "（"
    assert title.astext() == "DDP 下的梯度累积：no_sync()（“一步”）"  # what the search reads
    assert not list(paragraph.findall(wbr))  # prose keeps the browser's own line breaking
    english, _ = page()
    label_tables_and_titles(app("en"), english, "accumulation")
    assert not list(english.findall(wbr))
    # helper-113: no break inside Latin text, nor inside a term jieba cuts in two, nor before a
    # place word after its noun; 后 starts a word (后端) as often as it ends one.
    for heading, pieces in (("torch.func 与前向模式", ["torch.func ", "与", "前向", "模式"]),
                            ("在推理模式下创建的视图", ["在", "推理", "模式下", "创建的", "视图"]),
                            ("存下来的后端", ["存", "下来的", "后端"])):
        document = new_document("page", get_default_settings())
        document += nodes.section("", nodes.title("", heading))
        label_tables_and_titles(app("zh_CN"), document, "page")
        title = next(iter(document.findall(nodes.title)))
        assert [node.astext() for node in title.children if not isinstance(node, wbr)] == pieces, heading


@pytest.mark.unit
def test_a_page_named_as_a_page_sphinx_writes_is_refused_and_found_again_next_build(caplog):
    # Attack 8, cases 15 and 25a: docs/en/search.md and py-modindex.md were silently replaced by
    # Sphinx's own search page and module index.
    from types import SimpleNamespace

    from book_extensions.checks.page_sources import refuse_sphinx_page_names

    # Attack 9, cases 31 and 9: a page under offline/ was deleted when the editions were copied
    # in, and one under _extra/ had no twin checked by a one-language build.
    names = ["intro", "notes/search", "py-modindex", "search", "offline/guide", "_extra/page", "notes/_drafts/p",
             "notes/offline/p"]
    env = SimpleNamespace(project=SimpleNamespace(docnames=set(names)))
    docnames = list(names)
    refuse_sphinx_page_names(None, env, docnames)
    assert docnames == ["intro", "notes/search", "notes/offline/p"]
    assert env.project.docnames == {"intro", "notes/search", "notes/offline/p"}  # so the next build finds it again
    assert "a page may not be in the folder offline/: offline/ holds the offline editions" in caplog.text
    assert "a page may not be in the folder notes/_drafts/" in caplog.text
    assert "a page may not be named search: Sphinx writes its own search.html in its place" in caplog.text
