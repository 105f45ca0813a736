"""The built book in a real browser: Debian's Chromium, driven by Playwright.

The site is served on 127.0.0.1; every request to any other host is blocked and
counted as a failure. Screenshots land in _build/screenshots/ as artifacts.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from books import SCREENSHOTS
from browsing import visit
from sweep import (
    AXE_ALL_BUT_CONTRAST,
    AXE_CONTRAST_OF_MARKED,
    AXE_WIDTH,
    MARK_NEW_TEXT_STYLES,
    SWEPT,
    axe_source,
    first_loads,
    sweep,
)

pytestmark = pytest.mark.browser


@SWEPT
@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_page_loads_cleanly_and_only_from_this_site(book, browser, site, language):
    # Each page opened in a fresh context (nothing cached) until the network is quiet.
    loads = first_loads(browser, site, book.site(), language)
    assert len(loads) >= 30
    assert {name: problems for name, (_, problems) in loads.items() if problems} == {}


def test_the_language_switch_keeps_the_page_and_the_section(page):
    visit(page, "/en/detach.html#detach-numpy")
    page.click(".book-language-switch a[hreflang='zh-CN']")
    page.wait_for_url("**/zh/detach.html#detach-numpy")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.click(".book-language-switch a[hreflang='en']")
    page.wait_for_url("**/en/detach.html#detach-numpy")


def test_the_language_switch_lands_on_the_subsection_being_read_not_the_one_in_the_address(page):
    # The address names a section; the reader has scrolled to its third subsection, so the
    # section is still on screen, but its heading is not: the switch carries the subsection.
    visit(page, "/en/error-atlas.html#error-atlas-silent")
    page.evaluate("document.getElementById('error-silent-hooks').scrollIntoView()")
    page.click(".book-language-switch a[hreflang='zh-CN']")
    page.wait_for_url("**/zh/error-atlas.html#error-silent-hooks")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_chapter_list_opens_at_the_page_being_read_on_a_phone(browser, site, language):
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 600})
    page = context.new_page()
    visit(page, f"/{language}/provenance.html")  # the last chapter: at the list's end
    page.click("button.primary-toggle")
    dialog = page.locator("#pst-primary-sidebar-modal[open]")
    dialog.wait_for()
    current = dialog.locator("li.current > a.current").first
    page.wait_for_function("""() => {
      const link = document.querySelector("#pst-primary-sidebar-modal[open] li.current > a.current");
      const box = link && link.getBoundingClientRect();
      return box && box.top >= 0 && box.bottom <= window.innerHeight;
    }""", timeout=5000)
    assert current.is_visible()
    context.close()


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
    visit(page, f"/{language}/search.html?{urlencode({'q': query})}")
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    found = page.locator("#search-results ul.search li a").evaluate_all("links => links.map(a => a.href)")
    assert any(href.split("?")[0].split("#")[0].endswith(f"/{expected}") for href in found), found[:10]


def test_the_copy_button_copies_code_without_outputs(page):
    visit(page, "/en/article.html")
    cell = page.locator("div.cell").nth(1)
    code = cell.locator("div.cell_input pre").inner_text()
    cell.locator("div.cell_input").hover()
    cell.locator("div.cell_input button.copybtn").click()
    output = cell.locator("div.cell_output").inner_text()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == code.strip()
    assert output.strip() and output.strip() not in copied  # the output is not copied


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_screenshots_of_key_pages(browser, site, language, mode):
    context = browser.new_context(base_url=site, viewport={"width": 1280, "height": 900}, color_scheme=mode)
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    contrast_styles: list[str] = []  # checked once per text style, as the sweep does
    for name in ("index", "article", "cheat-sheet", "error-atlas"):
        visit(page, f"/{language}/{name}.html")
        theme = page.locator("html").get_attribute("data-theme")
        assert theme == mode, (name, theme)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        dark = sum(int(c) for c in background[background.index("(") + 1:-1].split(",")[:3]) < 3 * 96
        assert dark == (mode == "dark"), (name, background)
        page.screenshot(path=str(SCREENSHOTS / f"{language}-{name}-{mode}.png"), full_page=False)
        # Readable in both modes: axe's contrast rules cover code, outputs and tables. In the
        # light mode the sweep runs axe on every page at this size (test_no_serious_accessibility_violations).
        if mode == "dark":
            page.evaluate(axe_source())
            found = page.evaluate(AXE_ALL_BUT_CONTRAST)
            styles = page.evaluate(MARK_NEW_TEXT_STYLES, contrast_styles)
            contrast_styles += styles
            if styles:
                found += page.evaluate(AXE_CONTRAST_OF_MARKED)
            assert [v for v in found if v[1] in ("serious", "critical")] == [], (name, mode, found)
    context.close()


@SWEPT
@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_serious_accessibility_violations(book, browser, site, language):
    # Every chapter and the search page, at 1280 px (the sweep runs axe on each).
    swept = sweep(browser, site, book.site(), language, AXE_WIDTH)
    assert "search.html" in swept and len(swept) >= 29
    serious = [(name, *v) for name, visited in swept.items() for v in visited.axe if v[1] in ("serious", "critical")]
    assert serious == []


@pytest.mark.fixture
def test_the_sweeps_contrast_check_finds_faint_text_in_a_style_no_page_had(browser):
    # The sweep checks contrast once per text style (sweep.py): a style first seen on a page
    # is checked there, and a page with only styles seen before is not checked again.
    page = browser.new_page()
    body = ("<main><h1>Title</h1><p style='color:#222'>Readable text</p><p style='color:#bbb'>Faint text</p>"
            "<p style='color:#222'>Readable <code style='color:#bbb'>faint code</code> again</p></main>")
    page.set_content(body)
    page.evaluate(axe_source())
    styles = page.evaluate(MARK_NEW_TEXT_STYLES, [])
    assert len(styles) == 4  # the heading, the two paragraphs' colours, the code
    assert page.evaluate(AXE_CONTRAST_OF_MARKED) == [["color-contrast", "serious", 2]]
    page.set_content(body)
    assert page.evaluate(MARK_NEW_TEXT_STYLES, styles) == []
    page.set_content(body.replace("#bbb", "#aaa"))
    page.evaluate(axe_source())
    assert len(page.evaluate(MARK_NEW_TEXT_STYLES, styles)) == 2
    assert page.evaluate(AXE_CONTRAST_OF_MARKED) == [["color-contrast", "serious", 2]]
    page.context.close()


# What a release changed is marked word by word: struck out and tinted in the older
# release's column of torch-releases, underlined and tinted in the newer one's, bold and
# tinted in a ≠ fold. Measured on screen: each mark has a background of its own.
MARKS = """(selector) => [...document.querySelectorAll(selector)].map(el => ({
  text: el.textContent, tag: el.tagName.toLowerCase(),
  background: getComputedStyle(el).backgroundColor,
  around: getComputedStyle(el.parentElement).backgroundColor,
  visible: el.getClientRects().length > 0}))"""


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_what_changed_between_releases_is_marked(browser, site, language, width):
    context = browser.new_context(base_url=site, viewport={"width": width, "height": 900})
    page = context.new_page()
    visit(page, f"/{language}/torch-releases.html")
    rows = page.locator("table.book-releases tbody tr").filter(has=page.locator("code"))
    assert rows.count() >= 10
    for index in range(rows.count()):
        cells = rows.nth(index).locator("td")
        old, new = cells.nth(1), cells.nth(2)
        # Each side that printed something marks what the other side printed differently.
        if old.locator("code").count() and new.locator("code").count():
            assert old.locator("del.book-changed").count() and new.locator("ins.book-changed").count(), \
                rows.nth(index).inner_text()
    marks = page.evaluate(MARKS, "table.book-releases .book-changed")
    assert all(m["visible"] and m["background"] != m["around"] for m in marks), marks[:3]
    assert {"informations.", "information."} <= {m["text"] for m in marks}
    # The article's fold: what torch 2.7.1 and 2.9.1 printed, with the differences from the pinned torch marked.
    visit(page, f"/{language}/article.html")
    fold = page.locator("details.book-release-output").filter(has_text="SigmoidBackward0,").first
    fold.locator("summary").click()
    marks = page.evaluate(MARKS, "details.book-release-output[open] mark.book-changed")
    assert "SigmoidBackward0," in [m["text"] for m in marks]
    assert all(m["visible"] and m["background"] != m["around"] for m in marks), marks[:3]
    # A release that printed nothing where the pinned torch prints a warning: the fold says so.
    visit(page, f"/{language}/forward-mode.html")
    shown = page.evaluate("""() => [...document.querySelectorAll('details.book-release-output')]
      .map(fold => fold.textContent.replace(fold.querySelector('summary').textContent, '').trim())""")
    assert shown and all(shown), shown
    # A summary that wraps hangs its lines under its first line's text: a second line began
    # under the marker (▸ ≠). Each line's left edge, from the summary's own text.
    lines = page.evaluate("""() => [...document.querySelectorAll('details.book-release-output > summary')].map(summary => {
      const range = document.createRange();
      range.selectNodeContents(summary);
      return [...range.getClientRects()].filter(rect => rect.width > 0).map(rect => Math.round(rect.left));
    })""")
    assert all(len(set(lefts)) == 1 for lefts in lines), lines
    if language == "en" and width == 375:
        assert any(len(lefts) > 1 for lefts in lines), lines  # a summary that wraps was measured
    context.close()
