"""A page's first paint waits for nothing but its HTML (book_extensions/site/first_paint.py):
the CSS the page uses inline, its scripts deferred."""

from __future__ import annotations

import re
import shutil

import pytest

from book_extensions.site import first_paint

MARK = first_paint.MARK

HEAD = """<!DOCTYPE html><html><head>
  <script data-cfasync="false">document.documentElement.dataset.mode = "auto";</script>
  <link href="../_static/styles/theme.css?digest=1" rel="stylesheet" />
    <link rel="stylesheet" type="text/css" href="../_static/book.css?v=2" />
    <script src="../_static/documentation_options.js?v=3"></script>
    <script defer="defer" src="../_static/own.js?v=4"></script>
    <script src="../_static/doctools.js?v=5"></script>
    <script>DOCUMENTATION_OPTIONS.pagename = 'page';</script>
  </head>"""


@pytest.fixture
def site(tmp_path):
    """One page under en/, with a theme sheet that @imports another, a sheet of the
    book's own, an icon font and scripts."""
    static = tmp_path / "_static"
    (static / "styles").mkdir(parents=True)
    (static / "vendor").mkdir()
    (static / "styles" / "theme.css").write_text('@import "../basic.css";\n.bd-header{position:sticky}', encoding="utf8")
    (static / "basic.css").write_text("img{max-width:100%}.below-only{color:red}", encoding="utf8")
    (static / "book.css").write_text(
        ":root{--used:1px;--unused:2px}.bd-header{border-width:var(--used)}"
        "@font-face{font-family:Icons;src:url(vendor/icons.woff2) format(\"woff2\")}"
        ".icon::before{font-family:Icons;content:\"\\f015\"}"
        "@font-face{font-family:Unused;src:url(vendor/unused.woff2)}"
        ".deep .below-only{background:url(vendor/x.png)}", encoding="utf8")
    (static / "documentation_options.js").write_text("const DOCUMENTATION_OPTIONS = {};", encoding="utf8")
    (static / "doctools.js").write_text("", encoding="utf8")
    page = (HEAD + '<body><header class="bd-header"><i class="icon"></i><img src="x.png"></header>'
            '<article class="bd-article"><p>text</p></article></body></html>')
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "page.html").write_text(page, encoding="utf8")
    return tmp_path


def rewritten(site, page="en/page.html"):
    first_paint.rewrite_site(site)
    return (site / page).read_text(encoding="utf8")


def inline_css(page: str) -> str:
    return re.search(rf"<style {MARK}>(.*?)</style>", page, re.S).group(1)


def test_the_rules_the_page_can_use_are_inline_and_the_others_are_not(site):
    css = inline_css(rewritten(site))
    assert ".bd-header{position:sticky" in css  # the theme sheet
    assert "img{max-width:100%" in css  # the sheet it @imports, in its place
    assert css.index("position:sticky") > css.index("max-width")  # basic.css first, as @import puts it
    assert "below-only" not in css  # no element of the page has that class
    assert "--used:1px" in css and "--unused" not in css
    assert "font-family:Icons" in css and "Unused" not in css
    # Rewritten for the page, one folder down from the sheet's.
    assert "url(../_static/vendor/icons.woff2)" in css


def test_the_stylesheets_are_no_longer_loaded(site):
    page = rewritten(site)
    assert not re.findall(r"<link\b[^>]*stylesheet", page)
    assert page.index(f"<style {MARK}>") < page.index("</head>")


def test_scripts_wait_for_the_page_and_keep_their_order(site):
    page = rewritten(site)
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, re.S)
    sources = [(attributes, re.search(r'(?<![\w-])src="([^"]+)"', attributes)) for attributes, _ in scripts]
    external = [(attributes, src.group(1)) for attributes, src in sources if src]
    # doctools.js ran before own.js (blocking, then deferred): still does, both deferred.
    assert [src for _, src in external] == ["../_static/doctools.js?v=5", "../_static/own.js?v=4"]
    assert all(re.search(r"\bdefer\b", attributes) for attributes, _ in external)
    # documentation_options.js is inline, before the inline script that assigns to it.
    bodies = [body for _, body in scripts]
    options = bodies.index("const DOCUMENTATION_OPTIONS = {};")
    assert options < bodies.index("DOCUMENTATION_OPTIONS.pagename = 'page';")
    assert bodies[0].startswith("document.documentElement.dataset.mode")  # the theme's mode, still first


def test_a_second_run_gives_the_same_page(site):
    once = rewritten(site)
    assert rewritten(site) == once
    assert first_paint.undo(once).count('rel="stylesheet"') == 2


def test_a_page_without_local_stylesheets_is_left_alone(site):
    page = site / "en" / "page.html"
    bare = re.sub(r"<link\b[^>]*>", "", page.read_text(encoding="utf8"))
    page.write_text(bare, encoding="utf8")
    assert rewritten(site) == bare


