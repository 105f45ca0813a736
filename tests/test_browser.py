"""The built book in a real browser: Debian's Chromium, driven by Playwright.

The site is served on 127.0.0.1; every request to any other host is blocked and
counted as a failure. Screenshots land in _build/screenshots/ as artifacts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from books import SCREENSHOTS

pytestmark = pytest.mark.book

def pages(book, language):
    skip = {"genindex.html", "search.html"}
    return sorted(p.name for p in (book.site() / language).glob("*.html") if p.name not in skip)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_page_loads_cleanly_and_only_from_this_site(book, page, language):
    for name in pages(book, language):
        page.goto(f"/{language}/{name}", wait_until="networkidle")
        assert page.problems == [], (name, page.problems)


def test_the_language_switch_keeps_the_page_and_the_section(page):
    page.goto("/en/detach.html#detach-numpy", wait_until="networkidle")
    page.click(".book-language-switch a[hreflang='zh-CN']")
    page.wait_for_url("**/zh/detach.html#detach-numpy")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.click(".book-language-switch a[hreflang='en']")
    page.wait_for_url("**/en/detach.html#detach-numpy")


@pytest.mark.parametrize("language, query, expected", [
    ("en", "detach", "detach.html"),
    ("en", "inplace", "error-atlas.html"),
    ("en", "numpy()", "detach.html"),
    ("zh", "梯度", "autograd-basics.html"),
    ("zh", "版本计数器", "autograd-basics.html"),
    ("zh", "原地操作", "debugging-in-place.html"),
    ("en", "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.", "error-atlas.html"),
    ("zh", "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.", "error-atlas.html"),
])
def test_search_finds_the_chapter(page, language, query, expected):
    page.goto(f"/{language}/search.html?q={query}", wait_until="networkidle")
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    found = page.locator("#search-results ul.search li a").evaluate_all("links => links.map(a => a.href)")
    assert any(href.split("?")[0].split("#")[0].endswith(f"/{expected}") for href in found), found[:10]


def test_the_copy_button_copies_code_without_outputs(page):
    page.goto("/en/article.html", wait_until="networkidle")
    cell = page.locator("div.cell").nth(1)
    code = cell.locator("div.cell_input pre").inner_text()
    cell.locator("div.cell_input").hover()
    cell.locator("div.cell_input button.copybtn").click()
    output = cell.locator("div.cell_output").inner_text()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == code.strip()
    assert output.strip() and output.strip() not in copied  # the output is not copied


@pytest.mark.parametrize("language", ["en", "zh"])
def test_nothing_scrolls_sideways_on_a_phone(browser, site, book, language):
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 800})
    page = context.new_page()
    for name in pages(book, language):
        page.goto(f"/{language}/{name}", wait_until="networkidle")
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= 375, (name, width)
    context.close()


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_screenshots_of_key_pages(browser, site, language, mode):
    context = browser.new_context(base_url=site, viewport={"width": 1280, "height": 900}, color_scheme=mode)
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name in ("index", "article", "cheat-sheet", "error-atlas"):
        page.goto(f"/{language}/{name}.html", wait_until="networkidle")
        theme = page.locator("html").get_attribute("data-theme")
        assert theme == mode, (name, theme)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        dark = sum(int(c) for c in background[background.index("(") + 1:-1].split(",")[:3]) < 3 * 96
        assert dark == (mode == "dark"), (name, background)
        page.screenshot(path=str(SCREENSHOTS / f"{language}-{name}-{mode}.png"), full_page=False)
        # Readable in both modes: axe's contrast rules cover code, outputs and tables.
        page.evaluate(axe_source())
        found = page.evaluate("axe.run().then(r => r.violations.map(v => [v.id, v.impact]))")
        assert [v for v in found if v[1] in ("serious", "critical")] == [], (name, mode, found)
    context.close()


def axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf8")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_serious_accessibility_violations(book, page, language):
    axe = axe_source()
    serious = []
    for name in pages(book, language) + ["search.html"]:
        page.goto(f"/{language}/{name}", wait_until="networkidle")
        page.evaluate(axe)
        found = page.evaluate("axe.run().then(r => r.violations.map(v => [v.id, v.impact, v.nodes.length]))")
        serious += [(name, *v) for v in found if v[1] in ("serious", "critical")]
    assert serious == []


def test_pages_stay_light(book, browser):
    # Bytes are exact, unlike timings: a budget that catches a returning 1.5 MB script.
    # The largest page, the Chinese error atlas, loads about 1.2 MB (its own HTML 0.32 MB).
    from book_extensions.tools.weight import measure

    rows = measure(book.site(), browser)
    assert len(rows) >= 32
    heavy = [(name, size) for name, size, _ in rows if size > 1400 * 1024]
    assert heavy == []
    assert not (book.site() / "en" / "article.html").read_text(encoding="utf8").count("fontawesome.js")
