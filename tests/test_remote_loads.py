"""Nothing from another host: every output a browser would make load or run something from
elsewhere fails the build, naming its page and cell (book_extensions/checks/remote_loads.py),
and a built page loads nothing from another host even so (its Content-Security-Policy)."""

import json
import re
from urllib.parse import quote

import pytest
from books import FIXTURES, assert_reported, build_book, warnings_of
from browsing import visit, watched_page

from book_extensions.checks import remote_loads
from book_extensions.checks.remote_loads import check_site, output_problems, url_problem
from book_extensions.commands.chromium import serve
from book_extensions.site.meta_and_footer import CONTENT_SECURITY_POLICY

SVG_NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'


@pytest.mark.unit
@pytest.mark.parametrize("mime_type, data, cause", [
    ("text/html", '<img src="https://img.example/a.png">', "loads https://img.example/a.png (<img src>)"),
    ("text/html", '<IMG SRC = " https://img.example/a.png ">', "loads https://img.example/a.png (<img src>)"),
    ("text/html", '<img srcset="a.png 1x, https://img.example/b.png 2x">', "loads https://img.example/b.png (<img srcset>)"),
    ("text/html", '<picture><source srcset="//img.example/c.webp"></picture>', "loads //img.example/c.webp (<source srcset>)"),
    ("text/html", '<script>fetch("https://api.example/")</script>', "runs a script (<script>)"),
    ("text/html", '<script type="module" src="x.js"></script>', "runs a script (<script>)"),
    ("text/html", '<svg><script>fetch("https://api.example/")</script></svg>', "runs a script (<script>)"),
    ("text/html", '<img src="x.png" onerror="fetch(1)">', "runs code (<img onerror>)"),
    ("text/html", '<svg onload="fetch(1)"></svg>', "runs code (<svg onload>)"),
    ("text/html", '<a href="&#106;avascript:alert(1)">x</a>', "runs code (javascript:alert(1)) (<a href>)"),
    ("text/html", '<a href=" java\tscript:alert(1)">x</a>', "runs code (javascript:alert(1)) (<a href>)"),
    ("text/html", '<svg><image href="https://img.example/d.png"/></svg>', "loads https://img.example/d.png (<image href>)"),
    ("text/html", '<svg><image xlink:href="https://img.example/d.png"/></svg>', "loads https://img.example/d.png (<image href>)"),
    ("text/html", '<svg><use href="https://img.example/s.svg#i"/></svg>', "loads https://img.example/s.svg#i (<use href>)"),
    ("text/html", '<svg><filter><feImage href="https://img.example/f.png"/></filter></svg>',
     "loads https://img.example/f.png (<feImage href>)"),
    ("text/html", '<svg><rect fill="url(https://img.example/g.svg#g)"/></svg>', "loads https://img.example/g.svg#g (<rect fill>)"),
    ("text/html", '<svg><image><set attributeName="href" to="https://img.example/h.png"/></image></svg>',
     "loads https://img.example/h.png (<set to>)"),
    ("text/html", '<div style="background: url(https://img.example/i.png)">', "loads https://img.example/i.png (<div style>)"),
    ("text/html", '<div style="background: u\\72l(https://img.example/i.png)">', "loads https://img.example/i.png (<div style>)"),
    ("text/html", '<div style="background-image: image-set(\'https://img.example/j.png\' 1x)">',
     "loads https://img.example/j.png (<div style>)"),
    ("text/html", '<style>@import "https://css.example/k.css";</style>', "loads https://css.example/k.css (<style>)"),
    ("text/html", '<style>@font-face { src: url(//font.example/l.woff2) }</style>', "loads //font.example/l.woff2 (<style>)"),
    ("text/html", '<svg><style>@import url(https://css.example/m.css);</style></svg>', "loads https://css.example/m.css (<style>)"),
    ("text/html", '<link rel="stylesheet" href="https://css.example/n.css">', "loads https://css.example/n.css (<link href>)"),
    ("text/html", '<link rel="preload" as="font" href="https://font.example/o.woff2">', "loads https://font.example/o.woff2 (<link href>)"),
    ("text/html", '<link rel="prefetch" href="https://img.example/p.png">', "loads https://img.example/p.png (<link href>)"),
    ("text/html", '<link rel="preconnect" href="https://cdn.example">', "loads https://cdn.example (<link href>)"),
    ("text/html", '<link rel="icon" href="https://img.example/q.ico">', "loads https://img.example/q.ico (<link href>)"),
    ("text/html", '<link rel="alternate" imagesrcset="https://img.example/r.png 1x" href="x">',
     "loads https://img.example/r.png (<link imagesrcset>)"),
    ("text/html", '<iframe src="https://frame.example/"></iframe>', "embeds another document (<iframe>)"),
    ("text/html", '<iframe srcdoc="&lt;img src=https://img.example/s.png&gt;"></iframe>', "embeds another document (<iframe>)"),
    ("text/html", '<object data="https://obj.example/t.svg"></object>', "embeds another document (<object>)"),
    ("text/html", '<embed src="https://obj.example/u.swf">', "embeds another document (<embed>)"),
    ("text/html", '<meta http-equiv="refresh" content="0; url=https://away.example/">',
     "acts on the whole page (<meta http-equiv=refresh>)"),
    ("text/html", '<base href="https://away.example/">', "moves every relative URL of the page (<base>)"),
    ("text/html", '<video poster="https://img.example/v.png"></video>', "loads https://img.example/v.png (<video poster>)"),
    ("text/html", '<audio src="https://media.example/w.mp3"></audio>', "loads https://media.example/w.mp3 (<audio src>)"),
    ("text/html", '<video><track src="https://media.example/x.vtt"></video>', "loads https://media.example/x.vtt (<track src>)"),
    ("text/html", '<input type="image" src="https://img.example/y.png">', "loads https://img.example/y.png (<input src>)"),
    ("text/html", '<table background="https://img.example/z.png"></table>', "loads https://img.example/z.png (<table background>)"),
    ("text/html", '<form action="https://away.example/"></form>', "loads https://away.example/ (<form action>)"),
    ("text/html", '<button formaction="https://away.example/">x</button>', "loads https://away.example/ (<button formaction>)"),
    ("text/html", '<a href="#x" ping="https://track.example/">x</a>', "loads https://track.example/ (<a ping>)"),
    ("text/html", '<img src="\\\\img.example\\a.png">', "loads //img.example/a.png (<img src>)"),
    ("text/html", '<img src="https:img.example/a.png">', "loads https:img.example/a.png (<img src>)"),
    ("text/html", '<img src="ftp://files.example/a.png">', "loads ftp://files.example/a.png (<img src>)"),
    ("text/html", '<div data-x="1" whatever="https://img.example/b.png">', "loads https://img.example/b.png (<div whatever>)"),
    ("text/html", '<link rel="stylesheet" href="data:text/css,@import%20url(https://css.example/c.css);">',
     "loads a data: URL (text/css) that loads https://css.example/c.css (<link href>)"),
    ("text/html", '<script src="data:text/javascript,1"></script>', "runs a script (<script>)"),
    ("text/html", '<img src="data:text/html,x">', "loads a data: URL of type text/html (<img src>)"),
    ("text/html", '<template><img src="https://img.example/d.png"></template>', "loads https://img.example/d.png (<img src>)"),
    ("text/html", '<noscript><img src="https://img.example/e.png"></noscript>', "loads https://img.example/e.png (<img src>)"),
    ("text/html", '<math href="javascript:alert(1)"><mi>x</mi></math>', "runs code (javascript:alert(1)) (<math href>)"),
    ("image/svg+xml", f'<svg {SVG_NS}><image xlink:href="https://img.example/f.png"/></svg>',
     "loads https://img.example/f.png (<image href>)"),
    ("image/svg+xml", f'<!DOCTYPE svg [<!ENTITY u "https://img.example/g.png">]><svg {SVG_NS}><image href="&u;"/></svg>',
     "loads https://img.example/g.png (<image href>)"),
    ("image/svg+xml", f'<svg {SVG_NS}><script>fetch(1)</script></svg>', "runs a script (<script>)"),
    ("image/svg+xml", f'<svg {SVG_NS}><style><![CDATA[@import url(https://css.example/h.css);]]></style></svg>',
     "loads https://css.example/h.css (<style>)"),
    ("image/svg+xml", f'<svg {SVG_NS}><foreignObject><img xmlns="http://www.w3.org/1999/xhtml" src="//img.example/i.png"/>'
     "</foreignObject></svg>", "loads //img.example/i.png (<img src>)"),
    ("image/svg+xml", '<svg><image href="https://img.example/j.png"></svg>', "loads https://img.example/j.png (<image href>)"),
    ("image/svg+xml", f'<svg {SVG_NS}><image href="data:image/svg+xml,'
     f'{quote(f"<svg {SVG_NS}><image href={chr(34)}https://img.example/k.png{chr(34)}/></svg>")}"/></svg>',
     "loads a data: URL (image/svg+xml) that loads https://img.example/k.png (<image href>) (<image href>)"),
    ("text/markdown", "![a](https://img.example/l.png)", "loads https://img.example/l.png (<img src>)"),
    ("text/markdown", "![a][r]\n\n[r]: //img.example/m.png", "loads //img.example/m.png (<img src>)"),
    ("text/markdown", 'text <img src="https://img.example/n.png"> more', "loads https://img.example/n.png (<img src>)"),
    ("text/markdown", "<style>\n@import url(https://css.example/o.css);\n</style>", "loads https://css.example/o.css (<style>)"),
    ("text/markdown", "```{image} https://img.example/p.png\n```", "uses the MyST directive {image}"),
    ("text/markdown", ":::{raw} html\n<script></script>\n:::", "uses the MyST directive {raw}"),
    ("text/markdown", "{download}`x <https://files.example/q>`", "uses the MyST role {download}"),
    ("application/javascript", 'fetch("https://api.example/")', "runs a script"),
    ("text/javascript", "1", "runs a script"),
    ("application/vnd.jupyter.widget-view+json", {"model_id": "x"}, "is an interactive widget, which runs scripts"),
    ("application/papermill.record/text/html", '<img src="https://img.example/r.png">',
     "loads https://img.example/r.png (<img src>)"),
    ("text/latex", "$x$", "is LaTeX, which makes the page load MathJax (loads https://cdn.example/mathjax.js)"),
])
def test_an_output_that_loads_or_runs_anything_is_refused(mime_type, data, cause):
    assert output_problems(mime_type, data, mathjax="https://cdn.example/mathjax.js")[0] == cause


