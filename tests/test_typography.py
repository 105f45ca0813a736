"""The Chinese edition's typography: autocorrect-py on its sources, and the checks on its
built pages (spaces around links and bold text, italics, half-width and spaced punctuation)
fail the build, naming the page and the line; code, outputs and the English edition are
never checked."""

import pytest
from books import ROOT, assert_one_line_config_error, assert_reported, warnings_of

from book_extensions.checks.typography import CONFIG, read_config

SPACE = "(a space only next to Latin text or code)"


def test_the_build_refuses_each_break_of_the_rules(sphinx_book):
    en, zh = sphinx_book("cjk_typography", "en"), sphinx_book("cjk_typography", "zh")
    assert zh.statuscode != 0
    output = en.warning.getvalue() + zh.warning.getvalue()
    expected = [
        ("zh/index.md:20", "a space between CJK text and '另一页'"),  # {doc} pulls in a CJK title
        ("zh/index.md:22", "a space between '另一页' and the CJK text after it"),
        ("zh/index.md:22", "a section or chapter named in a sentence is quoted: “另一页”一章"),
        ("zh/index.md:26", "a space between CJK text and '一节'"),  # {ref}, likewise
        ("zh/index.md:30", "italics on CJK text '斜体': CJK emphasis is bold"),
        ("zh/index.md:32", "a space between CJK text and '粗体'"),
        ("zh/index.md:32", "a space between '粗体' and the CJK text after it"),
        ("zh/index.md:34", "half-width ',' after CJK text"),
        ("zh/index.md:34", "autocorrect: '半角逗号紧跟汉字,应当报出。' should read '半角逗号紧跟汉字，应当报出。'"),
        ("zh/index.md:38", "a space next to full-width punctuation in '含义。 全角句号后面'"),
        ("zh/index.md:40", "a space next to full-width punctuation in '错误信息中的 “elemen'"),
        ("zh/index.md:40", "a space next to full-width punctuation in '的 “element 0” 指的是第一"),
        ("zh/index.md:40", "autocorrect: '错误信息中的 “element 0” 指的是第一个张量。'"),
        ("zh/index.md:42", "autocorrect: '在PyTorch里，"),
        ("zh/index.md:48", "a section or chapter named in a sentence is quoted: “另一页”一章"),
        ("zh/index.md:50", "a line break inside Chinese text shows as a space"),
    ]
    assert_reported(output, expected)
    reported = [line for line in warnings_of(output) if "[book.typography]" in line or "[book.cjk_line_break]" in line]
    # Nothing else: not the lines that follow the rules, not code or outputs, not English.
    assert len(reported) == len(expected), reported
    assert all("zh/index.md:" in line for line in reported)
    assert SPACE in "\n".join(reported)


@pytest.mark.parametrize("content, cause", [
    ("rules: [1\n", "not an autocorrect config"),
    ("- space-word\n", "expected a 'rules:' mapping"),
    ("rules:\n  space-wrod: 1\n", "unknown autocorrect rule 'space-wrod'"),
    ("rules:\n  space-word: 2\n", "rule 'space-word' is 2: 1 checks it, 0 leaves it alone"),
    ("rules:\n  space-word: true\n", "rule 'space-word' is True"),
])
def test_a_broken_config_is_one_line_naming_the_file(tmp_path, content, cause):
    # autocorrect itself would ignore all of these and check with its defaults.
    assert_one_line_config_error(read_config, tmp_path / CONFIG, content, cause)


def test_the_chinese_sources_pass_autocorrect():
    import autocorrect_py

    autocorrect_py.load_config(read_config(ROOT / CONFIG))
    found = [f"{page.name}:{line.line}: {line.old.strip()[:40]!r} -> {line.new.strip()[:40]!r}"
             for page in sorted((ROOT / "docs" / "zh").glob("*.md"))
             for line in autocorrect_py.lint_for(page.read_text(encoding="utf8"), page.name).lines]
    assert found == []


def test_line_breaks_inside_chinese_prose_are_found():
    from book_extensions.checks.typography import cjk_line_breaks

    text = "# 标题\n\n第一行，\n第二行。\n\n```{code-cell} ipython3\nprint('中\\n文')\n```\nEnglish\n代码\n末尾\n"
    assert cjk_line_breaks(text) == [3, 10]
