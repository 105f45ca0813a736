"""The real book passes every gate, in both languages."""

import json
import re

import pytest

from book_extensions import parity
from book_extensions.execution import EXECUTIONS_FILE
from book_extensions.offline import check_site
from conftest import ROOT, build_book
from site_checks import english_words, search

pytestmark = pytest.mark.book

ALLOWED_IN_ZH = {"Ctrl", "PyTorch", "torch", "CPU", "GPU", "PDF", "cpu"}


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    work = tmp_path_factory.mktemp("book")
    build = build_book(ROOT / "docs", work)
    assert build.returncode == 0, build.output
    return build


def test_both_languages_have_the_same_structure():
    assert parity.main([str(ROOT / "docs")]) == 0


def test_the_chinese_build_executes_nothing(book):
    report = book.out / "cpu" / "doctrees" / "zh" / EXECUTIONS_FILE
    assert json.loads(report.read_text())["executed"] == []


def test_chinese_search_finds_the_book(book):
    zh = book.site() / "zh"
    assert "article" in search(zh, "计算图")
    assert "article" in search(zh, "梯度")
    assert "article" in search(zh, "版本计数器")


def test_the_book_loads_nothing_from_other_hosts(book):
    assert check_site(book.site()) == []


def heading_words() -> set[str]:
    """Latin words in the Chinese headings (a heading may name `.detach()` or NumPy)."""
    words = set()
    for page in (ROOT / "docs" / "zh").glob("*.md"):
        for line in page.read_text(encoding="utf8").splitlines():
            if re.match(r"#+ ", line):
                words |= set(re.findall(r"[A-Za-z]{2,}", line))
    return words


def test_the_chinese_interface_is_chinese(book):
    # Sections hold the prose, where Chinese text names sigmoid or autograd as it
    # should; navigation repeats the headings, which may too.
    allowed = ALLOWED_IN_ZH | heading_words()
    for page in sorted((book.site() / "zh").glob("*.html")):
        assert english_words(page, "zh", allowed, frozenset({"section"})) == set(), page.name
