"""Opening the built site's pages in Chromium the way the browser tests do (used by several tests)."""

from __future__ import annotations

import re

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

    def blocked(route):
        page.problems.append(f"request to {route.request.url}")
        route.abort()

    # A pattern, not a function: Playwright sends it to the browser, which then stops only
    # the requests to another host, instead of handing every request of the page to Python
    # and back (a fifth of a search's time).
    page.route(re.compile(rf"^(?!{re.escape(site)}/)"), blocked)
    return page
