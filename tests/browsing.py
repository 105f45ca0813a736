"""Opening the built site's pages in Chromium the way the browser tests do (used by several tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_extensions.commands.chromium import serve
from book_extensions.commands.weight import PHONE, RESPONSES, Load

# A page is ready to measure once it has loaded (deferred scripts run before `load`)
# and its fonts are in (layout depends on them). Waiting for the network to stay quiet
# as well costs half a second a page: only the tests about requests do that.
FONTS_READY = "document.fonts.ready.then(() => true)"


def visit(page, url: str, *, quiet_network: bool = False):
    """Open ``url`` in ``page`` and wait until it is ready to measure; returns ``page``.

    ``quiet_network`` waits for half a second without requests too: for the tests that
    check what a page requests, including what its scripts fetch after `load`."""
    page.goto(url, wait_until="networkidle" if quiet_network else "load")
    page.evaluate(FONTS_READY)
    return page


def watched_page(browser, site: str, **context_options):
    """A page in a new context on ``site`` whose ``problems`` list collects console errors,
    script errors and every request to another host (blocked)."""
    context = browser.new_context(base_url=site, **context_options)
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
    return page


# The tests that read first_loads run on one worker, which opens each page once.
FIRST_LOADS = pytest.mark.xdist_group("first-loads")
_FIRST_LOADS: dict[Path, dict[str, tuple[Load, list[str]]]] = {}


def first_loads(browser, site: Path) -> dict[str, tuple[Load, list[str]]]:
    """Every page of every language (``<language>/<page>.html``) opened once at 375 px in a
    fresh context (nothing cached) until the network is quiet: what it downloaded, and its
    problems (console and script errors, requests to another host). Measured once per
    test session and worker: the tests that read it share an xdist group."""
    if site not in _FIRST_LOADS:
        found = {}
        with serve(site) as base:
            for path in sorted(site.glob("*/*.html")):
                name = path.relative_to(site).as_posix()
                page = watched_page(browser, base, viewport=PHONE)
                try:
                    visit(page, f"/{name}", quiet_network=True)
                    found[name] = (Load(name, dict(page.evaluate(RESPONSES))), list(page.problems))
                finally:
                    page.context.close()
        _FIRST_LOADS[site] = found
    return _FIRST_LOADS[site]