@pytest.mark.unit
@pytest.mark.parametrize("mime_type, data", [
    ("text/html", '<b>bold</b> <a href="https://pytorch.org/docs/" title="https://pytorch.org">docs</a>'),
    ("text/html", '<a href="mailto:x@example.org">mail</a> <area href="https://example.org/">'),
    ("text/html", '<img src="_images/a.png" alt="see https://example.org" srcset="a.png 1x, ../b.png 2x">'),
    ("text/html", '<img src="data:image/png;base64,iVBORw0KGgo=">'),
    ("text/html", '<div style="color: red; background: url(local.png)">x: https://example.org</div>'),
    ("text/html", '<table class="dataframe"><tr><th>url</th></tr><tr><td>https://example.org/x.png</td></tr></table>'),
    ("text/html", '<link rel="canonical" href="https://book.example/en/"><link rel="license" href="https://example.org/l">'),
    ("text/html", '<svg><a xlink:href="https://example.org/"><text>x</text></a><use href="#local"/></svg>'),
    ("text/html", '<meta name="description" content="https://example.org/">'),
    ("image/svg+xml", '<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
     '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd"><svg xmlns="http://www.w3.org/2000/svg" '
     'xmlns:xlink="http://www.w3.org/1999/xlink"><metadata><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
     ' xmlns:cc="http://creativecommons.org/ns#"><cc:Work><dc:type xmlns:dc="http://purl.org/dc/elements/1.1/" '
     'rdf:resource="http://purl.org/dc/dcmitype/StillImage"/></cc:Work></rdf:RDF></metadata>'
     '<defs><path id="p" d="M 0 0 L 1 1"/></defs><use xlink:href="#p" style="fill: #1f77b4"/></svg>'),
    ("text/markdown", "| tool | `c is out` |\n|---|---|\n| [docs](https://pytorch.org/) | `x` |"),
    ("text/markdown", "see <https://pytorch.org/> and `{image}`"),
    ("text/plain", '<script src="https://cdn.example/x.js"></script>'),
    ("image/png", "iVBORw0KGgo="),
    ("text/latex", "$x$"),  # MathJax from this site
])
def test_an_output_shown_from_this_site_passes(mime_type, data):
    assert output_problems(mime_type, data, mathjax="_static/mathjax/tex-chtml.js") == []


