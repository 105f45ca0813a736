"""How the built book reads on a phone (375 px), a tablet (900 px) and a desktop (1280 px).

In both languages: on a phone each table row is a card of "column: value" lines and
every printed output wraps, between tokens only; inline code breaks only between its
parts; errors and warnings are read without scrolling sideways; warnings and the cheat
sheet's ✗ stand out by more than colour; "Check yourself" doctests have a copy button
that copies their input lines, and their wrapped lines hang under the code; the graph
figures say what they show and have labels that read on a phone; no Chinese line starts
with closing punctuation. Screenshots of the pages concerned land in
_build/screenshots/layout-*.png.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest
from books import SCREENSHOTS
from browsing import visit

pytestmark = pytest.mark.browser

LANGUAGES = ("en", "zh")
WIDTHS = (375, 1280)
ALL_WIDTHS = (375, 900, 1280)

# Per page: what breaks the rules above, measured in the browser. A code element (or one
# word of it) that spans more than one line box has been broken across lines. Tables of
# quoted messages (the releases page), and on a phone every table (its rows are cards),
# may wrap code between words, never inside one; Sphinx puts each word of inline code in
# its own span.pre, and site/readable_layout.py splits long ones at the points where they may break.
MEASURE = """() => {
  const lines = el => el.getClientRects().length;
  const text = el => el.textContent.trim().slice(0, 100);
  const brokenInTables = [...document.querySelectorAll('.bd-article table code')]
    .filter(code => code.closest('table.book-releases') || getComputedStyle(code.closest('table')).display !== 'table'
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


# The tests that read the survey run on one worker, which sweeps each language and width once.
SURVEYED = pytest.mark.xdist_group("layout-survey")


def pages(book, language: str) -> list[str]:
    skip = {"genindex.html", "search.html"}
    return sorted(p.name for p in (book.site() / language).glob("*.html") if p.name not in skip)


@SURVEYED
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_code_stays_whole_and_messages_wrap(browser, site, book, language, width):
    problems, messages = [], 0
    for name, surveyed in survey(browser, site, book, language, width).items():
        found = surveyed["measure"]
        messages += found["messages"]
        for key in ("brokenInTables", "brokenWords", "scrolling"):
            problems += [(name, key, item) for item in found[key]]
        if found["pageWidth"] > width:
            problems.append((name, "page scrolls sideways", found["pageWidth"]))
    assert messages > 50  # the check saw the book's errors, warnings and doctests
    assert problems == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_warnings_and_wrong_gradients_stand_out_without_colour(browser, site, language):
    context = browser.new_context(base_url=site, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    visit(page, f"/{language}/autograd-basics.html")
    warning = page.locator(".cell_output .output.stderr").first
    assert "UserWarning" in warning.inner_text()
    label = warning.evaluate("el => getComputedStyle(el, '::before').content")
    assert label == ('"⚠ Warning"' if language == "en" else '"⚠ 警告"')
    assert warning.evaluate("el => parseFloat(getComputedStyle(el).borderLeftWidth)") >= 3
    visit(page, f"/{language}/cheat-sheet.html")
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
        visit(page, f"/{language}/article.html")
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



# Per page, the rules of issue 20 measured in the browser:
# - tables: a table's box that scrolls sideways, a cell past the screen's edge, a body
#   cell whose label (readable_layout.py's span.book-cell-label) is missing or does not repeat
#   its column's header, and how the table is laid out (a real table or cards);
# - printed text (outputs, doctests, other releases' outputs): a block that scrolls
#   sideways, and an identifier or a number whose characters sit on two lines (a Range
#   over the token whose boxes start on two lines); a URL is checked piece by piece;
# - doctests: a wrapped input line whose continuation does not hang right of its prompt;
# - Chinese: a closing punctuation mark that starts a line (a Range per character: one
#   whose box starts below the previous character's, in the same block).
SURVEY = """language => {
  const W = document.documentElement.clientWidth;
  const short = el => el.textContent.trim().slice(0, 80);
  const visible = el => el.getClientRects().length > 0;
  const tops = range => [...range.getClientRects()].filter(r => r.width > 0);
  const twoLines = rects => rects.length > 1 && rects.some(r => r.top >= rects[0].bottom - 1);
  const tables = [...document.querySelectorAll('.bd-article table')].map(table => {
    const box = table.closest('.pst-scrollable-table-container') || table;
    const head = table.querySelector('thead');
    const headShown = head !== null && head.getBoundingClientRect().width > 1;
    const headers = head ? [...head.querySelectorAll('th')].map(th => th.textContent.trim()) : [];
    const cells = [...table.querySelectorAll('tbody td')].concat(headShown ? [...head.querySelectorAll('th')] : []);
    const labels = [...table.querySelectorAll('tbody tr')].flatMap(row => [...row.children].map((cell, i) => {
      const label = cell.querySelector(':scope > .book-cell-label');
      return {ok: label !== null && label.textContent.trim() === headers[i] && label.getAttribute('aria-hidden') === 'true',
              shown: label !== null && visible(label)};
    }));
    return {text: short(table), scrolls: box.scrollWidth > box.clientWidth + 1,
            cellsOff: cells.filter(c => visible(c) && c.getBoundingClientRect().right > W + 0.5).map(short),
            labelsWrong: labels.filter(l => !l.ok).length, labelsShown: labels.filter(l => l.shown).length,
            cells: labels.length, display: getComputedStyle(table).display, headShown};
  });
  const printed = [...document.querySelectorAll('.cell_output .output pre, div.highlight-pycon pre, .book-release-output pre')];
  const token = /[A-Za-z_][A-Za-z0-9_]*|\\d+(?:\\.\\d+)?(?:e[-+]?\\d+)?/g;
  const brokenTokens = [];
  for (const pre of printed) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    let all = '';
    while (walker.nextNode()) { texts.push([walker.currentNode, all.length]); all += walker.currentNode.data; }
    const at = i => { let k = texts.length - 1; while (k > 0 && texts[k][1] > i) k--; return [texts[k][0], i - texts[k][1]]; };
    for (const m of all.matchAll(token)) {
      if (m[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(...at(m.index));
      const [node, offset] = at(m.index + m[0].length - 1);
      range.setEnd(node, offset + 1);
      if (twoLines(tops(range))) brokenTokens.push(m[0]);
    }
  }
  const scrolling = printed.filter(pre => pre.scrollWidth > pre.clientWidth + 1).map(short);
  // Doctests: every line that wraps, and where its continuation starts.
  const hangs = [];
  for (const pre of document.querySelectorAll('div.highlight-pycon pre')) {
    const prompt = pre.querySelector('.gp');
    if (!prompt) continue;
    const margin = prompt.getBoundingClientRect().left, ch = prompt.getBoundingClientRect().width / 4;
    const text = pre.textContent;
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    let all = '';
    while (walker.nextNode()) { texts.push([walker.currentNode, all.length]); all += walker.currentNode.data; }
    const at = i => { let k = texts.length - 1; while (k > 0 && texts[k][1] > i) k--; return [texts[k][0], i - texts[k][1]]; };
    let start = 0;
    for (const line of text.split('\\n')) {
      if (line.startsWith('>>> ') && line.length > 4) {
        const range = document.createRange();
        range.setStart(...at(start));
        const [node, offset] = at(start + line.length - 1);
        range.setEnd(node, offset + 1);
        const rects = tops(range);
        const below = rects.filter(r => r.top >= rects[0].bottom - 1);
        if (below.length) hangs.push({line: line.slice(0, 60), hang: Math.min(...below.map(r => r.left)) - margin, ch});
      }
      start += line.length + 1;
    }
  }
  const lineStarts = [];
  if (language === 'zh') {
    const closing = /[、。，）」』：；！？】》]/;
    const blockOf = n => n.parentElement.closest('p, li, h1, h2, h3, h4, h5, h6, td, th, dt, dd, figcaption, caption, summary, div');
    const walker = document.createTreeWalker(document.querySelector('.bd-article'), NodeFilter.SHOW_TEXT,
      {acceptNode: n => n.parentElement.closest('pre, script, style, .headerlink') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
    const range = document.createRange();
    let previous = null;
    while (walker.nextNode()) {
      const node = walker.currentNode, block = blockOf(node);
      for (let i = 0; i < node.data.length; i++) {
        if (/\\s/.test(node.data[i])) continue;
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = tops(range);
        if (!rects.length) continue;
        if (closing.test(node.data[i]) && previous && previous.block === block && rects[0].top >= previous.rect.bottom - 2)
          lineStarts.push(short(block).slice(0, 30) + ' … ' + node.data.slice(Math.max(0, i - 6), i + 2));
        previous = {rect: rects[rects.length - 1], block};
      }
    }
  }
  return {tables, scrolling, brokenTokens, printed: printed.length, hangs, lineStarts};
}"""

_SURVEYS: dict = {}


def survey(browser, site, book, language: str, width: int) -> dict[str, dict]:
    """SURVEY of every page at one width, and MEASURE as "measure", from one visit of each
    page, measured once per test session (per worker: the tests that read it share a group)."""
    key = (language, width)
    if key not in _SURVEYS:
        context = browser.new_context(base_url=site, viewport={"width": width, "height": 900})
        page = context.new_page()
        found = {}
        for name in pages(book, language):
            visit(page, f"/{language}/{name}")
            found[name] = {**page.evaluate(SURVEY, language), "measure": page.evaluate(MEASURE)}
        context.close()
        _SURVEYS[key] = found
    return _SURVEYS[key]


@SURVEYED
@pytest.mark.parametrize("width", ALL_WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_tables_read_without_scrolling_sideways(browser, site, book, language, width):
    """On a phone a row is a card of "column: value" lines; from a tablet up, a real table."""
    problems, cells = [], 0
    for name, found in survey(browser, site, book, language, width).items():
        for table in found["tables"]:
            where = (name, table["text"][:40])
            cells += table["cells"]
            if table["scrolls"] or table["cellsOff"]:
                problems.append((*where, "scrolls sideways", table["cellsOff"][:3]))
            if table["labelsWrong"]:
                problems.append((*where, "cells not labelled with their column", table["labelsWrong"]))
            if width == 375 and (table["labelsShown"] != table["cells"] or table["display"] == "table"):
                problems.append((*where, "not cards on a phone", table["display"], table["labelsShown"]))
            if width > 375 and (table["labelsShown"] or table["display"] != "table" or not table["headShown"]):
                problems.append((*where, "not a table", table["display"], table["labelsShown"]))
    assert cells > 300  # the cheat sheet, the releases, the summaries, ...
    assert problems == []


def test_tables_are_still_tables_to_a_screen_reader(browser, site):
    """On a phone the card layout keeps the table's roles; the labels are not read twice."""
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 900})
    page = context.new_page()
    for language in LANGUAGES:
        visit(page, f"/{language}/cheat-sheet.html")
        tree = page.locator(".bd-article table").first.aria_snapshot()
        header = page.locator(".bd-article table").first.locator("thead th").first.inner_text().strip()
        assert tree.startswith("- table") and "- columnheader" in tree and "- cell" in tree, tree[:300]
        assert f'- columnheader "{header}"' in tree
        assert f'- cell "{header}' not in tree  # the cell's label is hidden from the reader
    context.close()


@SURVEYED
@pytest.mark.parametrize("width", ALL_WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_printed_text_breaks_only_between_tokens(browser, site, book, language, width):
    """Outputs, doctests and other releases' outputs: on a phone none scrolls sideways,
    and at every width no identifier or number is split over two lines."""
    problems, printed = [], 0
    for name, found in survey(browser, site, book, language, width).items():
        printed += found["printed"]
        problems += [(name, "broken", token) for token in found["brokenTokens"]]
        if width == 375:
            problems += [(name, "scrolls sideways", text) for text in found["scrolling"]]
    assert printed > 400
    assert problems == []


def test_the_article_shows_the_grad_fn_it_talks_about(browser, site):
    """The prose says today's torch prints grad_fn=<SigmoidBackward0>: on a phone it is on screen."""
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 900})
    page = context.new_page()
    for language in LANGUAGES:
        visit(page, f"/{language}/article.html")
        outside = page.evaluate("""() => {
          const pre = [...document.querySelectorAll('.cell_output .output pre')]
            .find(p => p.textContent.includes('grad_fn=<SigmoidBackward0>'));
          const box = pre.getBoundingClientRect();
          const range = document.createRange();
          range.selectNodeContents(pre);
          return [...range.getClientRects()].filter(r => r.width > 0 && (r.right > box.right || r.left < box.left)).length;
        }""")
        assert outside == 0, language
    context.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_doctests_have_a_copy_button_for_their_input(page, language):
    """The button copies the input lines, without prompts or outputs: a program that compiles."""
    for name in ("cheat-sheet", "optimizers"):
        visit(page, f"/{language}/{name}.html")
        block = page.locator("div.highlight-pycon").first
        text = block.locator("pre").inner_text()
        expected = "\n".join(line[4:] for line in text.splitlines() if line.startswith((">>> ", "... ")))
        block.hover()
        block.locator("button.copybtn").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.strip() == expected.strip(), (name, copied[:300])
        assert ">>>" not in copied and "Traceback" not in copied
        compile(copied, f"{name}-doctest", "exec")
    assert page.problems == []


@SURVEYED
@pytest.mark.parametrize("language", LANGUAGES)
def test_doctest_lines_that_wrap_hang_under_their_code(browser, site, book, language):
    """On a phone a long doctest line wraps, and its continuation starts right of the
    prompt's column (where output lines start), by at least two characters."""
    hangs = [(name, h) for name, found in survey(browser, site, book, language, 375).items() for h in found["hangs"]]
    assert len(hangs) > 20  # the check saw wrapped lines
    assert [(name, h["line"], round(h["hang"])) for name, h in hangs if h["hang"] < 1.9 * h["ch"]] == []


@SURVEYED
@pytest.mark.parametrize("width", ALL_WIDTHS)
def test_no_chinese_line_starts_with_closing_punctuation(browser, site, book, width):
    found = survey(browser, site, book, "zh", width)
    assert [(name, line) for name, page in found.items() for line in page["lineStarts"]] == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_figure_labels_read_on_a_phone(browser, site, language):
    """At 375 px a graph's node labels are at least 11 px: their font size in the SVG
    (matplotlib draws text as glyph paths at FONT_SCALE units a point, under a
    scale(s, -s) transform) times the image's scale on screen. The figure then scrolls
    in its own box, with a shadow at the edge; a tap still opens the SVG alone."""
    from matplotlib.textpath import TextToPath

    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 900})
    page = context.new_page()
    sizes = {}
    for name in FIGURES:
        visit(page, f"/{language}/{name}")
        found = page.evaluate("""async scale => Promise.all([...document.querySelectorAll('.bd-article figure img')].map(async img => {
          const svg = await (await fetch(img.currentSrc)).text();
          const viewBox = +svg.match(/viewBox="[\\d.]+ [\\d.]+ ([\\d.]+)/)[1];
          const glyphs = [...svg.matchAll(/scale\\(([\\d.]+) -([\\d.]+)\\)/g)].map(m => +m[1] * scale);
          const box = img.parentElement;
          return {label: Math.min(...glyphs) * img.getBoundingClientRect().width / viewBox,
                  scrolls: box.scrollWidth > box.clientWidth, cue: getComputedStyle(box).backgroundImage,
                  inside: img.getBoundingClientRect().left >= 0};
        }))""", TextToPath.FONT_SCALE)
        for i, figure in enumerate(found):
            sizes[name, i] = round(figure["label"], 1)
            if figure["scrolls"]:
                assert "radial-gradient" in figure["cue"], (name, i)  # the shadow that says "more"
            assert figure["inside"], (name, i)
    assert len(sizes) == sum(FIGURES.values())
    assert min(sizes.values()) >= 11, sizes
    context.close()


FIGURES = {"article.html": 2, "autograd-basics.html": 1}


def test_figures_say_what_they_show_and_open_full_size(browser, site):
    context = browser.new_context(base_url=site, viewport={"width": 375, "height": 900})
    page = context.new_page()
    alts = {}
    for language in LANGUAGES:
        for name, count in FIGURES.items():
            visit(page, f"/{language}/{name}")
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
        visit(page, f"/{language}/{name}.html")
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
    visit(page, f"/{language}/cheat-sheet.html")
    found = page.evaluate(MEASURE)
    assert found["brokenInTables"] == [] and found["brokenWords"] == []
    table = page.locator(".bd-article table").first
    assert table.evaluate("t => t.getBoundingClientRect().right") <= 718
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"layout-{language}-cheat-sheet-print.png"), full_page=True)
    context.close()
