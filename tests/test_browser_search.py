"""Search finds the answer: real queries typed into the built site's search page.

tests/test_search_queries.toml holds what readers paste or ask (error messages,
"X vs Y", how-to questions), each with the page that answers it; the page must be
among the first three results that Sphinx's searchtools shows in Chromium.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from conftest import SCREENSHOTS

pytestmark = pytest.mark.book

QUERIES = tomllib.loads((Path(__file__).with_name("test_search_queries.toml")).read_text(encoding="utf8"))
CASES = [(language, entry["query"], entry["page"]) for language in ("en", "zh") for entry in QUERIES[language]]
TOP = 3


def search_results(page, language: str, query: str) -> list[dict]:
    """Type ``query`` into the search page and return the results as shown, best first."""
    page.goto(f"/{language}/search.html", wait_until="networkidle")
    box = page.locator(".bd-search-container form.bd-search input")
    box.fill(query)
    box.press("Enter")
    # searchtools writes the summary line ("found N pages" or "no match") when it is done.
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results p.search-summary');"
        " return s && s.innerText.trim().length > 0; }", timeout=20000)
    return page.locator("#search-results ul.search > li").evaluate_all(
        """items => items.map(li => ({
            page: new URL(li.querySelector('a').href).pathname.split('/').pop().replace(/\\.html$/, ''),
            title: li.querySelector('a').innerText,
            excerpt: (li.querySelector('p.context') || {innerText: ''}).innerText,
        }))""")


def rank(results: list[dict], expected: str) -> int | None:
    """1-based position of the first result on ``expected``, or None."""
    return next((i for i, r in enumerate(results, 1) if r["page"] == expected), None)


@pytest.mark.parametrize("language, query, expected", CASES, ids=lambda v: str(v)[:50])
def test_a_real_query_finds_its_page_in_the_top_three(page, language, query, expected):
    results = search_results(page, language, query)
    found = rank(results, expected)
    assert found is not None and found <= TOP, (found, [r["page"] for r in results[:10]])
    assert page.problems == [], page.problems
