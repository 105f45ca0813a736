"""The Chinese edition keeps one word per concept: a variant from docs/terms.zh.toml in a
page's prose fails the build, naming the page and the line."""

import pytest
from books import ROOT, assert_one_line_config_error, assert_reported

from book_extensions.checks.prose import Term, load_terms, term_findings

REQUIRES_GRAD = Term("要求梯度", "requires_grad", ("需要梯度",), ("不需要梯度信息",))


def test_variants_are_found_in_prose_only():
    text = ("---\ntitle: 需要梯度\n---\n"
            "需要梯度的张量。\n"
            "```{code-cell} ipython3\nprint('需要梯度')\n```\n"
            "行内代码 `需要梯度` 不算；这一步不需要梯度信息。\n"
            "要求梯度的张量，以及两处需要梯度和需要梯度。\n")
    assert [(finding.line, finding.text) for finding in term_findings(text, [REQUIRES_GRAD])] == [
        (4, "需要梯度"), (9, "需要梯度"), (9, "需要梯度")]


def test_the_build_refuses_a_variant(build_fixture):
    build = build_fixture("term_variants")
    assert build.returncode != 0
    assert_reported(build.output, [("zh/index.md:17", "'需要梯度' is not this edition's word for requires_grad: write '要求梯度'")])
    assert len([line for line in build.output.splitlines() if "[book.term]" in line]) == 1


@pytest.mark.parametrize("content, cause", [
    ("[[term]]\nuse = '要求梯度'\n", "missing 'meaning'"),
    ("[[term]\n", "Expected"),
    ("[[term]]\nuse = '要求梯度'\nmeaning = 'requires_grad'\nnot = []\n", "needs a non-empty list 'not'"),
    ("title = 'no terms'\n", "missing 'term'"),
])
def test_a_broken_term_list_is_one_line_naming_the_file(tmp_path, content, cause):
    assert_one_line_config_error(load_terms, tmp_path / "terms.zh.toml", content, cause)


def test_the_book_uses_its_terms():
    terms = load_terms(ROOT / "docs" / "terms.zh.toml")
    assert terms
    pages = sorted((ROOT / "docs" / "zh").glob("*.md"))
    found = {f"{page.name}:{finding.line}": finding.text for page in pages
             for finding in term_findings(page.read_text(encoding="utf8"), terms)}
    assert found == {}

