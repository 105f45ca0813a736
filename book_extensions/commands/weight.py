"""Benchmark what a reader's phone downloads: bytes, requests and first contentful paint.

    python -m book_extensions weight [SITE] [--page GLOB] [--no-throttle] [--requests]

Serves a built site (default ``_build/cpu/html``) on 127.0.0.1 and opens every page of
every language at 375 px in a fresh Chromium context (nothing cached), under the
throttling of issue 20: 150 ms round trip, 1.6 Mbit/s each way, and the CPU slowed
down four times (Chrome DevTools Protocol's Network.emulateNetworkConditions and
Emulation.setCPUThrottlingRate). For each page it prints the bytes of the first load
(response bodies, uncompressed, as the local server sends them), the number of
requests, and the first contentful paint; then the median and largest per language.
``--page`` keeps the pages whose path (``en/detach.html``) matches a glob;
``--requests`` lists every response of each page with its size.

Timings are a benchmark on a shared machine, not a test; the byte counts are exact
(``tests/test_assets.py`` holds a chapter's bytes to a budget, measured the same way: ``tests/browsing.py``).
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import SITE
from .chromium import CHROMIUM_FLAGS, chromium_path, serve

# Issue 20's phone: a 375 px screen on a slow mobile network and a slow CPU.
PHONE = {"width": 375, "height": 812}
NETWORK = {"offline": False, "latency": 150,
           "downloadThroughput": 1.6e6 / 8, "uploadThroughput": 1.6e6 / 8}  # bytes per second
CPU_SLOWDOWN = 4


@dataclass
class Load:
    page: str
    responses: dict[str, int] = field(default_factory=dict)  # URL: bytes of its body
    fcp: float = 0.0  # ms; 0 when nothing was painted

    @property
    def bytes(self) -> int:
        return sum(self.responses.values())

    @property
    def requests(self) -> int:
        return len(self.responses)


# The paint entry may be recorded after "load" on a slowed CPU, so wait for it (at most 30 s).
FCP = """new Promise(resolve => {
  new PerformanceObserver(list => {
    const entry = list.getEntriesByName('first-contentful-paint')[0];
    if (entry) resolve(entry.startTime);
  }).observe({type: 'paint', buffered: true});
  setTimeout(() => resolve(0), 30000);
})"""

RESPONSES = """[...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
  .filter(entry => entry.name.startsWith('http') && entry.responseStatus === 200)
  .map(entry => [entry.name, entry.decodedBodySize])"""


def first_load(browser, url: str, throttle: bool = True) -> Load:
    """One page opened at 375 px in a fresh context, until the network is idle."""
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        load = Load(url)
        if throttle:
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.send("Network.emulateNetworkConditions", NETWORK)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
        page.goto(url, wait_until="load", timeout=120_000)
        load.fcp = page.evaluate(FCP)
        # Fonts are requested only once layout needs a glyph, which under a slowed CPU can
        # come after half a second of quiet network: wait for them before calling it idle.
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_load_state("networkidle", timeout=120_000)
        # The page's own account (Resource Timing) of every response: decoded body sizes,
        # which are the bytes themselves since the local server compresses nothing.
        load.responses = dict(page.evaluate(RESPONSES))
        return load
    finally:
        context.close()


def loads(site: Path, browser, pattern: str = "*", throttle: bool = True, skip_timeouts: bool = False) -> list[Load]:
    """Every page of every language (``<language>/<page>.html``) whose path matches ``pattern``.

    A page that does not load in time raises, unless ``skip_timeouts`` (the benchmark on an
    overloaded machine: it says which pages it skipped)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    found = []
    with serve(site) as base:
        for page_file in sorted(site.glob("*/*.html")):
            name = page_file.relative_to(site).as_posix()
            if fnmatch.fnmatch(name, pattern):
                try:
                    load = first_load(browser, f"{base}/{name}", throttle)
                except PlaywrightTimeout as error:
                    if not skip_timeouts:
                        raise
                    print(f"warning: {name} skipped: {str(error).splitlines()[0]}", file=sys.stderr)
                    continue
                load.page = name
                found.append(load)
    return found


def report(found: list[Load], requests: bool = False) -> None:
    print(f"{'page':<32} {'first load (KB)':>16} {'requests':>9} {'FCP (ms)':>9}")
    for load in found:
        print(f"{load.page:<32} {load.bytes / 1024:>16.0f} {load.requests:>9} {load.fcp:>9.0f}")
        if requests:
            for url, size in sorted(load.responses.items(), key=lambda item: -item[1]):
                print(f"    {size / 1024:>8.1f} KB  {url.split('/', 3)[-1]}")
    for language in sorted({load.page.split("/")[0] for load in found}):
        mine = [load for load in found if load.page.startswith(language + "/")]
        sizes = [load.bytes / 1024 for load in mine]
        fcps = [load.fcp for load in mine]
        counts = [load.requests for load in mine]
        print(f"{language}: {len(mine)} pages; first load median {statistics.median(sizes):.0f} KB, "
              f"largest {max(sizes):.0f} KB; requests median {statistics.median(counts):.0f}, "
              f"most {max(counts)}; FCP median {statistics.median(fcps):.0f} ms, slowest {max(fcps):.0f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions weight", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", type=Path, default=SITE)
    parser.add_argument("--page", default="*", help="glob over <language>/<page>.html (default: every page)")
    parser.add_argument("--no-throttle", action="store_true", help="full speed: bytes only mean anything then")
    parser.add_argument("--requests", action="store_true", help="list each page's responses")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").exists():
        print(f"error: no built site in {args.site}: run `nox -s docs` first", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        found = loads(args.site, browser, args.page, throttle=not args.no_throttle, skip_timeouts=True)
        browser.close()
    if not found:
        print(f"error: no page matches {args.page!r}", file=sys.stderr)
        return 2
    report(found, args.requests)
    return 0
