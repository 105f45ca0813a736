"""How the built book reads on a phone (375 px) and a desktop (1280 px), in both languages.

Tables keep every identifier whole (a wide table scrolls in its own box), inline code
breaks only between its parts, every error and warning is read without scrolling
sideways, warnings and the cheat sheet's ✗ stand out by more than colour, and the graph
figures say what they show in each language and open full size. Screenshots of the
pages concerned land in _build/screenshots/layout-*.png.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest
from books import SCREENSHOTS

pytestmark = pytest.mark.book

LANGUAGES = ("en", "zh")
WIDTHS = (375, 1280)

# Per page: what breaks the rules above, measured in the browser. A code element (or one
# word of it) that spans more than one line box has been broken across lines. Tables of
# quoted messages (the releases page) may wrap between words, never inside one; Sphinx
# puts each word of inline code in its own span.pre, and layout.py splits long ones at
# the points where they may break.
MEASURE = """() => {
  const lines = el => el.getClientRects().length;
  const text = el => el.textContent.trim().slice(0, 100);
  const brokenInTables = [...document.querySelectorAll('.bd-article table code')]
    .filter(code => code.closest('table.book-releases')
      ? [...code.querySelectorAll('span.pre')].some(word => lines(word) > 1)
      : lines(code) > 1)
    .map(text);
  const brokenWords = [...document.querySelectorAll('.bd-article code span.pre')]
    .filter(word => lines(word) > 1).map(text);
  const message = /\\b[A-Z]\\w*(Error|Warning|Exception)\\b/;
  const blocks = [...document.querySelectorAll('.cell_output .output, div.highlight-pycon')]
    .filter(block => block.matches('.traceback, .stderr, .highlight-pycon') || message.test(block.textContent));
  const scrolling = blocks.map(block => block.querySelector('pre') || block)
    .filter(pre => pre.scrollWidth > pre.clientWidth).map(text);
  return {brokenInTables, brokenWords, messages: blocks.length, scrolling,
          pageWidth: document.scrollingElement.scrollWidth};
}"""


def pages(book, language: str) -> list[str]:
    skip = {"genindex.html", "search.html"}
    return sorted(p.name for p in (book.site() / language).glob("*.html") if p.name not in skip)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_code_stays_whole_and_messages_wrap(browser, site, book, language, width):
    context = browser.new_context(base_url=site, viewport={"width": width, "height": 900})
    page = context.new_page()
    problems, messages = [], 0
    for name in pages(book, language):
        page.goto(f"/{language}/{name}", wait_until="networkidle")
        found = page.evaluate(MEASURE)
        messages += found["messages"]
        for key in ("brokenInTables", "brokenWords", "scrolling"):
            problems += [(name, key, item) for item in found[key]]
        if found["pageWidth"] > width:
            problems.append((name, "page scrolls sideways", found["pageWidth"]))
    context.close()
    assert messages > 50  # the check saw the book's errors, warnings and doctests
    assert problems == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_warnings_and_wrong_gradients_stand_out_without_colour(browser, site, language):
    context = browser.new_context(base_url=site, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"/{language}/autograd-basics.html", wait_until="networkidle")
    warning = page.locator(".cell_output .output.stderr").first
    assert "UserWarning" in warning.inner_text()
    label = warning.evaluate("el => getComputedStyle(el, '::before').content")
    assert label == ('"⚠ Warning"' if language == "en" else '"⚠ 警告"')
    assert warning.evaluate("el => parseFloat(getComputedStyle(el).borderLeftWidth)") >= 3
    page.goto(f"/{language}/cheat-sheet.html", wait_until="networkidle")
    style = """cell => { const s = getComputedStyle(cell.querySelector('p'));
                         return [s.borderTopStyle, s.fontWeight]; }"""
    wrong = page.locator("td.book-verdict-wrong")
    right = page.locator("td.book-verdict-right")
    assert wrong.count() >= 1 and right.count() >= 10
    assert wrong.first.inner_text().strip() == "✗" and right.first.inner_text().strip() == "✓"
    assert wrong.first.evaluate(style) == ["solid", "700"]
    assert right.first.evaluate(style)[0] == "none"
    context.close()


def test_the_articles_summary_is_a_table(browser, site):
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 900})
    page = context.new_page()
    for language in LANGUAGES:
        page.goto(f"/{language}/article.html", wait_until="networkidle")
        table = page.locator("#article-summary .cell_output table")
        assert table.count() == 1
        header = table.locator("thead th").all_inner_texts()
        assert header[:2] == ["tool", "backward"], header
        rows = table.locator("tbody tr").all_inner_texts()
        assert len(rows) == 4 and "WRONG" in rows[0] and "right" in rows[3]
        # On a phone, the verdict is in view before any scrolling.
        verdict = table.locator("tbody tr").first.locator("td").nth(1)
        box = verdict.bounding_box()
        assert box["x"] + box["width"] <= 375, box
    context.close()


FIGURES = {"article.html": 2, "autograd-basics.html": 1}


def test_figures_say_what_they_show_and_open_full_size(browser, site):
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 900})
    page = context.new_page()
    alts = {}
    for language in LANGUAGES:
        for name, count in FIGURES.items():
            page.goto(f"/{language}/{name}", wait_until="networkidle")
            images = page.locator(".bd-article figure img")
            assert images.count() == count, (language, name)
            for i in range(count):
                image = images.nth(i)
                alt, src = image.get_attribute("alt"), image.get_attribute("src")
                assert alt and len(alt) > 40 and not re.search(r"\.svg|_images|/", alt), alt
                assert ("SigmoidBackward0" if name == "article.html" else "MulBackward0") in alt
                assert re.search(r"[\u4e00-\u9fff]", alt) if language == "zh" else alt.isascii(), alt
                link = image.locator("xpath=ancestor::a[1]")
                assert link.count() == 1, (language, name, i)
                href = urljoin(page.url, link.get_attribute("href"))
                assert href == urljoin(page.url, src) and href.endswith(".svg")
                assert page.request.get(href).ok
                alts[language, name, i] = alt
    assert alts["en", "article.html", 0] != alts["zh", "article.html", 0]
    context.close()


# (page, what to scroll to): the places this file's rules are about.
VIEWS = [
    ("cheat-sheet", "table"),
    ("glossary", "~set_detect_anomaly"),
    ("patterns", "table"),
    ("article", "figure"),
    ("article", "#article-summary .cell_output"),
    ("error-atlas", ".cell_output .output.stderr"),
]


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_screenshots(browser, site, language, width, mode):
    context = browser.new_context(base_url=site, viewport={"width": width, "height": 900}, color_scheme=mode)
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, target in VIEWS:
        page.goto(f"/{language}/{name}.html", wait_until="networkidle")
        if target.startswith("~"):
            found = page.evaluate("""t => { const c = [...document.querySelectorAll('.bd-article code')]
                                             .find(c => c.textContent.includes(t));
                                             if (c) c.scrollIntoView({block: 'center'}); return !!c; }""", target[1:])
        else:
            found = page.evaluate("""s => { const e = document.querySelector(s);
                                             if (e) { e.scrollIntoView({block: 'start'}); window.scrollBy(0, -80); }
                                             return !!e; }""", target)
        assert found, (name, target)
        slug = re.sub(r"\W+", "-", target).strip("-")
        page.screenshot(path=str(SCREENSHOTS / f"layout-{language}-{name}-{slug}-{width}-{mode}.png"))
    context.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_cheat_sheet_prints_whole(browser, site, language):
    # A printed page cannot scroll: the table must fit, every identifier whole. Chromium
    # prints an A4 page 718 CSS pixels wide inside its default margins.
    context = browser.new_context(base_url=site, viewport={"width": 718, "height": 900})
    page = context.new_page()
    page.emulate_media(media="print")
    page.goto(f"/{language}/cheat-sheet.html", wait_until="networkidle")
    found = page.evaluate(MEASURE)
    assert found["brokenInTables"] == [] and found["brokenWords"] == []
    table = page.locator(".bd-article table").first
    assert table.evaluate("t => t.getBoundingClientRect().right") <= 718
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"layout-{language}-cheat-sheet-print.png"), full_page=True)
    context.close()
