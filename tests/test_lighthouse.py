"""Lighthouse (mobile preset) on a few pages of the built book, served compressed like GitHub
Pages: accessibility, best practices and SEO must be 100, since they do not depend on the
machine's speed; performance is printed, never asserted (``nox -s lighthouse`` scores every page)."""

from __future__ import annotations

import gzip
import os
import urllib.request

import pytest
from books import FIXTURES, ROOT

from book_extensions.tools import lighthouse
from book_extensions.tools.weight import chromium_path

# The home page, a chapter, the longest page (in Chinese) and the search page: each a
# different template or a different amount of executed output.
PAGES = ["en/index.html", "en/detach.html", "zh/error-atlas.html", "zh/search.html"]


def missing(reason: str):
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def ready():
    """Lighthouse and Chromium are there: skipped without them, except in CI (.ci/run installs both)."""
    if not os.path.exists(chromium_path()):
        missing("Chromium is missing: .ci/run installs it (apt-get install chromium)")
    try:
        lighthouse.lighthouse_command()
    except lighthouse.LighthouseError as error:
        missing(str(error))


@pytest.fixture(scope="module")
def scored(book, ready):
    return {scores.page: scores for scores in lighthouse.score_site(book.site(), PAGES)}


@pytest.mark.parametrize("page", PAGES)
def test_accessibility_best_practices_and_seo_are_100(scored, page, capsys):
    scores = scored[page]
    with capsys.disabled():  # performance moves with the machine's load: shown, not judged
        print(f"\n{page}: performance {scores.scores['performance']}, "
              f"FCP {scores.fcp / 1000:.1f} s, LCP {scores.lcp / 1000:.1f} s (simulated)")
    assert scores.problems() == ""


def test_lighthouse_names_the_failing_audits(ready):
    site = FIXTURES / "lighthouse"
    [scores] = lighthouse.score_site(site, ["en/faults.html"])
    line = scores.problems()
    assert line.startswith("en/faults.html: ") and "\n" not in line, line
    assert scores.scores["accessibility"] < 100 and "image-alt" in scores.failing["accessibility"], line
    assert scores.scores["seo"] < 100 and "meta-description" in scores.failing["seo"], line
    assert [url.split("/", 3)[2].split(":")[0] for url in scores.elsewhere] == ["localhost"], line
    assert "image-alt" in line and "meta-description" in line and "localhost" in line


def test_the_site_is_served_compressed_like_github_pages():
    site = FIXTURES / "lighthouse"
    with lighthouse.serve_like_pages(site) as base:
        for name in ["en/faults.html", "en/dot.svg"]:
            request = urllib.request.Request(f"{base}/{name}", headers={"Accept-Encoding": "gzip"})
            with urllib.request.urlopen(request) as response:
                body = response.read()
                assert response.headers["Content-Encoding"] == "gzip"
                assert response.headers["Cache-Control"] == "max-age=600"
            assert gzip.decompress(body) == (site / name).read_bytes()
        # A browser that does not ask for gzip gets the bytes as they are.
        with urllib.request.urlopen(f"{base}/en/faults.html") as response:
            assert response.headers["Content-Encoding"] is None
            assert response.read() == (site / "en" / "faults.html").read_bytes()


def test_ci_installs_the_pinned_lighthouse():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf8")
    assert f"lighthouse@{lighthouse.VERSION}" in run and f'"version": "{lighthouse.VERSION}"' in run
