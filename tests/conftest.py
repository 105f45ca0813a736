"""Fixtures: fixture books and the real book built, served and opened in Chromium (helpers:
books.py, browsing.py, sweep.py, site_checks.py); and the tiers every test belongs to (pyproject.toml).

A fixture book that several tests share is a session-scoped fixture of their module, built
once per pytest-xdist worker; FIXTURE_BOOKS names each, and every test that uses one gets its
xdist_group here, so that one worker builds it. (A module-scoped fixture is built again each
time pytest-xdist runs another module's test between two of the module's own.)"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from books import (
    BOOK_BUILD_TIMEOUT,
    FIXTURES,
    ROOT,
    Build,
    book_cache,
    build_book,
    in_process_settings,
    in_process_sources,
    require_tool,
    run_build,
    seed_repository_cache,
)
from browsing import watched_page
from filelock import FileLock
from sphinx.testing.util import SphinxTestApp

from book_extensions.commands.chromium import CHROMIUM_FLAGS, chromium_path, serve

TIERS = ("unit", "fixture", "browser", "scheduled")

# Each session-scoped fixture book (a fixture of its test module), and the xdist_group of the
# tests that use it: the fixture's name, or the book it is made from (noto_pdf prints the
# editions' sources with the editions' execution cache).
FIXTURE_BOOKS = {
    "good": "good",  # test_good_book.py
    "editions": "editions",  # test_editions.py
    "noto_pdf": "editions",
    "interface": "interface",  # test_zh_rules.py
    "remote_outputs": "remote_outputs",  # test_remote_loads.py
}


def tier_of(item) -> str:
    """The test's own tier mark, else its module's; without either, what it uses decides:
    the real book makes it a browser test, a fixture book or an example program a fixture test."""
    for mark in item.iter_markers():  # the closest first: the test's, its class's, its module's
        if mark.name in TIERS:
            return mark.name
    used = set(item.fixturenames)
    if "book" in used:
        return "browser"
    if used & {"build_fixture", "fixture_cache", "sphinx_book"}:
        return "fixture"
    return "unit"


def xdist_group_of(item) -> str | None:
    """The one worker's group a test must run in: its language's browser sweeps (sweep.py),
    or the fixture book it uses (FIXTURE_BOOKS); None: any worker."""
    groups = {FIXTURE_BOOKS[name] for name in item.fixturenames if name in FIXTURE_BOOKS}
    swept = item.get_closest_marker("swept")
    if swept is not None:
        groups.add(f"sweep-{swept.args[0] if swept.args else item.callspec.params['language']}")
    if len(groups) > 1:
        raise pytest.UsageError(f"{item.nodeid}: needs the workers of {sorted(groups)}, and runs on one")
    return groups.pop() if groups else None


@pytest.hookimpl(wrapper=True)  # before every other plugin's hook (pytest-xdist's reads the groups, -m the tiers)
def pytest_collection_modifyitems(config, items):
    tiers = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            raise pytest.UsageError(f"{item.nodeid}: marked xdist_group by hand (conftest.py derives "
                                    "the group from the fixture book it uses: FIXTURE_BOOKS)")
        group = xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        tier = tier_of(item)
        used = set(item.fixturenames)
        if tier in ("unit", "fixture") and "book" in used:
            raise pytest.UsageError(f"{item.nodeid}: in the {tier} tier but builds the real book (mark it browser or scheduled)")
        if tier == "unit" and used & {"browser", "page"}:
            raise pytest.UsageError(f"{item.nodeid}: in the unit tier but opens Chromium (mark it fixture)")
        tiers[item] = tier
    # -m selects a test by any mark of it or of its module and class: a unit test in a module
    # marked fixture would run with `-m fixture` too (and a scheduled one, the real book's
    # editions, with it). So each test carries its one tier, and its module and class none.
    for item, tier in tiers.items():
        for node in item.listchain()[:-1]:
            node.own_markers[:] = [mark for mark in node.own_markers if mark.name not in TIERS]
        if tier not in {mark.name for mark in item.own_markers}:
            item.add_marker(getattr(pytest.mark, tier))
    # The real book's tests last: its build runs in the background meanwhile (book_build_started).
    items.sort(key=lambda item: tiers[item] in ("browser", "scheduled"))
    yield
    group_node_ids(config, items)


def group_node_ids(config, items) -> None:
    """Give each grouped test's node id its group, as pytest-xdist's worker means to: its
    loadgroup scheduler reads the group from the id's ``@`` suffix. pytest-xdist 3.8.0 writes
    ``item._nodeid``, which pytest 9.2 no longer reads (its ids are ``NodeId`` objects), so on
    these releases no group reaches the scheduler and the tests of one group run on several
    workers (pytest-dev/pytest-xdist#1386). Nothing to do where pytest-xdist did it."""
    if not (os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup")):
        return
    from _pytest.nodes import NodeId

    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


def pytest_runtest_setup(item):
    # Before any fixture of the test is set up (a module's too): books.build_book refuses
    # to build for a unit test. One that asks for Chromium or the real book is refused
    # when the tests are collected.
    os.environ["BOOK_TEST_TIER"] = tier_of(item)


def pytest_runtest_teardown(item):
    os.environ.pop("BOOK_TEST_TIER", None)


@pytest.fixture(scope="session")
def example_output(book):
    """What a program of examples/ printed where the real book's page runs it: every program is
    a code cell of a page in its language (``{code-cell}`` with ``load:``, checked by
    test_examples.py), which each build executes, so the tests read its output from the site's
    executed notebooks rather than run the program again (the multi-process ones take 10-20 s
    each). ``name``: the program's path under examples/ ("ddp_frozen.py", "zh/ddp_frozen.py")."""
    cells = {}
    for notebook in book.site().glob("*/_notebooks/*.ipynb"):
        for cell in json.loads(notebook.read_text(encoding="utf8"))["cells"]:
            if cell["cell_type"] == "code":
                cells["".join(cell["source"])] = cell["outputs"]

    def output(name: str) -> subprocess.CompletedProcess:
        outputs = cells.get((ROOT / "examples" / name).read_text(encoding="utf8"))
        assert outputs is not None, f"no page of the book runs examples/{name}"
        # What it prints, and the plain text of what it displays (four_cuts.py's table: printed
        # when run on its own, displayed in a notebook), in order.
        stdout = "".join("".join(o["text"]) if o["output_type"] == "stream" else "".join(o["data"]["text/plain"]) + "\n"
                         for o in outputs if (o["output_type"] == "stream" and o["name"] == "stdout")
                         or o["output_type"] in ("display_data", "execute_result"))
        error = [o for o in outputs if o["output_type"] == "error"]
        stderr = "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream" and o["name"] == "stderr")
        stderr += "".join(f"{o['ename']}: {o['evalue']}\n" for o in error)
        return subprocess.CompletedProcess(["examples/" + name], 1 if error else 0, stdout, stderr)
    return output


@pytest.fixture
def build_fixture(tmp_path, fixture_cache):
    def build(name: str, builder: str = "html", *options: str, sphinx: tuple[str, ...] = ()) -> Build:
        return build_book(FIXTURES / name / "docs", tmp_path, builder, *options, sphinx=sphinx,
                          cache=fixture_cache)
    return build


@pytest.fixture
def sphinx_book(make_app, tmp_path, fixture_cache):
    """Build one language of a fixture book in this process, with sphinx.testing's app
    (:func:`books.in_process_sources`): for the checks that do not test the build driver."""
    def build(name: str, code: str, builder: str = "html", run: bool = True, cache: Path | None = None,
              verbosity: int = 0) -> SphinxTestApp:
        """The application, built (``run``: else only made, its extensions set up and configured);
        ``cache``: an execution cache of its own, where what executes must not depend on
        which tests ran before (the session's is shared); ``verbosity``: as the driver's -v
        (``app.status`` holds what it shows)."""
        srcdir = in_process_sources(FIXTURES / name / "docs", tmp_path / name) / code
        app = make_app(builder, srcdir=srcdir, builddir=tmp_path / name / "_build" / code,
                       confoverrides=in_process_settings(code, cache or fixture_cache),
                       warningiserror=True, verbosity=verbosity)  # as the driver's -W: a warning fails the build (statuscode 1)
        if not run:
            return app
        app.build()
        # docutils' and Sphinx's registries are the process's: cleared for the next application,
        # as make_app does when the test ends (the built app stays readable).
        app.cleanup()
        return app
    return build


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory):
    """One execution cache for every fixture build: its records are keyed by each page's
    code, so a fixture built by several tests executes once. A page that failed is never
    cached, so the gates see it fail every time."""
    return tmp_path_factory.mktemp("fixture-cache")


