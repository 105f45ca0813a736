"""The Chinese edition's rules that fixed strings cannot hold, each proven on a fixture.

- term rules by meaning (docs/terms.zh.toml's [[term.pattern]]): 记录…损失 is 记入日志, 截断
  outside 截断的时间反向传播 is 切断, 为它要求梯度 and the ordinary 要求 beside 要求梯度 are
  rephrased; checked in headings (page titles), captions, notes, link texts and the site's
  interface strings, never in code;
- CJK text in code font, and a chapter or section named as plain quoted text, fail the zh build;
- sentences over 120 Han characters are a report (python -m book_extensions typography);
- the glossary's term table speaks the page's language, and the interface strings read well:
  one title separator, the site's title once, no "© 版权所有".
"""

import re
import shutil
from types import SimpleNamespace

import pytest
from books import FIXTURES, ROOT, assert_one_line_config_error, assert_reported, build_book, warnings_of

# Through the modules, so that on code without a rule each test fails on its own.
from book_extensions import build_state
from book_extensions.checks import prose, typography

TERMS = ROOT / "docs" / "terms.zh.toml"
PAGE = FIXTURES / "zh_rules_pages" / "docs" / "zh" / "index.md"

# (line, what is reported) on the fixture page, with the book's own term list.
TERM_FINDINGS = [
    (9, "截断"),  # the page's title: the side bar's and <title>'s too
    (14, "截断"),  # a toctree's caption
    (19, "要求这个梯度"),
    (21, "为它要求梯度"),
    (27, "要求"),  # the ordinary 要求 in a sentence that uses the term
    (31, "记录每个损失"),
    (33, "记录下来的损失"),
    (35, "记录或打印损失"),
    (41, "梯度截断"),  # once, as 停止梯度's variant, not also as 截断
    (43, "截断"),  # an admonition's title
    (44, "记录每个损失"),  # ... and its body
    (48, "截断"),  # {only}'s body
    (51, "截断"),  # a link's text
]


def test_the_book_term_list_catches_what_strings_missed():
    terms = prose.load_terms(TERMS)
    found = [(f.line, f.text) for f in prose.term_findings(PAGE.read_text(encoding="utf8"), terms)]
    assert found == TERM_FINDINGS


@pytest.mark.parametrize("sentence, found", [
    ("部分截断与自定义梯度", ["截断"]),
    ("这就是截断的时间反向传播。", []),
    ("截断的随时间反向传播", ["截断的随时间反向传播"]),  # a variant of that term, reported once
    ("用上述三种方式分别记录每个损失。", ["记录每个损失"]),
    ("在训练循环中，记录下来的损失让计算图的节点继续存活。", ["记录下来的损失"]),
    ("只需要张量的数值，用来记录日志。", ["记录日志"]),
    ("把损失值记录下来。", ["损失值记录"]),
    ("计算图根本没有记录下来：要么损失是在 no_grad 里算的。", []),
    ("于是训练时要求这个梯度对权重的导数。", ["要求这个梯度"]),
    ("但完全可以重新为它要求梯度。", ["为它要求梯度"]),
    ("给这些参数要求梯度。", ["给这些参数要求梯度"]),
    ("因为它要求梯度，autograd 才记录运算。", []),
    ("不能把整数张量赋给一个要求梯度的张量。", []),
    ("对不要求梯度的张量求梯度。", []),
    ("一个标志（本书称之为“要求梯度”）。", []),
    ("改为让它要求梯度。", []),
    ("这个函数要求输入是二维的，而输出要求梯度。", ["要求"]),
    ("这个函数要求输入是二维的。输出要求梯度。", []),
    ("冻结本身并不要求这样拆。", []),
])
def test_each_rule_in_one_sentence(sentence, found):
    assert [f.text for f in prose.text_findings(1, sentence, prose.load_terms(TERMS))] == found


def test_what_a_reader_reads_is_checked_and_code_is_not():
    text = ("---\ntitle: x\n---\n# 标题\n"
            "```{toctree}\n:caption: 目录名\n:maxdepth: 2\n\npage\n```\n"
            "```{code-cell} ipython3\nprint('代码')\n```\n"
            "````{note}\n注释正文\n```python\n注释里的代码\n```\n````\n"
            "```{admonition} 提示标题\n:class: tip\n提示正文\n```\n"
            "```{doctest}\n>>> '测试'\n```\n"
            "见{doc}`链接文字 <target>`、{ref}`label`、`行内代码`和[外链](https://x.org/路径)。\n")
    lines = [(number, " ".join(line.split())) for number, line in prose.reader_lines(text) if line.strip()]
    assert lines == [(4, "# 标题"), (6, "目录名"), (15, "注释正文"), (20, "提示标题"), (22, "提示正文"),
                     (27, "见 链接文字 、 、 和[外链 。")]  # a link's text; not its target, nor code


