"""Reading the error atlas on a phone, and landing where the page-contents menu says.

The atlas's headings (both its pages: error-atlas and error-atlas-training) are words a reader scans, at most two lines at 375 px in either
language, with no closing bracket or comma alone at the start of a Chinese line; the
message a reader pastes or searches for is quoted right beneath each heading in body
type, as torch prints it. A tap on an entry of the page contents or the chapter list
(dialogs below 1200 px) lands its heading where a direct link lands it, and leaves no
tooltip behind. Screenshots land in _build/screenshots/reading-*.png.
"""

from __future__ import annotations

import re

import pytest
from books import SCREENSHOTS
from browsing import visit

pytestmark = pytest.mark.browser

LANGUAGES = ("en", "zh")
# The error atlas's pages, each with the fewest headings and quoted messages it shows: the
# everyday entries and the silent failures, then the training setups' entries.
ATLAS_PAGES = {"error-atlas": (40, 25), "error-atlas-training": (20, 18)}

# Per heading of the article's sections: the text of each line it is laid out in (the
# "#" link beside it left out). Characters whose boxes overlap vertically share a line.
HEADING_LINES = """() => [...document.querySelectorAll('.bd-article section > :is(h2, h3)')].map(h => {
  const lines = [];
  const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('a.headerlink')) continue;
    for (let i = 0; i < node.length; i++) {
      if (!node.data[i].trim()) continue;
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const box = range.getBoundingClientRect();
      const line = lines.find(l => box.top < l.bottom - 2 && box.bottom > l.top + 2);
      if (line) {
        line.text += node.data[i];
      } else {
        lines.push({top: box.top, bottom: box.bottom, text: node.data[i]});
      }
    }
  }
  return {id: h.parentElement.id, lines: lines.map(l => l.text)};
})"""

# Punctuation that closes or separates: never the first character of a Chinese line.
CLOSING = "）)」』”’》】，。、；：！？"


def atlas_headings(page, language: str, width: int, name: str) -> list[dict]:
    page.set_viewport_size({"width": width, "height": 800})
    visit(page, f"/{language}/{name}.html")
    headings = page.evaluate(HEADING_LINES)
    assert len(headings) >= ATLAS_PAGES[name][0]  # every entry of the page was measured
    return headings


@pytest.mark.parametrize("name", ATLAS_PAGES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_atlas_headings_span_at_most_two_lines_on_a_phone(page, language, name):
    headings = atlas_headings(page, language, 375, name)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"reading-{language}-{name}-375.png"))
    long = {h["id"]: h["lines"] for h in headings if len(h["lines"]) > 2}
    assert long == {}
    assert page.problems == []


@pytest.mark.parametrize("name", ATLAS_PAGES)
@pytest.mark.parametrize("width", [375, 900, 1280])
def test_no_chinese_atlas_heading_line_starts_with_closing_punctuation(page, width, name):
    headings = atlas_headings(page, "zh", width, name)
    stranded = {h["id"]: h["lines"] for h in headings if any(line[0] in CLOSING for line in h["lines"][1:])}
    assert stranded == {}


# Each quoted message, and the printed outputs of its section, as text.
QUOTES = """() => [...document.querySelectorAll('.bd-article section > :is(h2, h3) + p')]
  .filter(p => p.firstElementChild && p.firstElementChild.matches('strong') && p.querySelector('code'))
  .map(p => ({
    id: p.parentElement.id,
    quote: p.querySelector('code').textContent,
    size: getComputedStyle(p).fontSize,
    printed: [...p.parentElement.querySelectorAll(':scope > .cell .cell_output')].map(o => o.textContent).join(' '),
  }))"""


@pytest.mark.parametrize("name", ATLAS_PAGES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_each_atlas_message_is_quoted_beneath_its_heading_as_torch_prints_it(page, language, name):
    visit(page, f"/{language}/{name}.html")
    body = page.evaluate("getComputedStyle(document.querySelector('.bd-article p')).fontSize")
    quotes = page.evaluate(QUOTES)
    assert len(quotes) >= ATLAS_PAGES[name][1], [q["id"] for q in quotes]  # every entry with a message
    for quote in quotes:
        assert quote["size"] == body, quote["id"]
        printed = " ".join(quote["printed"].split())
        if printed:  # two entries show the message in another chapter, whose program raises it
            parts = [" ".join(part.split()) for part in quote["quote"].split("...")]
            assert re.search(".*".join(map(re.escape, parts)), printed), (quote["id"], quote["quote"])


# --- the menus land where a direct link lands ----------------------------------------

# First, middle and last entry of the error atlas, and a section of another page.
ENTRIES = [("error-atlas", "error-inplace-modified"), ("error-atlas", "error-detach-view"),
           ("error-atlas", "error-atlas-check-yourself"), ("detach", "detach-numpy")]


def settled(page, script: str) -> float:
    """The value of ``script`` once it stops changing (the page has finished scrolling)."""
    last = None
    for _ in range(30):
        value = page.evaluate(script)
        if value == last:
            return value
        last = value
        page.wait_for_timeout(100)
    return last


def tooltips_left(page) -> list[str]:
    # Bootstrap shows a focused button's tooltip on a timer: give it the time to appear.
    page.wait_for_timeout(500)
    return page.locator(".tooltip").locator("visible=true").all_inner_texts()


def heading_top(anchor: str) -> str:
    return f"document.getElementById('{anchor}').firstElementChild.getBoundingClientRect().top"


@pytest.mark.parametrize("width", [375, 900])
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_page_contents_menu_lands_where_a_direct_link_lands(page, language, width):
    page.set_viewport_size({"width": width, "height": 800})
    toggle = page.locator(".secondary-toggle").locator("visible=true")
    contents = page.locator("#pst-secondary-sidebar-modal")
    landed, tooltips = {}, {}
    for name, anchor in ENTRIES:
        visit(page, f"/{language}/{name}.html#{anchor}")
        direct = settled(page, heading_top(anchor))
        visit(page, f"/{language}/{name}.html")
        toggle.click()
        contents.locator(f"a[href='#{anchor}']").click()
        page.wait_for_url(f"**/{name}.html#{anchor}")
        assert not contents.evaluate("dialog => dialog.open")
        landed[anchor] = (direct, settled(page, heading_top(anchor)))
        # The menu button's tooltip ("On this page") was left over the language link.
        tooltips[anchor] = tooltips_left(page)
    off = {anchor: tapped - direct for anchor, (direct, tapped) in landed.items() if abs(tapped - direct) > 16}
    assert off == {}, landed
    assert tooltips == {anchor: [] for _, anchor in ENTRIES}
    assert page.problems == []


@pytest.mark.parametrize("width", [375, 900])
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_chapter_list_lands_where_a_direct_link_lands(page, language, width):
    # The chapter list's entry for the page being read is a link to "#": its top.
    page.set_viewport_size({"width": width, "height": 800})
    visit(page, f"/{language}/error-atlas.html#error-detach-view")
    assert settled(page, "window.scrollY") > 1000
    page.locator(".primary-toggle").locator("visible=true").click()
    page.locator("#pst-primary-sidebar-modal a.current[href='#']").click()
    assert not page.locator("#pst-primary-sidebar-modal").evaluate("dialog => dialog.open")
    assert settled(page, "window.scrollY") <= 16
    assert tooltips_left(page) == []
    assert page.problems == []
