"""One browser sweep per language and width: every page of the built book opened once,
and every measure the browser tier takes of all pages read on that one visit.

- 375 px (a phone, weight.PHONE): each page in a fresh context (nothing cached) until the
  network is quiet: its first load (what it downloaded) and its problems (console and
  script errors, requests to another host), then the layout measures;
- 900 px and 1280 px (900 px high, light colours): the pages in one context, each measured
  once loaded with its fonts; at 1280 px axe's accessibility rules run too, after the
  measures, on the search page as well (color-contrast once per text style: AXE_CONTRAST_OF_MARKED).

Measured once per test session and worker: every test that reads a sweep carries SWEPT, and
conftest.py puts it in its language's xdist_group, so that one worker opens each page of a
language once per width, and the two languages' sweeps run on two workers at once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from browsing import visit, watched_page

from book_extensions.commands.weight import PHONE, RESPONSES, Load

SWEPT = pytest.mark.swept  # reads the sweeps of its "language" parameter, or of swept(language)
WIDTHS = (375, 900, 1280)
PHONE_WIDTH = PHONE["width"]
AXE_WIDTH = 1280
# Pages that are not chapters: the layout measures skip them; first loads and axe do not.
NOT_CHAPTERS = ("genindex.html", "search.html")


def chapters(site: Path, language: str) -> list[str]:
    """The chapter pages of one language of the built site (``site``: the site's folder)."""
    return sorted(p.name for p in (site / language).glob("*.html") if p.name not in NOT_CHAPTERS)


@dataclass
class Visit:
    """What one page showed at one width; None where that width does not take the measure."""
    load: Load | None = None  # the first load's responses (375 px)
    problems: list[str] = field(default_factory=list)  # during the first load (375 px)
    survey: dict | None = None  # SURVEY (chapters)
    measure: dict | None = None  # MEASURE (chapters)
    axe: list | None = None  # axe's violations, [id, impact, nodes] (1280 px)


# Per page: what breaks test_browser_layout.py's rules, measured in the browser. A code
# element (or one word of it) that spans more than one line box has been broken across lines. Tables of
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
  // A long name broken between its words (readable_layout.py's span.book-name-break).
  const nameBreaks = [...document.querySelectorAll('.bd-article .book-name-break')]
    .filter(mark => mark.previousElementSibling && mark.nextElementSibling
      && mark.nextElementSibling.getBoundingClientRect().top > mark.previousElementSibling.getBoundingClientRect().top + 2)
    .map(mark => text(mark.parentElement));
  // Inline code that runs past the right edge of its block (into the column's padding, or out
  // of an exercise's choice), where the page itself need not scroll.
  const blockOf = el => {
    let b = el.parentElement;
    while (getComputedStyle(b).display.startsWith('inline')) b = b.parentElement;
    return b;
  };
  const pastEdge = [...document.querySelectorAll('.bd-article code.literal')]
    .filter(code => !code.closest('pre, nav, .book-cell-label') && code.getClientRects().length)
    .map(code => {
      const block = blockOf(code), style = getComputedStyle(block);
      const edge = block.getBoundingClientRect().right - parseFloat(style.borderRightWidth);
      return [text(code), Math.round(Math.max(...[...code.getClientRects()].map(r => r.right)) - edge)];
    })
    .filter(([, by]) => by > 0);
  return {brokenInTables, brokenWords, messages: blocks.length, scrolling, nameBreaks, pastEdge,
          pageWidth: document.scrollingElement.scrollWidth};
}"""


# Per page, the rules of issue 20 measured in the browser:
# - tables: a table's box that scrolls sideways, a cell past the screen's edge, a body
#   cell whose label (readable_layout.py's span.book-cell-label) is missing or does not repeat
#   its column's header, how the table is laid out (a real table or cards), whether it is
#   marked too wide for a phone (book-wide) and whether it fits laid out as a table;
# - printed text (outputs, doctests, other releases' outputs): a block that scrolls
#   sideways, and an identifier or a number whose characters sit on two lines (a Range
#   over the token whose boxes start on two lines); a URL is checked piece by piece;
# - doctests: a wrapped input line whose continuation does not hang right of its prompt;
# - Chinese: a closing punctuation mark that starts a line (a Range per character: one
#   whose box starts below the previous character's, in the same block);
# - the rules of issue 33: a wrapped output line's hang, the headings' sizes and lines,
#   the top bar's tap targets, what the copy buttons cover, characters per line of prose;
#   a heading's line that ends inside a Chinese word.
SURVEY = """language => {
  const W = document.documentElement.clientWidth;
  const HAN = /[\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff]/;
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
    // Whether it fits laid out as a table: measured with readable_layout's mark taken off.
    const wide = table.classList.contains('book-wide');
    table.classList.remove('book-wide');
    // (with room: one that needs nine tenths of the column or more reads as cramped)
    const fitsAsTable = box.scrollWidth < 0.9 * box.clientWidth;
    const overflowsAsTable = box.scrollWidth > box.clientWidth + 1;
    if (wide) table.classList.add('book-wide');
    return {text: short(table), scrolls: box.scrollWidth > box.clientWidth + 1, wide, fitsAsTable, overflowsAsTable,
            rows: table.querySelectorAll('tbody tr').length,
            cellsOff: cells.filter(c => visible(c) && c.getBoundingClientRect().right > W + 0.5).map(short),
            labelsWrong: labels.filter(l => !l.ok).length, labelsShown: labels.filter(l => l.shown).length,
            cells: labels.length, display: getComputedStyle(table).display, headShown};
  });
  // A block's text, and where its i-th character is: [text node, offset] (a Range's ends).
  const textOf = pre => {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    let all = '';
    while (walker.nextNode()) { texts.push([walker.currentNode, all.length]); all += walker.currentNode.data; }
    return [all, i => { let k = texts.length - 1; while (k > 0 && texts[k][1] > i) k--; return [texts[k][0], i - texts[k][1]]; }];
  };
  const printed = [...document.querySelectorAll('.cell_output .output pre, div.highlight-pycon pre, .book-release-output pre')];
  const token = /[A-Za-z_][A-Za-z0-9_]*|\\d+(?:\\.\\d+)?(?:e[-+]?\\d+)?/g;
  const brokenTokens = [];
  for (const pre of printed) {
    const [all, at] = textOf(pre);
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
    const [all, at] = textOf(pre);
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
  // Outputs: every printed line that wraps, and how far right of the line's start its
  // continuation starts (in the block's characters).
  const outputHangs = [];
  for (const pre of document.querySelectorAll('.cell_output .output pre, .book-release-output pre')) {
    if (!visible(pre)) continue;
    const [all, at] = textOf(pre);
    let start = 0;
    for (const line of all.split('\\n')) {
      if (line.trim()) {
        const range = document.createRange();
        range.setStart(...at(start));
        const [node, offset] = at(start + line.length - 1);
        range.setEnd(node, offset + 1);
        const rects = tops(range);
        const below = rects.filter(r => r.top >= rects[0].bottom - 1);
        if (below.length) {
          const n = Math.min(10, line.length);  // the width of a character: of the first ten
          range.setEnd(...at(start + n));
          const ch = range.getBoundingClientRect().width / n;
          // Where the line's text starts, after its indentation: a continuation that does
          // not start right of it reads as an entry of its own, or as a nested one.
          const indent = line.length - line.trimStart().length;
          const first = document.createRange();
          first.setStart(...at(start + indent));
          const [textNode, textOffset] = at(start + indent);
          first.setEnd(textNode, textOffset + 1);
          outputHangs.push({line: line.slice(0, 60), indent, hang: Math.min(...below.map(r => r.left)) - tops(first)[0].left, ch});
        }
      }
      start += line.length + 1;
    }
  }
  // Headings: size and weight, and the lines each takes (its boxes' distinct rows).
  const headings = [...document.querySelectorAll('.bd-article :is(h1, h2, h3, h4)')].map(h => {
    const range = document.createRange();
    range.selectNodeContents(h);
    let lines = 0, bottom = -Infinity;
    for (const r of tops(range).sort((a, b) => a.top - b.top)) {
      if (r.top >= bottom - 1) { lines++; bottom = r.bottom; } else bottom = Math.max(bottom, r.bottom);
    }
    const style = getComputedStyle(h);
    // A line that ends between two Chinese characters with no <wbr> between them: inside a word.
    const midWord = [];
    const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
    let node, before = null, opportunity = false;
    while ((node = walker.nextNode())) {
      if (node.nodeType === Node.ELEMENT_NODE) { opportunity ||= node.tagName === 'WBR'; continue; }
      for (let k = 0; k < node.data.length; k++) {
        const character = node.data[k];
        if (/\\s/.test(character)) { before = null; continue; }
        const glyph = document.createRange();
        glyph.setStart(node, k);
        glyph.setEnd(node, k + 1);
        const rect = glyph.getClientRects()[0];
        if (!rect) continue;
        if (before && !opportunity && HAN.test(before.character) && HAN.test(character) && rect.top >= before.bottom - 1)
          midWord.push(before.character + '|' + character);
        before = {character, bottom: rect.bottom};
        opportunity = false;
      }
    }
    return {tag: h.tagName.toLowerCase(), size: parseFloat(style.fontSize), weight: +style.fontWeight, lines, midWord,
            text: h.textContent.replace(/#$/, '').trim().slice(0, 80)};
  });
  // The top bar's controls a reader taps, as laid out (the full-screen button by its class).
  const controls = [...document.querySelectorAll('.bd-header-article :is(a[href], button, .btn)')]
    .filter(visible).map(el => {
      const box = el.getBoundingClientRect();
      return {name: (el.getAttribute('aria-label') || el.title || el.textContent).trim().slice(0, 40),
              width: box.width, height: box.height, fullscreen: el.matches('.btn-fullscreen-button')};
    });
  // The previous and next pages' links at the foot of the page: every box inside them (an
  // arrow, a title, its code) as laid out, to be within the screen.
  const pageLinks = [...document.querySelectorAll('.prev-next-area a, .prev-next-area a *')].filter(visible).map(el => {
    const box = el.getBoundingClientRect();
    return {what: (el.className || el.tagName).toString().slice(0, 40), left: box.left, right: box.right,
            text: el.textContent.trim().slice(0, 40)};
  });
  // Copy buttons: the code they would cover (boxes of the code's text, as far as the code
  // box shows it, that meet the button's), and whether they are shown.
  const copyButtons = [...document.querySelectorAll('.bd-article div.highlight > button.copybtn')].filter(visible).map(button => {
    const pre = button.parentElement.querySelector(':scope > pre');
    const b = button.getBoundingClientRect(), box = pre.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(pre);
    const covered = tops(range).some(r => r.left < Math.min(b.right, box.right) && r.right > b.left
                                        && r.top < b.bottom && r.bottom > b.top && r.height > 0);
    return {code: short(pre).slice(0, 40), covered, opacity: +getComputedStyle(button).opacity};
  });
  // The measure: characters per line of the article's paragraphs of three lines or more.
  const perLine = [...document.querySelectorAll('.bd-article section > p')].flatMap(p => {
    const lines = Math.round(p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight));
    return lines >= 3 ? [p.textContent.replace(/\\s+/g, ' ').trim().length / lines] : [];
  });
  // Orphans: a paragraph or list item of two lines or more whose last line holds less
  // than two ems of text (a word, or a Chinese character and its full stop, left alone).
  const orphans = [...document.querySelectorAll('.bd-article section > p, .bd-article section li > p')].flatMap(p => {
    if (!visible(p)) return [];
    const range = document.createRange();
    range.selectNodeContents(p);
    // Rows of boxes: a box that starts below the current row's middle starts a new row
    // (inline code's boxes are taller than the text's, and start higher).
    const rows = [];
    for (const r of tops(range).sort((a, b) => a.top - b.top)) {
      const row = rows[rows.length - 1];
      if (row === undefined || r.top > (row.top + row.bottom) / 2) rows.push({top: r.top, bottom: r.bottom, left: r.left, right: r.right});
      else Object.assign(row, {bottom: Math.max(row.bottom, r.bottom), left: Math.min(row.left, r.left),
                               right: Math.max(row.right, r.right)});
    }
    if (rows.length < 2) return [];
    const last = rows[rows.length - 1];
    const em = parseFloat(getComputedStyle(p).fontSize);
    return last.right - last.left < 2 * em ? [p.textContent.replace(/\\s+/g, ' ').trim().slice(-30)] : [];
  });
  // Quoted messages after a bold label (a paragraph of a <strong> first, then inline code and
  // punctuation only: the error atlas's "Message:"), on more than one line, with a box (a
  // border or a background): each line's piece is a closed box only where the box is cloned
  // per piece (box-decoration-break).
  const labelLine = p => p.firstChild === p.firstElementChild && p.firstElementChild?.tagName === 'STRONG'
    && [...p.childNodes].slice(1).every(n => n.nodeName === 'CODE' || n.nodeName === 'WBR'
                                            || (n.nodeType === Node.TEXT_NODE && !/[^\\s,:;，、：；]/.test(n.data)));
  const wrappedCode = [...document.querySelectorAll('.bd-article p > code.literal')].filter(code => {
    const s = getComputedStyle(code);
    const boxed = parseFloat(s.borderLeftWidth) > 0 || s.backgroundColor !== 'rgba(0, 0, 0, 0)';
    return labelLine(code.parentElement) && boxed && code.getClientRects().length > 1;
  }).map(code => ({text: short(code).slice(0, 60),
                   closed: (getComputedStyle(code).boxDecorationBreak || getComputedStyle(code).webkitBoxDecorationBreak) === 'clone'}));
  return {tables, scrolling, brokenTokens, printed: printed.length, hangs, lineStarts,
          outputHangs, headings, controls, pageLinks, copyButtons, wrappedCode, perLine, orphans};
}"""


_SWEEPS: dict[tuple[Path, str, int], dict[str, Visit]] = {}


def sweep(browser, site: str, folder: Path, language: str, width: int) -> dict[str, Visit]:
    """Every page of ``language`` at ``width``, per page name (``detach.html``): the site's
    ``folder`` served at ``site``. The chapters are surveyed; 375 px adds the first loads
    of every page, 1280 px axe's violations of the chapters and the search page."""
    key = (folder, language, width)
    if key in _SWEEPS:
        return _SWEEPS[key]
    names = chapters(folder, language)
    found: dict[str, Visit] = {}
    if width == PHONE_WIDTH:
        for name in sorted(p.name for p in (folder / language).glob("*.html")):
            page = watched_page(browser, site, viewport=PHONE)
            try:
                # A first load checks requests, scripts' later fetches included: it waits
                # for the network to be quiet.
                visit(page, f"/{language}/{name}", quiet_network=True)
                visited = found[name] = Visit(Load(f"{language}/{name}", dict(page.evaluate(RESPONSES))),
                                              list(page.problems))
                if name in names:
                    measure(page, language, visited)
            finally:
                page.context.close()
    else:
        contrast_styles: set[str] = set()  # the text styles whose contrast axe has checked (AXE_WIDTH)
        page = watched_page(browser, site, viewport={"width": width, "height": 900}, color_scheme="light")
        try:
            for name in names + (["search.html"] if width == AXE_WIDTH else []):
                visit(page, f"/{language}/{name}")
                visited = found[name] = Visit()
                if name in names:
                    measure(page, language, visited)
                if width == AXE_WIDTH:  # after the measures: axe adds its script to the page
                    page.evaluate(axe_source())
                    visited.axe = page.evaluate(AXE_ALL_BUT_CONTRAST)
                    styles = page.evaluate(MARK_NEW_TEXT_STYLES, sorted(contrast_styles))
                    contrast_styles.update(styles)
                    if styles:
                        visited.axe += page.evaluate(AXE_CONTRAST_OF_MARKED)
        finally:
            page.context.close()
    _SWEEPS[key] = found
    return found


def measure(page, language: str, visited: Visit) -> None:
    visited.survey = page.evaluate(SURVEY, language)
    visited.measure = page.evaluate(MEASURE)


def first_loads(browser, site: str, folder: Path, language: str) -> dict[str, tuple[Load, list[str]]]:
    """Every page of ``language`` (``<language>/<page>.html``) opened once at 375 px in a
    fresh context until the network is quiet: what it downloaded, and its problems."""
    return {f"{language}/{name}": (visited.load, visited.problems)
            for name, visited in sweep(browser, site, folder, language, PHONE_WIDTH).items()}


def survey(browser, site: str, folder: Path, language: str, width: int) -> dict[str, dict]:
    """SURVEY of every chapter at one width, with MEASURE as "measure"."""
    return {name: {**visited.survey, "measure": visited.measure}
            for name, visited in sweep(browser, site, folder, language, width).items() if visited.survey is not None}


# axe's violations, each [id, impact, number of nodes]. resultTypes: the other kinds of result
# (passes, incomplete) are not collected in full, which takes about a third of axe's time on
# the book's pages; the violations are the same.
AS_ROWS = ".then(r => r.violations.map(v => [v.id, v.impact, v.nodes.length]))"
AXE_VIOLATIONS = "axe.run(document, {resultTypes: ['violations']})" + AS_ROWS


# The sweep runs axe's color-contrast rule, nine tenths of its time on the book's pages, once
# per text style rather than on every text element of every page: what it decides depends
# on the text's colour, size, weight and shadow and on the backgrounds, opacities and filters
# of the boxes behind it, which the style below holds (backgrounds up to the first opaque one,
# opacities and filters up to the root).
# Each page marks its visible text elements of a style no earlier page of the sweep showed
# (data-book-contrast) and axe checks those; every other rule runs on the whole page.
AXE_ALL_BUT_CONTRAST = "axe.run(document, {resultTypes: ['violations'], rules: {'color-contrast': {enabled: false}}})" + AS_ROWS
AXE_CONTRAST_OF_MARKED = ("axe.run({include: [['[data-book-contrast]']]}, {resultTypes: ['violations'], "
                          "runOnly: {type: 'rule', values: ['color-contrast']}})" + AS_ROWS)
MARK_NEW_TEXT_STYLES = """seen => {
  const known = new Set(seen), fresh = [], behind = new Map(), faded = new Map();
  const fades = el => {  // opacity and filters apply through every box up to the root
    if (!el) return '';
    if (!faded.has(el)) {
      const s = getComputedStyle(el);
      faded.set(el, [s.opacity, s.filter, s.mixBlendMode].join('|') + '>' + fades(el.parentElement));
    }
    return faded.get(el);
  };
  const backdrop = el => {  // the backgrounds behind el's text, up to the first opaque one
    if (!el) return '';
    if (!behind.has(el)) {
      const s = getComputedStyle(el);
      const opaque = s.backgroundColor.startsWith('rgb(') && s.backgroundImage === 'none';
      behind.set(el, [s.backgroundColor, s.backgroundImage].join('|') + (opaque ? '' : '>' + backdrop(el.parentElement)));
    }
    return behind.get(el);
  };
  for (const el of document.body.querySelectorAll('*')) {
    if (![...el.childNodes].some(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim())) continue;
    if (!el.getClientRects().length) continue;
    const s = getComputedStyle(el);
    const style = [s.color, s.fontSize, s.fontWeight, s.textShadow, backdrop(el), fades(el)].join('#');
    if (known.has(style)) continue;
    known.add(style);
    fresh.push(style);
    el.setAttribute('data-book-contrast', '');
  }
  return fresh;
}"""


@functools.cache
def axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf8")


# A chapter's first load, uncompressed: 565 KB in issue 20, 600 KB since the error atlas's
# issue-32 entries (the assets every page loads are about 135 KB). Its real-question entries
# took the atlas to 606 KB (en) and 619 KB (zh), and it was split in two pages: error-atlas
# loads 457 KB (en) and 467 KB (zh), error-atlas-training 371 KB and 378 KB. Every chapter
# has this budget.
BUDGET = 600 * 1024
# The search pages, which load the search data of every page (test_browser.py's
# test_pages_stay_light; test_assets.py leaves them out). The Chinese one loaded 599 KB before
# the atlas was split, 605 KB after (a word on both atlas pages counted once per page), then
# past 610 KB; with the word counts grouped by count (site/search.py) it loads 565 KB (en 427 KB).
# A ceiling, not a pass: it must not grow further.
SEARCH_BUDGET = 575 * 1024


def budget_of(name: str) -> int:
    return SEARCH_BUDGET if name.endswith("/search.html") else BUDGET
