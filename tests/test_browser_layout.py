"""How the built book reads on a phone (375 px), a tablet (900 px) and a desktop (1280 px).

In both languages: on a phone each row of a table too wide for the screen is a card of
"column: value" lines, and every printed output wraps, between tokens only; inline code breaks only between its
parts; errors and warnings are read without scrolling sideways; warnings and the cheat
sheet's ✗ stand out by more than colour; "Check yourself" doctests have a copy button
that copies their input lines, and their wrapped lines hang under the code; the graph
figures say what they show and have labels that read on a phone; no Chinese line starts
with closing punctuation. Screenshots of the pages concerned land in
_build/screenshots/layout-*.png (the scheduled tier: they assert nothing, and are for a reviewer's
eyes, ``nox -s tests -- -m scheduled -k screenshots``). What every page shows is measured once per language and
width by tests/sweep.py (MEASURE and SURVEY there say what is measured).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest
from books import SCREENSHOTS
from browsing import visit
from sweep import MEASURE, SWEPT, survey
from sweep import WIDTHS as ALL_WIDTHS

from book_extensions.site.readable_layout import DEEPEST_NESTING

pytestmark = pytest.mark.browser

LANGUAGES = ("en", "zh")
WIDTHS = (375, 1280)  # ALL_WIDTHS: every width the sweep measures


@SWEPT
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_code_stays_whole_and_messages_wrap(browser, site, book, language, width):
    problems, messages = [], 0
    for name, surveyed in survey(browser, site, book.site(), language, width).items():
        found = surveyed["measure"]
        messages += found["messages"]
        # nameBreaks: a long name breaks between its words below 375 px only.
        for key in ("brokenInTables", "brokenWords", "scrolling", "nameBreaks", "pastEdge"):
            problems += [(name, key, item) for item in found[key]]
        if found["pageWidth"] > width:
            problems.append((name, "page scrolls sideways", found["pageWidth"]))
    assert messages > 50  # the check saw the book's errors, warnings and doctests
    assert problems == []


@pytest.mark.parametrize("width", [320, 360])
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_name_longer_than_a_phones_column_breaks_between_its_words(browser, site, book, language, width):
    """At 320 px a name wider than the column (``create_selective_checkpoint_contexts`` in a
    sentence, ``._checkpoint_wrapped_module`` beside an exercise's letter) scrolled its page
    sideways, and at 340 and 360 px such names ran past the column's edge by up to 28 px
    (``CompiledFunctionBackward`` in an exercise's choice): below 375 px a long name breaks
    after an underscore or before a capital (readable_layout.py's span.book-name-break), never
    elsewhere in a piece of code (brokenWords), and on no wider screen (the sweeps above)."""
    pages = sorted(p.name for p in (book.site() / language).glob("*.html")
                   if "book-name-break" in p.read_text(encoding="utf8"))
    assert {"checkpointing.html", "compile.html", "debugging-in-place.html", "exercises.html"} <= set(pages)
    context = browser.new_context(base_url=site, viewport={"width": width, "height": 700})
    page = context.new_page()
    problems, broken = [], []
    for name in pages:
        visit(page, f"/{language}/{name}")
        found = page.evaluate(MEASURE)
        problems += [(name, key, item) for key in ("brokenWords", "pastEdge") for item in found[key]]
        if found["pageWidth"] > width:
            problems.append((name, "page scrolls sideways", found["pageWidth"]))
        broken += found["nameBreaks"]
    context.close()
    assert problems == []
    assert any("CompiledFunctionBackward" in text for text in broken) or width > 320, broken
    assert any("_checkpoint_wrapped_module" in text for text in broken), broken


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


@SWEPT
@pytest.mark.parametrize("width", ALL_WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_tables_read_without_scrolling_sideways(browser, site, book, language, width):
    """On a phone a table too wide for the column has its rows as cards of "column: value"
    lines, the first cell the card's title; one that fits stays a table, as every table
    does from a tablet up."""
    problems, cells, tables_on_a_phone = [], 0, 0
    for name, found in survey(browser, site, book.site(), language, width).items():
        for table in found["tables"]:
            where = (name, table["text"][:40])
            cells += table["cells"]
            if table["scrolls"] or table["cellsOff"]:
                problems.append((*where, "scrolls sideways", table["cellsOff"][:3]))
            if table["labelsWrong"]:
                problems.append((*where, "cells not labelled with their column", table["labelsWrong"]))
            cards = width == 375 and table["wide"]
            if cards and (table["labelsShown"] != table["cells"] - table["rows"] or table["display"] == "table"):
                problems.append((*where, "not cards on a phone", table["display"], table["labelsShown"]))
            if cards and table["fitsAsTable"]:
                problems.append((*where, "cards, though it fits as a table with room to spare"))
            if not cards and (table["labelsShown"] or table["display"] != "table" or not table["headShown"]):
                problems.append((*where, "not a table", table["display"], table["labelsShown"]))
            tables_on_a_phone += width == 375 and not cards
    assert cells > 300  # the cheat sheet, the releases, the summaries, ...
    assert problems == []
    if width == 375:
        assert tables_on_a_phone >= 2  # not every table is cards: those that fit stay tables


# Each table whose box scrolls sideways, the page's own width, and each table marked too wide
# for a phone: [its columns, whether it is laid out as a table].
SIDEWAYS = """() => ({tables: [...document.querySelectorAll('.bd-article table')]
    .map(table => table.closest('.pst-scrollable-table-container') || table.parentElement)
    .filter(box => box.scrollWidth > box.clientWidth + 1)
    .map(box => box.textContent.trim().slice(0, 40)),
  page: document.scrollingElement.scrollWidth,
  wide: [...document.querySelectorAll('.bd-article table.book-wide')]
    .map(table => [table.rows[0].cells.length, getComputedStyle(table).display === 'table'])})"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_phone_held_sideways_scrolls_no_table(browser, site, book, language):
    """Between the phone and the tablet (641 to 704 px: a phone held sideways), which the
    sweeps' widths skip: the cheat sheet's seven columns scrolled inside their box by up to
    57 px, and now are cards up to 44rem, as on a phone; the narrower wide tables fit, and
    stay tables."""
    pages = sorted(path.name for path in (book.site() / language).glob("*.html")
                   if "book-wide" in path.read_text(encoding="utf8"))
    assert "cheat-sheet.html" in pages
    context = browser.new_context(base_url=site, viewport={"width": 641, "height": 900})
    page = context.new_page()
    problems = []
    for name in pages:
        visit(page, f"/{language}/{name}")
        for width in (641, 672, 704, 705):
            page.set_viewport_size({"width": width, "height": 900})
            found = page.evaluate(SIDEWAYS)
            if found["tables"] or found["page"] > width:
                problems.append((name, width, found))
            for columns, as_table in found["wide"]:
                if as_table != (columns < 7 or width > 704):
                    problems.append((name, width, columns, "a table" if as_table else "cards"))
    context.close()
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


@SWEPT
@pytest.mark.parametrize("width", ALL_WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_printed_text_breaks_only_between_tokens(browser, site, book, language, width):
    """Outputs, doctests and other releases' outputs: on a phone none scrolls sideways,
    and at every width no identifier or number is split over two lines."""
    problems, printed = [], 0
    for name, found in survey(browser, site, book.site(), language, width).items():
        printed += found["printed"]
        problems += [(name, "broken", token) for token in found["brokenTokens"]]
        if width == 375:
            problems += [(name, "scrolls sideways", text) for text in found["scrolling"]]
    assert printed > 400
    assert problems == []


def test_the_article_shows_the_grad_fn_it_talks_about(browser, site):
    """The prose says the pinned torch prints grad_fn=<SigmoidBackward0>: on a phone it is on screen."""
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


@SWEPT
@pytest.mark.parametrize("language", LANGUAGES)
def test_doctest_lines_that_wrap_hang_under_their_code(browser, site, book, language):
    """On a phone a long doctest line wraps, and its continuation starts right of the
    prompt's column (where output lines start), by at least two characters."""
    hangs = [(name, h) for name, found in survey(browser, site, book.site(), language, 375).items() for h in found["hangs"]]
    assert len(hangs) > 20  # the check saw wrapped lines
    assert [(name, h["line"], round(h["hang"])) for name, h in hangs if h["hang"] < 1.9 * h["ch"]] == []


@pytest.mark.swept("zh")
@pytest.mark.parametrize("width", ALL_WIDTHS)
def test_no_chinese_line_starts_with_closing_punctuation(browser, site, book, width):
    found = survey(browser, site, book.site(), "zh", width)
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


@pytest.mark.scheduled  # pictures for a reviewer, 70 s of the run; it checks no more than that each view is there
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


# --- issue 33: typography and small things on every screen ---------------------------

@SWEPT
@pytest.mark.parametrize("language", LANGUAGES)
def test_headings_scale_down_on_a_phone(browser, site, book, language):
    """At 375 px a page title is at most 28 px, a section title at most 22 px, an h3
    clearly smaller than an h2 (the theme's 42, 34 and 28 px made titles of three or four
    lines, and its bold h3 outweighed the h2), and no heading takes more than two lines.
    A Chinese heading's line ends between words only (it broke DDP 下的梯度累 / 积)."""
    found = survey(browser, site, book.site(), language, 375)
    headings = [(name, h) for name, page in found.items() for h in page["headings"]]
    sizes = {tag: {h["size"] for _, h in headings if h["tag"] == tag} for tag in ("h1", "h2", "h3")}
    assert all(sizes.values()) and len(headings) > 250, sizes
    assert max(sizes["h1"]) <= 28 and max(sizes["h2"]) <= 22, sizes
    assert max(sizes["h3"]) <= 0.9 * min(sizes["h2"]), sizes
    assert [(name, h["tag"], h["lines"], h["text"]) for name, h in headings if h["lines"] > 2] == []
    assert [(name, h["text"], h["midWord"]) for name, h in headings if h["midWord"]] == []


@SWEPT
@pytest.mark.parametrize("language", LANGUAGES)
def test_wrapped_output_lines_hang(browser, site, book, language):
    """On a phone every output wraps: a wrapped line's continuation starts right of where
    the line's text starts (after its indentation), by two characters, so that it does not
    read as a line (an entry) of its own, nor as a nested one; as a doctest's wrapped input
    hangs under its code."""
    hangs = [(name, h) for name, page in survey(browser, site, book.site(), language, 375).items()
             for h in page["outputHangs"]]
    assert len(hangs) > 100  # the check saw wrapped lines: tracebacks, warnings, tensors
    # 1.5: a character is measured on the line's first ten, which may be bold (<mark>);
    # spaces deeper than nesting goes align columns, and leave no room right of them
    bad = [(name, h["line"], round(h["hang"])) for name, h in hangs
           if h["hang"] < 1.5 * h["ch"] and h["indent"] <= DEEPEST_NESTING]
    assert bad == [], "\n".join(map(str, bad))


@SWEPT
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_top_bar_controls_are_tap_targets(browser, site, book, language, width):
    """On a phone each control of the top bar (menus, the other language, colours, search)
    is at least 44 by 44 px, and the full-screen button is not offered; on a desktop it is."""
    problems, seen = [], set()
    for name, page in survey(browser, site, book.site(), language, width).items():
        for control in page["controls"]:
            seen.add(control["name"])
            if control["fullscreen"] and width == 375:
                problems.append((name, "full-screen button on a phone"))
            if width == 375 and (control["width"] < 44 or control["height"] < 44):
                problems.append((name, control["name"], round(control["width"]), round(control["height"])))
        if width == 1280 and not any(c["fullscreen"] for c in page["controls"]):
            problems.append((name, "no full-screen button on a desktop"))
    assert len(seen) >= 4, seen  # the menus, the language link, the colours, search
    assert sorted(set(problems)) == []


@SWEPT
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_previous_and_next_page_links_stay_on_the_screen(browser, site, book, language, width):
    """Issue 33: on a phone the next page's title, holding code that cannot break
    ("inference_mode"), pushed its arrow past the screen's right edge."""
    problems, seen = [], 0
    for name, page in survey(browser, site, book.site(), language, width).items():
        seen += len(page["pageLinks"])
        problems += [(name, box["what"], box["text"], round(box["left"]), round(box["right"]))
                     for box in page["pageLinks"] if box["left"] < -0.5 or box["right"] > width + 0.5]
    assert seen > 50  # the check saw the links
    assert problems == []


@SWEPT
@pytest.mark.parametrize("language", LANGUAGES)
def test_inline_code_that_wraps_is_a_closed_box_on_each_line(browser, site, book, language):
    """Issue 33: on a phone the error atlas's quoted messages ("Message:" and code) wrap, and their
    box was cut open at each line's end and the next line's start (its border and corners only at
    the very ends). Only those: a cloned box costs its paragraph text-wrap: pretty in Chromium,
    and test_no_paragraph_ends_with_a_word_alone_on_a_phone sees the words left alone."""
    wrapped = [(name, code) for name, page in survey(browser, site, book.site(), language, 375).items()
               for code in page["wrappedCode"]]
    assert len(wrapped) > 10  # the check saw wrapped code
    assert [(name, code["text"]) for name, code in wrapped if not code["closed"]] == []


@SWEPT
@pytest.mark.parametrize("language", LANGUAGES)
def test_copy_buttons_cover_no_code_on_a_phone(browser, site, book, language):
    """At 375 px a code box's copy button is shown (a touch screen has no hover) and
    covers none of its code: no box of the code's text meets the button's."""
    buttons = [(name, b) for name, page in survey(browser, site, book.site(), language, 375).items()
               for b in page["copyButtons"]]
    assert len(buttons) > 300
    assert [(name, b["code"]) for name, b in buttons if b["covered"]] == []
    assert [(name, b["code"]) for name, b in buttons if b["opacity"] < 1] == []


@pytest.mark.swept("en")
@pytest.mark.parametrize("width", ALL_WIDTHS[1:])
def test_english_lines_keep_a_readable_measure(browser, site, book, width):
    """On a tablet (900 px, no side bars) as on a desktop, a page's English paragraphs run
    at most 82 characters a line on average (the median paragraph's; at 900 px the
    column held about 100), and not fewer than 60."""
    found = survey(browser, site, book.site(), "en", width)
    medians = {}
    for name, page in found.items():
        lines = sorted(page["perLine"])
        if len(lines) >= 3:
            medians[name] = round(lines[len(lines) // 2])
    assert len(medians) > 20
    assert {name: m for name, m in medians.items() if not 60 <= m <= 82} == {}


@SWEPT
@pytest.mark.parametrize("language", LANGUAGES)
def test_no_paragraph_ends_with_a_word_alone_on_a_phone(browser, site, book, language):
    """At 375 px no paragraph's last line holds a lone word, or a lone Chinese character and
    its full stop ("点。"), under a full line."""
    found = survey(browser, site, book.site(), language, 375)
    orphans = [(name, tail) for name, page in found.items() for tail in page["orphans"]]
    assert orphans == [], "\n".join(map(str, orphans))


@pytest.mark.parametrize("width", [320, 375, 700, 900, 1280])
def test_back_to_top_covers_no_text(browser, site, width):
    """The theme shows its "back to top" button while the reader scrolls up: a pill at the
    bottom of the screen, over the paragraph being read (at 375 and 900 px). It is a tap
    target of 44 by 44 px or more inside the top bar, over none of the bar's other controls
    nor the language link's icon (on the narrowest phones, 320 px, too), level with the bar's
    icons, its arrow centred and legible (3:1); from 1200 px the book theme never shows it."""
    context = browser.new_context(base_url=site, viewport={"width": width, "height": 800})
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for language in LANGUAGES:
        visit(page, f"/{language}/error-atlas.html")
        page.evaluate("window.scrollTo(0, 4000)")
        page.wait_for_timeout(100)
        page.evaluate("window.scrollBy(0, -600)")  # the theme shows the button on a scroll up
        if width >= 1200:  # ... except where it shows the page's contents beside the text
            page.wait_for_timeout(300)
            assert page.evaluate("getComputedStyle(document.getElementById('pst-back-to-top')).display") == "none"
            continue
        page.wait_for_function("getComputedStyle(document.getElementById('pst-back-to-top')).display !== 'none'")
        found = page.evaluate(r"""() => {
          const button = document.getElementById('pst-back-to-top');
          const box = button.getBoundingClientRect(), bar = document.querySelector('.bd-header-article').getBoundingClientRect();
          const covered = [...document.querySelectorAll('.bd-header-article :is(a[href], button, .btn, .fa-language)')]
            .filter(el => el.getClientRects().length).map(el => [el, el.getBoundingClientRect()])
            .filter(([, r]) => r.left < box.right && r.right > box.left && r.top < box.bottom && r.bottom > box.top)
            .map(([el]) => el.getAttribute('aria-label') || el.textContent.trim());
          // The arrow: centred in the circle, and 3:1 against it (WCAG 1.4.11, an icon).
          const arrow = button.querySelector('.fa-arrow-up').getBoundingClientRect();
          const luminance = css => {
            const [r, g, b] = css.match(/[\d.]+/g).slice(0, 3).map(v => +v / 255)
              .map(c => c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
            return 0.2126 * r + 0.7152 * g + 0.0722 * b;
          };
          const [fg, bg] = [luminance(getComputedStyle(button).color), luminance(getComputedStyle(button).backgroundColor)];
          return {width: box.width, height: box.height, covered,
                  arrowOffCentre: Math.abs((arrow.top + arrow.bottom) / 2 - (box.top + box.bottom) / 2),
                  contrast: (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05),
                  inBar: box.top >= bar.top && box.bottom <= bar.bottom && box.left >= bar.left && box.right <= bar.right,
                  offBarCentre: Math.abs((box.top + box.bottom) / 2 - (bar.top + bar.bottom) / 2),
                  name: button.textContent.trim()};
        }""")
        page.screenshot(path=str(SCREENSHOTS / f"layout-{language}-back-to-top-{width}.png"))
        assert found["width"] >= 44 and found["height"] >= 44 and found["inBar"], (language, found)
        assert found["offBarCentre"] <= 1, (language, found)  # level with the bar's icons
        assert found["covered"] == [], (language, found)
        assert found["arrowOffCentre"] <= 2 and found["contrast"] >= 3, (language, found)
        assert found["name"], language  # its words still name it
    context.close()
