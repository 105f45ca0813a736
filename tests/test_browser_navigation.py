"""Finding one's way on every width, in a real browser (Debian's Chromium, Playwright).

The site menu and the page contents open and close from the buttons a reader can see
(the theme binds the first such button of a page, once one of a hidden top bar, which
the book leaves empty: conf.py's navbar_persistent); the language
switch is on screen without opening a menu, and it keeps the section being read.
Screenshots land in _build/screenshots/nav-*.png (the scheduled tier: pictures for a reviewer's
eyes, ``nox -s tests -- -m scheduled -k screenshots``).
"""

from __future__ import annotations

import pytest
from books import SCREENSHOTS, index_parts
from browsing import visit
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

OTHER = {"en": "zh-CN", "zh": "en"}


def at_width(page, width: int, mode: str = "light"):
    page.set_viewport_size({"width": width, "height": 800})
    page.emulate_media(color_scheme=mode)
    return page


def click_outside(page, dialog) -> None:
    """A tap on the backdrop, beside the dialog."""
    box = dialog.bounding_box()
    width = page.viewport_size["width"]
    x = box["x"] + box["width"] + 10 if box["x"] + box["width"] + 10 < width else box["x"] - 10
    page.mouse.click(x, box["y"] + box["height"] / 2)


@pytest.mark.parametrize("width", [375, 900])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_visible_buttons_open_and_close_the_site_menu(page, language, width):
    visit(at_width(page, width), f"/{language}/article.html")
    menu = page.locator("#pst-primary-sidebar-modal")
    chapter = menu.locator(".bd-docs-nav a[href='detach.html']")
    toggle = page.locator(".primary-toggle").locator("visible=true")
    expect(toggle).to_have_count(1)
    expect(chapter).to_have_count(0)  # the menu is empty and closed
    for close in ("Escape", "backdrop"):
        toggle.click()
        expect(chapter).to_be_visible()
        expect(menu.locator(".bd-docs-nav p.caption").first).to_be_visible()  # the part headings
        if close == "Escape":
            page.keyboard.press("Escape")
        else:
            click_outside(page, menu)
        expect(chapter).to_have_count(0)
        assert not menu.evaluate("dialog => dialog.open")
    toggle.click()
    chapter.click()  # the menu leads somewhere
    page.wait_for_url(f"**/{language}/detach.html")
    assert page.problems == []


@pytest.mark.parametrize("width", [375, 900])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_visible_button_opens_and_closes_the_page_contents(page, language, width):
    visit(at_width(page, width), f"/{language}/article.html")
    contents = page.locator("#pst-secondary-sidebar-modal")
    entry = contents.locator("a[href='#article-check-yourself']")
    toggle = page.locator(".secondary-toggle").locator("visible=true")
    expect(toggle).to_have_count(1)
    toggle.click()
    expect(entry).to_be_visible()
    click_outside(page, contents)
    expect(entry).to_have_count(0)
    toggle.click()
    entry.click()  # leads to the section, and the contents close so that it is seen
    page.wait_for_url("**/article.html#article-check-yourself")
    expect(entry).to_have_count(0)
    assert not contents.evaluate("dialog => dialog.open")
    assert page.problems == []


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_visible_button_hides_and_shows_the_side_bar_on_a_wide_screen(page, language):
    visit(at_width(page, 1280), f"/{language}/article.html")
    chapter = page.locator("#pst-primary-sidebar .bd-docs-nav a[href='detach.html']")
    expect(chapter).to_be_visible()
    toggle = page.locator(".primary-toggle").locator("visible=true")
    toggle.click()
    expect(chapter).to_be_hidden()
    assert not page.locator("#pst-primary-sidebar-modal").evaluate("dialog => dialog.open")
    toggle.click()
    expect(chapter).to_be_visible()
    assert page.problems == []