def test_the_build_reports_each_rule_naming_page_and_line(tmp_path, fixture_cache):
    docs = tmp_path / "src" / "docs"
    shutil.copytree(FIXTURES / "zh_rules_pages" / "docs", docs)
    shutil.copy(TERMS, docs / "terms.zh.toml")  # the book's own rules, not a fixture's copy
    build = build_book(docs, tmp_path, "html", "--language", "zh", cache=fixture_cache)
    assert build.returncode != 0
    warnings = warnings_of(build.output)
    terms = [line for line in warnings if "[book.term]" in line]
    assert_reported(build.output, [(f"zh/index.md:{line}", f"{text!r}") for line, text in TERM_FINDINGS])
    assert len(terms) == len(TERM_FINDINGS), terms
    expected = [
        ("zh/index.md:60", "CJK text in code font '(节点, 序号)'"),
        ("zh/index.md:62", "CJK text in code font '下载 example.txt'"),
        ("zh/index.md:64", "a chapter or section named as plain text, “另一页”一章"),
        ("zh/index.md:68", "a chapter or section named as plain text, “.detach_()”一章"),
    ]
    assert_reported(build.output, expected)
    rules = [line for line in warnings if "[book.zh_rules]" in line]
    assert len(rules) == len(expected), rules
    # The English twin breaks none of the Chinese rules, and nothing else was reported.
    assert not [line for line in warnings if "en/" in line]


@pytest.mark.parametrize("content, cause", [
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n", "the entry [[term]] '切断': needs a non-empty list 'not' of words"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\nnot = ['截断']\nexcept = ['x']\n",
     "the entry [[term]] '切断': unknown key 'except'"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n[[term.pattern]]\nfind = '截断('\n",
     "the entry [[term]] '切断': pattern 1: 'find' is not a regular expression"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n[[term.pattern]]\nfind = '截断'\nexcept = ['[']\n",
     "pattern 1: 'except' is not a regular expression"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n[[term.pattern]]\nfind = '截断'\nexcpet = ['x']\n",
     "pattern 1: unknown key 'excpet'"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n[[term.pattern]]\nnear = '截断'\n", "pattern 1: missing 'find'"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n[[term.pattern]]\nfind = '截断'\nwithin = 3\n",
     "pattern 1: 'within' needs 'near'"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\n[[term.pattern]]\nfind = '记录'\nnear = '损失'\nwithin = -1\n",
     "'within' must be a number of characters"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\nmeaning_zh = ''\nnot = ['截断']\n", "must be non-empty strings"),
    ("[[term]]\nuse = '切断'\nmeaning = 'cut'\npattern = '截断'\n", "must be [[term.pattern]] tables"),
    ("[[term]]\nmeaning = 'cut'\nnot = ['截断']\n", "the entry [[term]] number 1: missing 'use'"),
])
def test_a_bad_rule_is_one_line_naming_the_file_and_entry(tmp_path, content, cause):
    assert_one_line_config_error(prose.load_terms, tmp_path / "terms.zh.toml", content, cause)


def test_the_site_title_and_interface_strings_are_checked(monkeypatch):
    config = SimpleNamespace(project="部分截断", html_title="部分截断", language="zh_CN")
    reported = []
    monkeypatch.setattr(prose.logger, "warning", lambda message, **kw: reported.append((kw["location"], message)))
    srcdir = str(TERMS.parent / "zh")
    app = SimpleNamespace(config=config, srcdir=srcdir)
    build_state.run(app).terms = ("docs/terms.zh.toml", prose.load_terms(TERMS))
    prose.check_interface(app)
    assert reported and reported[0][0] == "conf.py (book_languages: project)" and "'截断'" in reported[0][1]
    assert len(reported) == 1  # the catalogs themselves are clean (and html_title, equal, is not read twice)
    where = [place for place, _ in prose.interface_texts(SimpleNamespace(config=config, srcdir=srcdir))]
    assert any(place.startswith("book_extensions/locale/zh_CN/LC_MESSAGES/book.po:") for place in where)
    assert any(place.startswith("docs/exercises.toml (") for place in where)  # the index's headings
    assert any(place.startswith("book_extensions/locale/zh_CN/LC_MESSAGES/sphinx.po:") for place in where)


