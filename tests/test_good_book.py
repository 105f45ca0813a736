"""A small correct book builds, in both languages, the way the real one must."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from books import FIXTURES, ROOT, build_book
from bs4 import BeautifulSoup
from site_checks import ALLOWED_IN_ZH, english_words, search

from book_extensions.execution.page_execution import EXECUTIONS_FILE

pytestmark = pytest.mark.fixture


@pytest.fixture(scope="session")  # one worker builds it, once a run (conftest.py: FIXTURE_BOOKS)
def good(tmp_path_factory):
    # West of UTC: a cached page's UTC time read as local time would look newer than the build.
    build = build_book(FIXTURES / "good" / "docs", tmp_path_factory.mktemp("good"), tz="America/New_York")
    assert build.returncode == 0, build.output
    return build


def executed(build, language):
    report = build.out / "cpu" / "doctrees" / language / EXECUTIONS_FILE
    return json.loads(report.read_text())["executed"]


def soup(html: Path) -> BeautifulSoup:
    return BeautifulSoup(html.read_text(encoding="utf8"), "html.parser")


def cell_outputs(html: Path) -> list[str]:
    return [str(div) for div in soup(html).select("div.cell_output")]


def test_the_second_language_executes_nothing(good):
    assert executed(good, "en") == ["index", "second"]
    assert executed(good, "zh") == []


def provenance_dates(build, language) -> set[str]:
    return {re.search(r"\d{4}-\d{2}-\d{2}", soup(build.site() / language / page).select_one(".book-provenance")
                      .get_text()).group() for page in ("index.html", "second.html")}


def test_far_east_of_utc_both_languages_state_the_same_date(tmp_path):
    build = build_book(FIXTURES / "good" / "docs", tmp_path, tz="Pacific/Kiritimati")
    assert build.returncode == 0, build.output
    assert executed(build, "zh") == []
    assert provenance_dates(build, "en") == provenance_dates(build, "zh")
    assert len(provenance_dates(build, "en")) == 1


def test_outputs_are_clean(good):
    for language in ("en", "zh"):
        html = (good.site() / language / "index.html").read_text(encoding="utf8")
        assert "object at 0x…" in html
        assert not re.search(r"0x[0-9a-f]{6,}", html)
        # The warning is printed as readers quote it, without the file that warned.
        assert "UserWarning: To copy construct from a tensor" in html
        assert "ipykernel_" not in html and str(good.out) not in html
        # The expected error is shown.
        assert "RuntimeError" in html and "modified by an inplace operation" in html


def published(build, language: str) -> dict[str, bytes]:
    """Every file of a language's published site, the day its outputs were produced blanked
    (two builds either side of midnight, UTC, state two days)."""
    site = build.site() / language
    (day,) = provenance_dates(build, language)
    return {path.relative_to(site).as_posix(): path.read_bytes().replace(day.encode(), b"YYYY-MM-DD")
            for path in sorted(site.rglob("*")) if path.is_file()}


def test_two_cold_builds_publish_the_same_files(good, tmp_path):
    # A reproducible site: another build from an empty cache, at another time, in another
    # folder, publishes the same bytes (the downloadable notebooks' cell ids had been random).
    again = build_book(FIXTURES / "good" / "docs", tmp_path, "html", "--language", "en")
    assert again.returncode == 0, again.output
    for page in ("index.html", "second.html"):
        first = cell_outputs(good.site() / "en" / page)
        assert first and first == cell_outputs(again.site() / "en" / page)
    first, second = published(good, "en"), published(again, "en")
    assert sorted(first) == sorted(second) and len(first) > 20
    assert [name for name in first if first[name] != second[name]] == []


def test_a_second_execution_prints_the_same(good):
    check = subprocess.run([sys.executable, "-m", "book_extensions", "determinism", "--docs",
                            str(FIXTURES / "good" / "docs"), "--cache-root", str(good.cache)],
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "printed differently" in check.stdout and check.stderr == ""


def test_every_page_states_its_provenance(good):
    from book_extensions.execution.cache_key import torch_version

    for language, words in (("en", "Outputs on this page were produced by torch"), ("zh", "本页输出是在 CPU 上用 torch")):
        for page in ("index.html", "second.html"):
            html = (good.site() / language / page).read_text(encoding="utf8")
            assert words in html and torch_version() in html and "CPU" in html


def test_languages_link_to_each_other(good):
    for language, lang_attr in (("en", "en"), ("zh", "zh-CN")):
        for page in ("index", "second"):
            html = (good.site() / language / f"{page}.html").read_text(encoding="utf8")
            assert f'<html lang="{lang_attr}"' in html
            other = "zh" if language == "en" else "en"
            links = soup(good.site() / language / f"{page}.html").select("a.book-language")
            assert f"../{other}/{page}.html" in [a["href"] for a in links]


def test_without_a_base_url_no_page_has_a_relative_search_engine_address(good):
    # Search engines refuse a relative hreflang (Lighthouse: "Relative href value"), a
    # canonical URL or og:url must be absolute: without book_base_url there are none.
    # (The visible language switch links relatively: test_languages_link_to_each_other.)
    pages = sorted(good.site().rglob("*.html"))
    assert len(pages) > 6
    for path in pages:
        page = soup(path)
        found = [str(tag) for tag in page.select('link[hreflang], link[rel="canonical"], meta[property="og:url"]')]
        assert found == [], path


def test_the_root_page_offers_both_languages(good):
    root = (good.site() / "index.html").read_text(encoding="utf8")
    assert '<a href="en/index.html" hreflang="en"' in root
    assert '<a href="zh/index.html" hreflang="zh-CN"' in root
    assert "navigator.languages" in root


def test_chinese_search_finds_chinese_words(good):
    zh = good.site() / "zh"
    assert search(zh, "梯度") == {"index"}
    assert search(zh, "计算图") == {"index"}
    assert "second" in search(zh, "叶子张量")  # index lists it in its toctree too
    assert search(zh, "不存在的词") == set()


def test_the_chinese_interface_is_chinese(good):
    for page in ("index.html", "second.html", "search.html"):
        assert english_words(good.site() / "zh" / page, "zh", ALLOWED_IN_ZH) == set(), page
    assert not (good.site() / "zh" / "genindex.html").exists()  # the book has no index: no empty page


def test_the_chinese_interface_corrects_sphinxs_tooltip_and_keeps_the_books_words(good):
    # The book's catalog comes before Sphinx's own (conf.py's locale_dirs): Sphinx's
    # "链接到此标题。" loses its full stop, and the theme's strings stay the book's.
    page = (good.site() / "zh" / "index.html").read_text(encoding="utf8")
    assert 'title="链接到此标题"' in page and "链接到此标题。" not in page
    assert ">跳到正文</a>" in page


def test_the_interface_check_would_see_english(good):
    # The check above is only worth something if it finds English where there is some.
    assert "Gradients" in english_words(good.site() / "en" / "index.html", "zh", ALLOWED_IN_ZH)


def test_doctests_pass(good):
    build = build_book(FIXTURES / "good" / "docs", good.out.parent, "doctest")
    assert build.returncode == 0, build.output
    assert "[en] doctest ok" in build.output and "[zh] doctest ok" in build.output


def test_the_site_holds_only_the_book(good):
    site = good.site()
    assert sorted(p.name for p in site.iterdir()) == ["404.html", "en", "index.html", "robots.txt", "zh"]
    for language in ("en", "zh"):
        assert not any((site / language / "_sources").rglob("*"))  # Sphinx leaves it empty
        assert not (site / language / "reports").exists()


def test_no_build_machine_path_is_published(good):
    from books import ROOT

    leaks = [str(ROOT), str(good.out), str(good.cache), "site-packages"]
    for path in good.site().rglob("*"):
        if path.is_file() and path.suffix in (".html", ".js", ".css", ".txt", ".py", ".json", ".ipynb"):
            text = path.read_text(encoding="utf8", errors="replace")
            assert not [leak for leak in leaks if leak in text], path


def test_pages_are_shareable_and_the_site_findable(tmp_path):
    build = build_book(FIXTURES / "good" / "docs", tmp_path, "html",
                       sphinx=("-D", "book_base_url=https://book.example/ctg",
                               "-D", "book_repository=owner/book"))
    assert build.returncode == 0, build.output
    site = build.site()
    zh = (site / "zh" / "second.html").read_text(encoding="utf8")
    assert '<link rel="canonical" href="https://book.example/ctg/zh/second.html" />' in zh
    assert '<meta property="og:url" content="https://book.example/ctg/zh/second.html" />' in zh
    assert '<meta property="og:locale" content="zh_CN" />' in zh
    assert '<meta property="og:title" content="叶子张量" />' in zh
    # The first paragraph as written (no space before 。), not the provenance line.
    assert '<meta property="og:description" content="叶子张量没有 grad_fn。" />' in zh
    assert zh.count('<meta name="description"') == 1 and "og:image" not in zh
    # A page with no text of its own is described as the book is (Lighthouse's SEO audit).
    search = (site / "zh" / "search.html").read_text(encoding="utf8")
    (described,) = re.findall(r'<meta name="description" content="([^"]+)">', search)
    assert ".detach()" in described and re.search(r"[\u4e00-\u9fff]", described)
    sitemap = (site / "sitemap.xml").read_text(encoding="utf8")
    assert sitemap.count("<url>") == 4
    assert ('<loc>https://book.example/ctg/zh/second.html</loc>\n'
            '    <xhtml:link rel="alternate" hreflang="en" href="https://book.example/ctg/en/second.html"/>\n'
            '    <xhtml:link rel="alternate" hreflang="zh-CN" href="https://book.example/ctg/zh/second.html"/>\n'
            '    <xhtml:link rel="alternate" hreflang="x-default" href="https://book.example/ctg/en/second.html"/>') in sitemap
    assert "Sitemap: https://book.example/ctg/sitemap.xml" in (site / "robots.txt").read_text()
    assert ('href="https://colab.research.google.com/github/owner/book/blob/notebooks/zh/second.ipynb">'
            '在 Colab 中打开</a>。') in zh
    # Where to report a mistake or edit this very page, in the reader's language.
    assert ('<a href="https://github.com/owner/book/issues/new?title=docs%2Fzh%2Fsecond.md%3A%20&amp;'
            'body=Page%3A%20docs%2Fzh%2Fsecond.md%0A%0A">报告本页的错误</a>') in zh
    assert '<a href="https://github.com/owner/book/edit/main/docs/zh/second.md">编辑本页</a>' in zh
    not_found = (site / "404.html").read_text(encoding="utf8")
    assert 'href="https://book.example/ctg/zh/index.html">回到本书首页' in not_found
    assert 'href="https://book.example/ctg/en/index.html">Go to the start of the book' in not_found
    assert '<section lang="zh-CN"><h1>找不到这个页面</h1><p>地址可能有误，也可能页面已经改名或移走。</p>' in not_found
    assert re.search(r"<title>404 — [^<]+ · [^<]*[\u4e00-\u9fff][^<]*</title>", not_found), not_found


def test_every_page_states_its_licences_in_its_language_and_has_a_favicon(good):
    for language, licence in (("en", "Text: <a href=\"https://creativecommons.org/licenses/by-sa/4.0/\">CC BY-SA 4.0</a>. "
                                     "Code: <a href=\"https://spdx.org/licenses/MIT-0.html\">MIT-0</a>."),
                              ("zh", "文字采用 <a href=\"https://creativecommons.org/licenses/by-sa/4.0/\">CC BY-SA 4.0</a> 许可协议")):
        for page in ("index.html", "second.html"):
            html = (good.site() / language / page).read_text(encoding="utf8")
            assert licence in html, (language, page)
            assert "issues/new" not in html  # no repository set: no report link
            assert '<link rel="icon" href="_static/favicon.svg"/>' in html


def test_the_licences_and_citation_are_complete():
    assert "LICENSES/CC-BY-SA-4.0.txt" in (ROOT / "LICENSE").read_text() and "LICENSES/MIT-0.txt" in (ROOT / "LICENSE").read_text()
    assert "Attribution-ShareAlike 4.0 International" in (ROOT / "LICENSES" / "CC-BY-SA-4.0.txt").read_text()
    assert "MIT No Attribution" in (ROOT / "LICENSES" / "MIT-0.txt").read_text()
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                             "vendor.citation-file-format", str(ROOT / "CITATION.cff")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_page_offers_its_executed_notebook_in_its_language(good):
    for language, title in (("en", "# A small book"), ("zh", "# 一本小书")):
        html = (good.site() / language / "index.html").read_text(encoding="utf8")
        assert 'class="book-notebook reference external" href="_notebooks/index.ipynb"' in html
        notebook = json.loads((good.site() / language / "_notebooks" / "index.ipynb").read_text(encoding="utf8"))
        assert any(title in "".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
        outputs = [o for c in notebook["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
        assert any(o["output_type"] == "error" and o["ename"] == "RuntimeError" for o in outputs)
        assert "0x…" in json.dumps(notebook, ensure_ascii=False)  # addresses blanked as on the page


def test_every_page_the_build_read_was_written(good, monkeypatch):
    """Sphinx drops the error of a parallel writer that fails while it starts the next one, and
    the build ends well with pages missing (site/post_build.py): each build checks that every
    page it read was written, from the pages' own note of being written."""
    from types import SimpleNamespace

    from book_extensions import build_state
    from book_extensions.site import post_build
    from book_extensions.site.post_build import WRITTEN_PAGES, unwritten_pages

    for language in ("en", "zh"):
        doctrees = good.out / "cpu" / "doctrees" / language
        read = json.loads((doctrees / EXECUTIONS_FILE).read_text())["read"]
        assert read and unwritten_pages(read, doctrees / WRITTEN_PAGES) == []
        assert unwritten_pages([*read, "dropped"], doctrees / WRITTEN_PAGES) == ["dropped"]
        assert unwritten_pages(read, doctrees / "missing.log") == sorted(read)
    # And the pages not read that the build asked Sphinx to write again (every page, after a
    # title changed): a writer killed then left the others with the old title (attack 12, case 39).
    doctrees = good.out / "cpu" / "doctrees" / "en"
    read = json.loads((doctrees / EXECUTIONS_FILE).read_text())["read"]
    warned = []
    monkeypatch.setattr(post_build.logger, "warning", lambda message, **kind: warned.append(message))
    app = SimpleNamespace(env=SimpleNamespace(**{build_state.SITE_ATTRIBUTE: build_state.SiteState(read_now=read)}),
                          doctreedir=str(doctrees), outdir=str(good.out / "cpu" / "html-work" / "en"))
    setattr(app, build_state.RUN_ATTRIBUTE, build_state.RunState(written_again=["index", "gone"]))
    post_build.check_every_page_to_write_was_written(app)
    assert warned == ["en: Sphinx did not write gone, which this build read or had to write again (a parallel "
                      "writer failed, and Sphinx dropped its error): nothing is published; build again with "
                      "`-j 1` to see it"]