@pytest.mark.unit
@pytest.mark.parametrize("name, text, cause", [
    # A browser ends these comments early and loads what follows; html.parser read it all as a comment.
    ("page.html", '<p>a</p><!--> <img src="https://img.example/a.png" alt="a"> -->', "a.png (<img src>)"),
    ("page.html", '<!---> <img src="https://img.example/b.png" alt="b"> -->', "b.png (<img src>)"),
    ("page.html", '<!-- x --!> <img src="https://img.example/c.png" alt="c"> -->', "c.png (<img src>)"),
    # Outside SVG a CDATA section is a comment that ends at the first ">".
    ("page.html", '<![CDATA[ x > <img src="https://img.example/d.png" alt="d"> ]]>', "d.png (<img src>)"),
    # Inside an SVG's <style> its text is the sheet.
    ("page.html", '<svg><style><![CDATA[ rect { fill: url(https://img.example/e.svg#g) } ]]></style></svg>',
     "e.svg#g (<style>)"),
    # An SVG file of the site (a page's own image) loads when a reader opens it.
    ("_images/f.svg", '<svg xmlns="http://www.w3.org/2000/svg"><image href="https://img.example/f.png"/></svg>',
     "f.png (<image href>)"),
    # ... whatever the case of its suffix, which a server types alike (attack 10: pic.SVG passed).
    ("_images/g.SVG", '<svg xmlns="http://www.w3.org/2000/svg"><image href="https://img.example/g.png"/></svg>',
     "g.png (<image href>)"),
    ("page.HTML", '<img src="https://img.example/h.png" alt="h">', "h.png (<img src>)"),
])
def test_the_site_scan_sees_what_a_browser_loads_from_raw_html_and_svg_files(tmp_path, name, text, cause):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if name.lower().endswith(".svg") else f"<html><body>{text}</body></html>", encoding="utf8")
    assert check_site(tmp_path) == [(name, f"loads https://img.example/{cause}")]