def test_long_sentences_are_a_report(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("# 标题\n\n" + "汉" * 121 + "。" + "字" * 120 + "。\n\n```{code-cell} ipython3\n'" + "码" * 200
                    + "'\n```\n" + "`" + "码" * 130 + "`，短句。\n", encoding="utf8")
    assert [(line, count) for line, count, _ in typography.long_sentences(page.read_text(encoding="utf8"))] == [(3, 121)]
    assert typography.main([str(page)]) == 0
    out = capsys.readouterr().out
    assert "page.md:3: 121 Han characters" in out and "1 sentences over 120 Han characters in 1 pages" in out


def test_every_term_has_a_chinese_meaning():
    for term in prose.load_terms(TERMS):
        assert "zh" in term.meanings, term.use
        assert not any(word in term.meanings["zh"] for word in ("is the verb", "reads as")), term.use


def test_the_chinese_catalog_reads_well():
    from babel.messages.pofile import read_po

    def strings(name):
        with (ROOT / "book_extensions" / "locale" / "zh_CN" / "LC_MESSAGES" / name).open("rb") as file:
            return {(message.context, message.id): message.string for message in read_po(file) if message.id}

    book, sphinx = strings("book.po"), strings("sphinx.po")
    one = next(text for (context, _), text in book.items() if context == "releases_differ_one")
    assert "这些" not in one and "1 个" in one  # a count of one
    not_found = next(text for (context, _), text in book.items() if context == "not_found")
    hint = next(text for (context, _), text in book.items() if context == "not_found_hint")
    assert not not_found.endswith("。") and "地址" in hint  # a heading, then why and what to check
    assert not any("您" in text for text in [*book.values(), *sphinx.values()])  # the book says 你
    assert sphinx[(None, "© Copyright %(copyright)s.")] == "© %(copyright)s。"  # © is the word


@pytest.fixture(scope="session")  # one worker builds it, once a run (conftest.py: FIXTURE_BOOKS)
def interface(tmp_path_factory):
    build = build_book(FIXTURES / "zh_rules_interface" / "docs", tmp_path_factory.mktemp("zh-rules-interface"))
    assert build.returncode == 0, build.output
    return build


def title_of(path) -> str:
    import re

    return re.search(r"<title>(.*?)</title>", path.read_text(encoding="utf8"), re.S).group(1).strip()


@pytest.mark.fixture
def test_one_title_separator_and_the_site_title_once(interface):
    for language, site, search_word in (("en", "Cutting the Graph", "Search"), ("zh", "切断计算图", "搜索")):
        folder = interface.site() / language
        assert title_of(folder / "index.html") == site  # the home page's title is the site's: once
        assert title_of(folder / "terms.html") == f"{'Terms' if language == 'en' else '术语'} — {site}"
        assert title_of(folder / "search.html") == f"{search_word} — {site}"  # not "搜索 - 切断计算图"


@pytest.mark.fixture
def test_the_footer_says_copyright_once(interface):
    page = (interface.site() / "zh" / "index.html").read_text(encoding="utf8")
    assert "© 2026 《切断计算图》作者。" in page and "版权所有" not in page


@pytest.mark.fixture
def test_the_term_list_speaks_the_page_language(interface):
    from bs4 import BeautifulSoup

    def entries(language):
        page = BeautifulSoup((interface.site() / language / "terms.html").read_text(encoding="utf8"), "html.parser")
        terms = page.select("dl.book-term-list > dt")
        assert not page.select(".book-term-list .book-cell-label")  # no label repeated on each entry
        return [[term.get_text().strip(), term.find_next_sibling("dd").get_text().strip()] for term in terms]

    # The word and its meaning only: the variants and patterns are the build's rules, not the reader's.
    zh = entries("zh")
    assert zh == [["切断", "让反向传播不再经过计算图的某处，如 detach()。"],
                  ["错误信息", "程序出错时给出的说明文字。“报错”是动词，不当名词用。"]]
    # An identifier in `backticks` is in code font, as in the pages.
    page = (interface.site() / "zh" / "terms.html").read_text(encoding="utf8")
    assert re.search(r"如 <code[^>]*>(<span[^>]*>)?detach\(\)", page), page
    assert "报错信息" not in page
    assert entries("en") == [["切断", "cutting the graph, as detach() does"],
                             ["错误信息", "an error message (报错 is the verb, never the noun)"]]


@pytest.mark.unit
def test_every_interface_string_is_translated_with_the_same_placeholders():
    import string

    from babel.messages.pofile import read_po

    from book_extensions.configuration.messages import ENGLISH

    po = ROOT / "book_extensions" / "locale" / "zh_CN" / "LC_MESSAGES" / "book.po"
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