@pytest.mark.parametrize("width", [375, 900, 1280])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_language_switch_is_on_screen_without_opening_a_menu(page, language, width):
    visit(at_width(page, width), f"/{language}/glossary.html")
    link = page.locator(f".book-header-languages a[hreflang='{OTHER[language]}']")
    expect(link).to_be_visible()
    box = link.bounding_box()
    assert 0 <= box["y"] < 100 and box["x"] + box["width"] <= width, box  # in the top bar
    link.click()
    page.wait_for_url(f"**/{'zh' if language == 'en' else 'en'}/glossary.html")
    assert page.problems == []


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("section", ["detach-numpy", "detach-check-yourself"])
def test_the_language_switch_keeps_the_section_the_reader_scrolled_to(page, width, section):
    visit(at_width(page, width), "/en/detach.html")
    heading = page.locator(f"#{section} > h2")
    # Scroll with the wheel, as a reader does: no click, no anchor in the address.
    page.mouse.move(width / 2, 400)
    page.mouse.wheel(0, heading.bounding_box()["y"] - 120)
    page.wait_for_function(f"document.querySelector('#{section} > h2').getBoundingClientRect().top < 200")
    assert "#" not in page.url
    # A tap where the link is: Playwright's click() would first scroll the sticky bar's
    # link "into view", to where it would sit without sticking, moving the reader.
    box = page.locator(".book-header-languages a[hreflang='zh-CN']").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(f"**/zh/detach.html#{section}")
    top = page.locator(f"#{section} > h2").bounding_box()["y"]
    assert 0 <= top < 300, top  # the reader is at the same section
    assert page.problems == []


@pytest.mark.parametrize(("language", "width"), [("en", 375), ("zh", 1280)])  # the rings do not depend on the language
def test_every_control_of_the_top_bar_shows_where_the_keyboard_is(page, language, width):
    # Tab from the top of the page through the top bar: each control it stops at draws a ring
    # (an outline or a shadow); the theme's menu button drew none (WCAG 2.4.7).
    visit(at_width(page, width), f"/{language}/detach.html")
    seen = {}
    for stop in range(150):  # at 1280 px the side bar's chapters come first
        page.keyboard.press("Tab")
        found = page.evaluate("""stop => { const e = document.activeElement;
          if (!e.closest('.bd-header-article')) return null;
          e.dataset.bookTabStop ??= stop;  // one entry a control, however it is named
          const s = getComputedStyle(e);
          return [e.dataset.bookTabStop + ' ' + (e.getAttribute('aria-label') || e.textContent.trim()),
                  s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2 || s.boxShadow !== 'none'] }""", stop)
        if found:
            seen[found[0]] = found[1]
        elif seen:  # past the top bar
            break
    assert len(seen) >= 4, seen  # the menu, the language link, colour mode, search (and contents)
    assert all(seen.values()), seen


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_index_lists_the_chapters_under_the_part_headings_of_the_menu(book, language):
    # One caption per toctree of the index's source: the parts the site menu shows.
    from bs4 import BeautifulSoup

    index = BeautifulSoup((book.site() / language / "index.html").read_text(encoding="utf8"), "html.parser")
    captions = index.select(".bd-article .toctree-wrapper p.caption")
    assert len(captions) == len(index_parts(language)) > 1
    listed = [[a["href"].removesuffix(".html") for a in caption.find_next("ul").select(":scope > li > a")]
              for caption in captions]
    assert listed == index_parts(language)


@pytest.mark.scheduled  # pictures for a reviewer (45 s of the run); the menus are tested above
@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_screenshots_of_the_navigation(page, language, mode):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (375, 900, 1280):
        at_width(page, width, mode)
        for name in ("index", "detach"):
            visit(page, f"/{language}/{name}.html")
            page.screenshot(path=str(SCREENSHOTS / f"nav-{language}-{name}-{width}-{mode}.png"))
        visit(page, f"/{language}/index.html")
        page.locator(".bd-article .toctree-wrapper p.caption").first.evaluate("caption => caption.scrollIntoView()")
        page.screenshot(path=str(SCREENSHOTS / f"nav-{language}-index-{width}-{mode}-parts.png"))
        visit(page, f"/{language}/detach.html")
        if width < 992:
            for toggle, dialog, state in ((".primary-toggle", "#pst-primary-sidebar-modal", "menu"),
                                          (".secondary-toggle", "#pst-secondary-sidebar-modal", "contents")):
                page.locator(toggle).locator("visible=true").click()
                expect(page.locator(dialog)).to_be_visible()
                page.screenshot(path=str(SCREENSHOTS / f"nav-{language}-detach-{width}-{mode}-{state}.png"))
                page.keyboard.press("Escape")
                expect(page.locator(dialog)).to_be_hidden()
        else:
            page.locator(".primary-toggle").locator("visible=true").click()
            page.screenshot(path=str(SCREENSHOTS / f"nav-{language}-detach-{width}-{mode}-collapsed.png"))
    assert page.problems == []
