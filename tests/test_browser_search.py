"""Search finds the answer: real queries typed into the built site's search page.

tests/test_search_queries.toml holds what readers paste or ask (error messages,
"X vs Y", how-to questions), each with the page that answers it; the page must be
among the first three results that Sphinx's searchtools, with the book's ranking
(book_extensions/static/book-search.js), shows in Chromium. Screenshots of the search
box and results land in _build/screenshots/search-*.png.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from books import SCREENSHOTS
from site_checks import load_search_index

pytestmark = pytest.mark.book

QUERIES = tomllib.loads(Path(__file__).with_name("test_search_queries.toml").read_text(encoding="utf8"))
CASES = [(language, entry["query"], entry["page"]) for language in ("en", "zh") for entry in QUERIES[language]]
TOP = 3


def search_results(page, language: str, query: str) -> list[dict]:
    """Type ``query`` into the search page and return the results as shown, best first."""
    page.goto(f"/{language}/search.html", wait_until="networkidle")
    box = page.locator(".bd-search-container form.bd-search input")
    box.fill(query)
    box.press("Enter")
    # searchtools writes the summary line ("found N pages" or "no match") when it is done.
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results p.search-summary');"
        " return s && s.innerText.trim().length > 0; }", timeout=20000)
    return page.locator("#search-results ul.search > li").evaluate_all(
        """items => items.map(li => ({
            page: new URL(li.querySelector('a').href).pathname.split('/').pop().replace(/\\.html$/, ''),
            title: li.querySelector('a').innerText,
        }))""")


def rank(results: list[dict], expected: str) -> int | None:
    """1-based position of the first result on ``expected``, or None."""
    return next((i for i, r in enumerate(results, 1) if r["page"] == expected), None)


def test_the_query_set_is_large_enough_and_names_real_pages(book):
    for language in ("en", "zh"):
        assert len(QUERIES[language]) >= 15, language
        for entry in QUERIES[language]:
            assert (book.site() / language / f"{entry['page']}.html").is_file(), entry


@pytest.mark.parametrize("language, query, expected", CASES, ids=lambda v: str(v)[:50])
def test_a_real_query_finds_its_page_in_the_top_three(page, language, query, expected):
    results = search_results(page, language, query)
    found = rank(results, expected)
    assert found is not None and found <= TOP, (found, [r["page"] for r in results[:10]])
    assert page.problems == [], page.problems


def letters(text: str) -> str:
    """Only letters and digits: excerpts drop the headings' "#" links and cut at "…"."""
    return re.sub(r"\W+", "", text.replace("…", " ").replace("...", " "))


@pytest.mark.parametrize("language, query", [
    ("en", "detach vs data"),
    ("en", "requires_grad False"),
    ("zh", "detach 和 data 区别"),
    ("zh", "怎么冻结某一层"),
    ("en", CASES[0][1]),  # the pasted in-place error
])
def test_excerpts_are_the_pages_own_text(page, language, query):
    # Sphinx took excerpts from everything in role="main", the theme's colour menu
    # ("System Settings Light Dark", "跟随系统 浅色 深色") included.
    search_results(page, language, query)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#search-results ul.search > li')].slice(0, 5)"
        ".every(li => li.querySelector('p.context'))", timeout=20000)
    shown = page.locator("#search-results ul.search > li").evaluate_all(
        "items => items.slice(0, 5).map(li => [li.querySelector('a').href, li.querySelector('p.context').innerText])")
    assert shown
    texts = {}
    for href, excerpt in shown:
        url = href.split("#")[0]
        if url not in texts:
            # The page as served (the copy buttons' labels are added later, by a script).
            texts[url] = letters(page.evaluate(
                """url => fetch(url).then(r => r.text()).then(html => new DOMParser()
                    .parseFromString(html, 'text/html').querySelector('article.bd-article').textContent)""", url))
        words = letters(excerpt)
        assert words and words in texts[url], (href, excerpt)


def text_start(page, form: str) -> dict:
    """Where the search box's icon ends and its typed text begins, in CSS pixels."""
    return page.evaluate("""form => {
        const f = document.querySelector(form), input = f.querySelector('input'), s = getComputedStyle(input);
        const icon = f.querySelector('.fa-magnifying-glass').getBoundingClientRect();
        const box = input.getBoundingClientRect();
        return {icon_right: icon.right, icon_width: icon.width,
                text_left: box.left + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft)};
    }""", form)


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_search_icon_never_covers_the_typed_text(browser, site, language, width):
    context = browser.new_context(base_url=site, viewport={"width": width, "height": 800})
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    query = {"en": "detach vs data", "zh": "detach 和 data 区别"}[language]
    # The search page's own box, with results under it.
    search_results(page, language, query)
    page.wait_for_timeout(500)  # the excerpts
    where = text_start(page, ".bd-search-container form.bd-search")
    page.screenshot(path=str(SCREENSHOTS / f"search-{language}-{width}.png"))
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(200)
    page.screenshot(path=str(SCREENSHOTS / f"search-{language}-{width}-dark.png"))
    page.emulate_media(color_scheme="light")
    assert where["icon_width"] > 0 and where["icon_right"] <= where["text_left"], where
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    # The box every page opens with Ctrl+K (the theme's search dialog).
    page.goto(f"/{language}/detach.html", wait_until="networkidle")
    page.keyboard.press("Control+k")
    dialog = "#pst-search-dialog form.bd-search"
    page.locator(f"{dialog} input").press_sequentially("detach")
    where = text_start(page, dialog)
    page.screenshot(path=str(SCREENSHOTS / f"search-dialog-{language}-{width}.png"))
    assert where["icon_width"] > 0 and where["icon_right"] <= where["text_left"], where
    context.close()


def test_word_counts_agree_with_the_search_index(book):
    # The browser ranks with searchcounts.js; a word it counts that the index does not
    # hold for that page (or a page without counts) would rank on words nobody indexed.
    for language in ("en", "zh"):
        folder = book.site() / language
        index = load_search_index(folder)
        text = (folder / "_static" / "searchcounts.js").read_text(encoding="utf8")
        pages = json.loads(text[text.index("{"):text.rindex("}") + 1])["pages"]
        assert sorted(pages) == sorted(index["docnames"]), language
        held: dict[str, set[str]] = {}
        for table in ("terms", "titleterms"):
            for word, docs in index[table].items():
                for doc in [docs] if isinstance(docs, int) else docs:
                    held.setdefault(index["docnames"][doc], set()).add(word)
        for name, entry in pages.items():
            assert entry["length"] >= len(held.get(name, ())), (language, name)
            assert set(entry["counts"]) <= held.get(name, set()), (language, name)
