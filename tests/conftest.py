"""Helpers for building small fixture books (tests/fixtures/<name>/docs) in a temp folder."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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
               sphinx: tuple[str, ...] = (), cache: Path | None = None) -> Build:
    """Build ``docs`` like ``nox -s docs`` does, into ``work``; output is stdout + stderr.

    The execution cache is ``work/cache`` unless ``cache`` names another one.
    """
    out, cache = work / "_build", cache or work / "cache"
    command = [sys.executable, "-m", "book_extensions.build", builder, "-q",
               "--docs", str(docs), "--out", str(out), "--cache-root", str(cache), *options]
    if sphinx:
        command += ["--", *sphinx]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
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
