"""Fixtures: fixture books and the real book built, served and opened in Chromium (helpers: books.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from books import FIXTURES, ROOT, Build, book_cache, build_book

from book_extensions.tools.weight import CHROMIUM_FLAGS, chromium_path, serve


@pytest.fixture(scope="session")
def run_example():
    """Each program of examples/ run once per test session, however many tests read its output."""
    runs: dict[str, subprocess.CompletedProcess] = {}

    def run(name: str) -> subprocess.CompletedProcess:
        if name not in runs:
            runs[name] = subprocess.run([sys.executable, str(ROOT / "examples" / name)],
                                        capture_output=True, text=True, timeout=120)
        return runs[name]
    return run


@pytest.fixture
def build_fixture(tmp_path, fixture_cache):
    def build(name: str, builder: str = "html", *options: str, sphinx: tuple[str, ...] = ()) -> Build:
        return build_book(FIXTURES / name / "docs", tmp_path, builder, *options, sphinx=sphinx,
                          cache=fixture_cache)
    return build


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory):
    """One execution cache for every fixture build: its records are keyed by each page's
    code, so a fixture built by several tests executes once. A page that failed is never
    cached, so the gates see it fail every time."""
    return tmp_path_factory.mktemp("fixture-cache")


@pytest.fixture(scope="session")
def book(tmp_path_factory):
    """The real book, both languages, built once per test run (into a cache of its own: book_cache)."""
    work = tmp_path_factory.mktemp("book")
    build = build_book(ROOT / "docs", work, cache=book_cache(work))
    assert build.returncode == 0, build.output
    return build


# --- the built book in a real browser (Debian's Chromium, driven by Playwright) ---------

@pytest.fixture(scope="module")
def site(book):
    with serve(book.site()) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(chromium_path()):
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, site):
    context = browser.new_context(base_url=site)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: m.type == "error" and page.problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))

    def only_local(route):
        if route.request.url.startswith(site):
            route.continue_()
        else:
            page.problems.append(f"request to {route.request.url}")
            route.abort()

    page.route("**/*", only_local)
    yield page
    context.close()