def shared_folder(tmp_path_factory) -> Path:
    """The test run's own temporary folder: every pytest-xdist worker's is inside it."""
    folder = tmp_path_factory.getbasetemp()
    return folder.parent if os.environ.get("PYTEST_XDIST_WORKER") else folder


@pytest.fixture(scope="session", autouse=True)
def trimming_store(tmp_path_factory):
    """One store of parsed stylesheets and cut fonts for every build of the run, in-process or
    not (site/asset_trimming.py): most builds have an execution cache of their own, beside
    which each would parse the themes' sheets again (1.4 s of CPU a language)."""
    os.environ["BOOK_TRIMMING_STORE"] = str(shared_folder(tmp_path_factory) / "trimming-store")
    yield
    os.environ.pop("BOOK_TRIMMING_STORE", None)


def start_book_build(shared: Path) -> None:
    """Build the real book in the background, once per test run: the first worker to ask
    starts it, and its result is ``book.json`` in the run's folder (see :func:`book`)."""
    with FileLock(shared / "book.lock"):
        started = shared / "book.started"
        if started.exists():
            return
        started.write_text(str(os.getpid()), encoding="utf8")

    def build_and_record() -> None:
        work = shared / "book"
        try:
            work.mkdir()
            build = run_build(ROOT / "docs", work, cache=book_cache(work))
            if build.returncode == 0:
                seed_repository_cache(build.cache)
        except Exception as error:  # the tests that wait for the book say why it is missing
            build = Build(-1, f"the real book's build did not run: {error!r}", work / "_build", work / "cache")
        partial = shared / "book.json.partial"
        partial.write_text(build.to_json(), encoding="utf8")
        partial.rename(shared / "book.json")

    threading.Thread(target=build_and_record, name="book-build").start()