@pytest.mark.unit
def test_the_site_scan_leaves_a_comment_a_browser_keeps_whole(tmp_path):
    (tmp_path / "page.html").write_text('<p><!-- <img src="https://img.example/x.png"> --></p>', encoding="utf8")
    assert check_site(tmp_path) == []


@pytest.mark.unit
def test_a_page_found_clean_by_other_rules_is_scanned_again(tmp_path, monkeypatch):
    """The scan skips a page it found clean while its bytes are the same, but only under the
    same rules: a verdict of older rules (before a gap was closed) must not keep passing a page
    the new rules fail."""
    from types import SimpleNamespace

    from book_extensions.checks import remote_loads

    site, doctrees = tmp_path / "html", tmp_path / "doctrees"
    site.mkdir()
    doctrees.mkdir()
    page = site / "page.html"
    page.write_text('<html><body><!--> <img src="https://img.example/a.png"> --></body></html>', encoding="utf8")
    digest = remote_loads.hashlib.sha256(page.read_bytes()).hexdigest()
    # What the rules before this one recorded: this page, clean.
    (doctrees / "book-offline-clean-relative.json").write_text(json.dumps({"page.html": digest}))
    warned = []
    monkeypatch.setattr(remote_loads, "logger", SimpleNamespace(warning=lambda message, **_: warned.append(message)))
    app = SimpleNamespace(config=SimpleNamespace(book_base_url="", book_cache_root=str(tmp_path / "cache")),
                          outdir=str(site), doctreedir=str(doctrees))
    remote_loads.check_build(app)
    assert warned and "page.html loads https://img.example/a.png" in warned[0]


@pytest.mark.unit
def test_a_content_found_clean_in_one_build_is_not_scanned_in_another(tmp_path, monkeypatch):
    # Each new build folder copies the same theme sheets: their verdict is kept by content
    # (with the rules and the host) in a folder all builds share, and only a clean one.
    from book_extensions.checks import remote_loads

    shared = tmp_path / "shared"
    sheet, bad = "a { color: red }", "a { background: url(https://img.example/a.png) }"
    for build in ("one", "two"):
        (tmp_path / build).mkdir()
        (tmp_path / build / "a.css").write_text(sheet, encoding="utf8")
        (tmp_path / build / "b.css").write_text(bad, encoding="utf8")
    scanned = []
    real = remote_loads.remote_loads
    monkeypatch.setattr(remote_loads, "remote_loads", lambda path, host="": scanned.append(path.name) or real(path, host))
    problem = [("b.css", "loads https://img.example/a.png")]
    assert check_site(tmp_path / "one", "", None, shared, "rules 1") == problem
    assert check_site(tmp_path / "two", "", None, shared, "rules 1") == problem
    assert scanned == ["a.css", "b.css", "b.css"]  # the problem is found again, every time
    assert check_site(tmp_path / "two", "book.example", None, shared, "rules 1") == problem
    assert check_site(tmp_path / "two", "", None, shared, "rules 2") == problem  # other rules: scanned again
    assert scanned[3:] == ["a.css", "b.css", "a.css", "b.css"]
    (tmp_path / "two" / "a.css").write_text(bad, encoding="utf8")  # the same name, other bytes
    assert check_site(tmp_path / "two", "", None, shared, "rules 1") == [("a.css", problem[0][1]), *problem]


