"""Benchmark what a reader's browser downloads: bytes and first contentful paint.

    python -m book_extensions.tools.weight [_build/cpu/html]

Serves a built site on 127.0.0.1 and opens every page of every language in a fresh
Chromium context (nothing cached), printing the bytes transferred for the first load
and the time to first contentful paint. Timings are a benchmark on a shared machine,
not a test; the byte counts are exact.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .build import ROOT

# Headless Chromium on a machine whose network is closed, as root.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str:
    """$CHROMIUM (GitHub's runners carry Google Chrome), else Debian's chromium."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve a built site on 127.0.0.1; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def measure(site: Path, browser) -> list[tuple[str, int, float]]:
    """(page, bytes, first contentful paint in ms) for every page, each in a fresh context."""
    rows = []
    with serve(site) as base:
        for page_file in sorted(site.glob("*/*.html")):
            name = page_file.relative_to(site).as_posix()
            context = browser.new_context()
            page = context.new_page()
            sizes: dict[str, int] = {}

            def count(response, sizes=sizes) -> None:
                if response.status == 200:
                    sizes[response.url] = len(response.body())

            page.on("response", count)
            page.goto(f"{base}/{name}", wait_until="networkidle")
            fcp = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0]?.startTime || 0")
            rows.append((name, sum(sizes.values()), fcp))
            context.close()
    return rows


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else ROOT / "_build" / "cpu" / "html"
    if not (site / "index.html").exists():
        print(f"error: no built site in {site}: run `nox -s docs` first", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        rows = measure(site, browser)
        browser.close()
    print(f"{'page':<32} {'first load (KB)':>16} {'FCP (ms)':>9}")
    for name, size, fcp in rows:
        print(f"{name:<32} {size / 1024:>16.0f} {fcp:>9.0f}")
    sizes = sorted(size for _, size, _ in rows)
    print(f"{len(rows)} pages; first load median {sizes[len(sizes) // 2] / 1024:.0f} KB, "
          f"largest {sizes[-1] / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