@pytest.fixture(scope="session", autouse=True)
def book_build_started(request, tmp_path_factory) -> None:
    """Start the real book's build with the run's first test when any test of the run needs
    it: the browser tier runs last (pytest_collection_modifyitems), so the build overlaps
    the unit and fixture tiers instead of keeping a worker waiting."""
    if any("book" in item.fixturenames for item in request.session.items):
        start_book_build(shared_folder(tmp_path_factory))


@pytest.fixture(scope="session")
def book(tmp_path_factory, book_build_started):
    """The real book, both languages, built once per test run and shared by every pytest-xdist
    worker (into an execution cache of its own: book_cache)."""
    shared = shared_folder(tmp_path_factory)
    start_book_build(shared)
    record, waited = shared / "book.json", time.monotonic()
    while not record.exists():
        if time.monotonic() - waited > BOOK_BUILD_TIMEOUT:
            pytest.fail(f"the real book's build did not finish in {BOOK_BUILD_TIMEOUT} s")
        time.sleep(0.2)
    build = Build.from_json(record.read_text(encoding="utf8"))
    assert build.returncode == 0, build.output
    return build


# --- the built book in a real browser (Debian's Chromium, driven by Playwright) ---------

@pytest.fixture(scope="module")
def site(book):
    with serve(book.site()) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    require_tool(os.path.exists(chromium_path()), "Chromium is missing: .ci/tools installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, site):
    page = watched_page(browser, site)
    yield page
    page.context.close()