@pytest.mark.unit
def test_this_sites_own_host_is_not_another():
    assert url_problem("https://book.example/_static/a.js", own_host="book.example") is None
    assert url_problem("//book.example/a.png", own_host="book.example") is None
    assert url_problem("https://book.example.evil/a.png", own_host="book.example") == "loads https://book.example.evil/a.png"
    assert url_problem("https://pytorch.org/", navigation=True) is None


@pytest.fixture(scope="session")  # one worker builds it, once a run (conftest.py: FIXTURE_BOOKS)
def remote_outputs(tmp_path_factory):
    return build_book(FIXTURES / "remote_outputs" / "docs", tmp_path_factory.mktemp("remote-outputs"),
                      "html", "--language", "en")


# The fixture's cells, from its second (the first imports): what each is refused for.
CAUSES = [
    "loads https://img.example/a.png (<img src>)",
    "loads https://img.example/b.png (<img srcset>)",
    "runs a script (<script>)",  # an inline script calling fetch()
    "runs a script (<script>)",  # <script src>
    "loads https://img.example/c.png (<image href>)",  # SVG inside HTML
    "image/svg+xml output loads https://img.example/d.png (<image href>)",  # xlink:href
    "loads https://img.example/e.png (<div style>)",
    "loads https://css.example/f.css (<style>)",
    "loads https://css.example/g.css (<link href>)",
    "loads https://img.example/h.png (<link href>)",
    "loads https://img.example/i.png (<link href>)",
    "embeds another document (<iframe>)",
    "embeds another document (<object>)",
    "acts on the whole page (<meta http-equiv=refresh>)",
    "text/markdown output loads https://img.example/k.png (<img src>)",
    "image/svg+xml output loads https://img.example/l.png (<image href>)",
    "application/javascript output runs a script",
    "loads //img.example/n.png (<img src>)",
    "runs code (<img onerror>)",
    "runs code (javascript:fetch('https://api.example/p')) (<a href>)",
    "loads https://img.example/q.png (<img src>)",  # glued
    "loads https://img.example/r.png (<video poster>)",
    "loads https://img.example/s.svg#i (<use href>)",
    "loads https://img.example/t.svg#g (<rect fill>)",
    "loads a data: URL (text/css) that loads https://css.example/u.css (<link href>)",
    "loads //img.example/v.png (<img src>)",  # backslashes
    "moves every relative URL of the page (<base>)",
    "widget-view+json output is an interactive widget, which runs scripts",
    "loads https://dns.example/ (<link href>)",  # dns-prefetch
    "loads https://track.example/w (<a ping>)",
    "loads https://away.example/x (<form action>)",
    "text/markdown output loads https://img.example/y.png (<img src>)",  # raw HTML in markdown
]


@pytest.mark.fixture
def test_every_output_that_loads_from_another_host_fails_naming_its_cell(remote_outputs):
    assert remote_outputs.returncode == 1, remote_outputs.output
    assert_reported(remote_outputs.output, [("en/index.md:", f"code cell {number}'s ") for number in range(2, 34)])
    for number, cause in enumerate(CAUSES, start=2):
        assert_reported(remote_outputs.output, [("en/index.md:", f"code cell {number}'s "),
                                                (f"code cell {number}'s ", cause)])
    cells = [line for line in warnings_of(remote_outputs.output) if "[book.remote_output]" in line]
    assert len(cells) == len(CAUSES)  # one line each
    assert all(re.search(r"en/index\.md:\d+: WARNING: code cell \d+'s ", line) for line in cells), cells
    # The good page's outputs (HTML with a link to follow, an SVG, a markdown table) pass.
    assert "good.md" not in remote_outputs.output and "good.html" not in remote_outputs.output
    assert "Traceback" not in remote_outputs.output


