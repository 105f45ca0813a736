"""Helpers for building small fixture books (tests/fixtures/<name>/docs) in a temp folder."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from book_extensions.weight import CHROMIUM_FLAGS, chromium_path, serve

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class Build:
    returncode: int
    output: str
    out: Path  # the build's _build folder
    cache: Path

    def site(self, device: str = "cpu") -> Path:
        return self.out / device / "html"


def build_book(docs: Path, work: Path, builder: str = "html", *options: str,
               sphinx: tuple[str, ...] = (), cache: Path | None = None, tz: str | None = None) -> Build:
    """Build ``docs`` like ``nox -s docs`` does, into ``work``; output is stdout + stderr.

    The execution cache is ``work/cache`` unless ``cache`` names another one; ``tz``
    sets the build's time zone.
    """
    out, cache = work / "_build", cache or work / "cache"
    command = [sys.executable, "-m", "book_extensions.build", builder, "-q",
               "--docs", str(docs), "--out", str(out), "--cache-root", str(cache), *options]
    if sphinx:
        command += ["--", *sphinx]
    env = {**os.environ, **({"TZ": tz} if tz else {})}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    return Build(result.returncode, result.stdout + result.stderr, out, cache)


@pytest.fixture
def build_fixture(tmp_path):
    def build(name: str, builder: str = "html", *options: str, sphinx: tuple[str, ...] = ()) -> Build:
        return build_book(FIXTURES / name / "docs", tmp_path, builder, *options, sphinx=sphinx)
    return build


@pytest.fixture(scope="session")
def book(tmp_path_factory):
    """The real book, both languages, built once per test run."""
    work = tmp_path_factory.mktemp("book")
    # The book's own cache, as `nox -s docs` uses it: `nox -s doctest` then runs warm.
    build = build_book(ROOT / "docs", work, cache=ROOT / ".jupyter_cache")
    assert build.returncode == 0, build.output
    return build


# --- the built book in a real browser (Debian's Chromium, driven by Playwright) ---------

SCREENSHOTS = ROOT / "_build" / "screenshots"  # test artifacts


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