def test_the_real_sheets_are_read_whole(tmp_path):
    """The theme's sheet parses into rules the inline CSS is made of (a guard on the
    parser's view of the trimmed sheets the real book ships)."""
    from books import THEME_STATIC

    shutil.copy(THEME_STATIC / "styles" / "pydata-sphinx-theme.css", tmp_path / "theme.css")
    (found,) = first_paint.read_sheet(tmp_path, "theme.css", set())
    assert found[0] == "theme.css" and len(found[1]) > 100


def test_the_search_page_keeps_its_scripts_as_they_are(site):
    """searchtools.js's _ready() must wait for the deferred own.js (book-search.js), which
    expects searchindex.js to have run: nothing is moved or deferred there."""
    page = site / "en" / "page.html"
    page.write_text(page.read_text(encoding="utf8").replace(
        "<script>DOCUMENTATION_OPTIONS.pagename", '<script src="../_static/searchtools.js"></script>\n'
        '    <script src="../searchindex.js"></script>\n    <script>DOCUMENTATION_OPTIONS.pagename'), encoding="utf8")
    before = re.findall(r"<script\b[^>]*>", page.read_text(encoding="utf8"))
    assert re.findall(r"<script\b[^>]*>", rewritten(site)) == before


def test_a_declaration_browsers_drop_is_not_inlined(site):
    # pydata-sphinx-theme writes a transition's delay as a string ("0s"): browsers drop the
    # declaration, and the HTML checker rejects the page once the CSS is inline.
    theme = site / "_static" / "styles" / "theme.css"
    theme.write_text(theme.read_text(encoding="utf8").replace(
        "position:sticky", 'position:sticky;transition:opacity .4s linear,visibility 0s linear "0s";'
        "-webkit-transition-delay:'0s';transition:opacity .2s"), encoding="utf8")
    css = inline_css(rewritten(site))
    assert ".bd-header{position:sticky;transition:opacity .2s" in css
    assert '"0s"' not in css and "'0s'" not in css


def test_what_the_scripts_need_at_run_time_stays(site):
    # copybutton.js gives every code block an svg icon (a page may have no svg of its own),
    # and bootstrap.js reads --bs-position to open a dropdown under its button's right edge;
    # both were dropped: the icon drawn black at the wrong size, the theme menu misplaced.
    static = site / "_static"
    (static / "copybutton.css").write_text("button.copybtn svg{stroke:currentColor;width:1.5em}", encoding="utf8")
    (static / "book.css").write_text(".dropdown-menu-end{--bs-position:end}.bd-header{color:red}", encoding="utf8")
    (static / "scripts").mkdir()
    (static / "scripts" / "bootstrap.js").write_text('x.getPropertyValue("--bs-position")', encoding="utf8")
    page = site / "en" / "page.html"
    page.write_text(page.read_text(encoding="utf8").replace(
        '<link rel="stylesheet" type="text/css" href="../_static/book.css?v=2" />',
        '<link rel="stylesheet" type="text/css" href="../_static/book.css?v=2" />'
        '<link rel="stylesheet" type="text/css" href="../_static/copybutton.css" />'), encoding="utf8")
    css = inline_css(rewritten(site))
    assert "button.copybtn svg{stroke:currentColor" in css
    assert ".dropdown-menu-end{--bs-position:end" in css


def test_with_a_record_only_changed_pages_are_rewritten_and_come_out_as_in_a_full_run(site, tmp_path_factory):
    record = tmp_path_factory.mktemp("doctrees") / first_paint.RECORD
    other = (site / "en" / "page.html").read_text(encoding="utf8").replace("<p>text</p>", "<p>other</p>")
    (site / "en" / "other.html").write_text(other, encoding="utf8")
    assert first_paint.rewrite_site(site, record)[:2] == (2, 2)
    assert first_paint.rewrite_site(site, record)[:2] == (2, 0)  # nothing changed
    # Sphinx writes one page again (a prose edit): that page only.
    (site / "en" / "other.html").write_text(other.replace("other", "edited"), encoding="utf8")
    assert first_paint.rewrite_site(site, record)[:2] == (2, 1)
    incremental = {p.name: p.read_text(encoding="utf8") for p in (site / "en").glob("*.html")}
    assert first_paint.rewrite_site(site)[:2] == (2, 2)  # without a record, every page
    assert {p.name: p.read_text(encoding="utf8") for p in (site / "en").glob("*.html")} == incremental
    # A stylesheet that changes changes every page's inline CSS: every page again.
    with (site / "_static" / "book.css").open("a", encoding="utf8") as sheet:
        sheet.write(".bd-article{margin:0}")
    assert first_paint.rewrite_site(site, record)[:2] == (2, 2)
    assert ".bd-article{margin:0;}" in inline_css((site / "en" / "page.html").read_text(encoding="utf8"))