@pytest.mark.fixture
def test_a_built_page_loads_nothing_from_another_host_even_so(remote_outputs, browser):
    """Chromium opens the failed build's pages (the working folder): the policy stops every
    load the bad outputs try before it leaves the browser; only the <meta> refresh's
    navigation, which no policy can stop, leaves, and the gate refuses it. The good page:
    no request, no error."""
    with serve(remote_outputs.work()) as base:
        good = watched_page(browser, base)
        bad = watched_page(browser, base)  # its problems: what reached the network (then aborted)
        blocked = []
        bad.on("requestfailed", lambda r: r.failure == "csp" and blocked.append(r.url))
        try:
            visit(good, "/en/good.html", quiet_network=True)
            assert good.problems == []
            policy = good.locator('meta[http-equiv="Content-Security-Policy"]')
            assert policy.get_attribute("content") == CONTENT_SECURITY_POLICY
            visit(bad, "/en/index.html", quiet_network=True)
            bad.wait_for_timeout(500)
            assert {p for p in bad.problems if p.startswith("request to")} == {"request to https://away.example/"}
            assert {"https://img.example/a.png", "https://cdn.example/x.js", "https://css.example/f.css",
                    "https://img.example/c.png", "https://img.example/y.png"} <= set(blocked), blocked
            refused = " ".join(bad.problems)
            for what in ("Connecting to 'https://api.example/ping'", "Framing 'https://frame.example/'",
                         "Loading plugin data from 'https://obj.example/j.svg'", "base URI to 'https://away.example/'"):
                assert what in refused, bad.problems
        finally:
            good.context.close()
            bad.context.close()


@pytest.mark.parametrize("html, remote", [
    ('<script src="https://cdn.example.com/a.js"></script>', ["https://cdn.example.com/a.js"]),
    ('<script src="_static/a.js"></script>', []),
    ('<link rel="stylesheet" href="//fonts.example.com/f.css">', ["//fonts.example.com/f.css"]),
    ('<link rel="preload" as="font" href="https://x.example/f.woff2">', ["https://x.example/f.woff2"]),
    ('<link rel="alternate" hreflang="en" href="https://book.example/en/">', []),
    ('<link rel="canonical" href="https://book.example/en/">', []),
    ('<a href="https://pytorch.org/docs/">docs</a>', []),
    ('<img src="data:image/png;base64,AAAA">', []),
    ('<img srcset="a.png 1x, https://img.example/b.png 2x">', ["https://img.example/b.png"]),
    ('<div style="background: url(https://img.example/bg.png)"></div>', ["https://img.example/bg.png"]),
    ('<style>@import "https://css.example/x.css";</style>', ["https://css.example/x.css"]),
    ('<iframe src="https://www.youtube.com/embed/x"></iframe>', ["https://www.youtube.com/embed/x"]),
    # The site's own scripts run, but fetch from this site only (raw HTML in prose is the site's
    # too): a URL of another host in an inline script or an on* handler; a "//" comment is none.
    ('<script>fetch("https://api.example/")</script>', ["https://api.example/"]),
    ('<script>// a comment\nlet u = "//cdn.example/x.js"</script>', ["//cdn.example/x.js"]),
    ('<script>// a comment\ntoggle("/en/")</script>', []),
    ("<div onclick=\"fetch('https://v15.example/x')\">x</div>", ["https://v15.example/x"]),
    ('<button onclick="toggleFullScreen()">x</button>', []),
    # A frame's srcdoc is a whole document: what it loads, its scripts fetch.
    ("<iframe srcdoc=\"<img src=https://v2.example/a.png><script>fetch('https://v3.example')</script>\"></iframe>",
     ["https://v2.example/a.png", "https://v3.example"]),
    # SVG and refresh as an output's.
    ('<svg><image xlink:href="https://img.example/a.png"/></svg>', ["https://img.example/a.png"]),
    ('<meta http-equiv="refresh" content="0; url=https://away.example/">', ["<meta http-equiv=refresh>"]),
    ('<link rel="dns-prefetch" href="//dns.example">', ["//dns.example"]),
])
def test_remote_loads_in_html(tmp_path, html, remote):
    page = tmp_path / "page.html"
    page.write_text(f"<html><head></head><body>{html}</body></html>")
    found = remote_loads.remote_loads(page)  # one problem each, naming its URL or element
    assert len(found) == len(remote) and all(what in problem for what, problem in zip(remote, found)), found


def test_remote_loads_in_css_and_own_host(tmp_path):
    css = tmp_path / "a.css"
    css.write_text("@font-face { src: url('https://fonts.example/x.woff2'); } .a { background: url(img.png) }")
    assert remote_loads.remote_loads(css) == ["loads https://fonts.example/x.woff2"]
    page = tmp_path / "p.html"
    page.write_text('<script src="https://book.example/_static/a.js"></script>')
    assert remote_loads.remote_loads(page, own_host="book.example") == []
