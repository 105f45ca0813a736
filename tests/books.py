"""Building small fixture books (tests/fixtures/<name>/docs), or the real one, in a temp folder."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from book_extensions.paths import PACKAGE, ROOT  # noqa: F401  (the repository, the package: the tests import them from here)

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = ROOT / "examples"
# The theme's own files, as installed (the tests of the stylesheet trimming start from them).
THEME_STATIC = Path(importlib.util.find_spec("pydata_sphinx_theme").origin).parent / "theme" / "pydata_sphinx_theme" / "static"



def index_parts(language: str, docs: Path = ROOT / "docs") -> list[list[str]]:
    """The pages each table of contents on a language's index lists: one list per part.

    Without a CUDA record the book's device page is left out (book_extensions/site/device_page.py)."""
    from book_extensions.configuration import settings

    index = (docs / language / "index.md").read_text(encoding="utf8")
    hidden = set() if (ROOT / "results" / "cuda.json").exists() else {
        settings.read(ROOT).book_device_page}
    return [[line.strip() for line in block.splitlines()
             if line.strip() and not line.startswith(":") and line.strip() not in hidden]
            for block in re.findall(r"```\{toctree\}\n(.*?)```", index, re.S)]

@dataclass
class Build:
    returncode: int
    output: str
    out: Path  # the build's _build folder
    cache: Path

    def to_json(self) -> str:
        return json.dumps({"returncode": self.returncode, "output": self.output,
                           "out": str(self.out), "cache": str(self.cache)})

    @classmethod
    def from_json(cls, text: str) -> Build:
        found = json.loads(text)
        return cls(found["returncode"], found["output"], Path(found["out"]), Path(found["cache"]))

    def site(self, device: str = "cpu") -> Path:
        return self.out / device / "html"

    def work(self, device: str = "cpu") -> Path:
        """Where Sphinx wrote: the site is replaced from it only when every language built."""
        return self.out / device / "html-work"


def build_book(docs: Path, work: Path, builder: str = "html", *options: str,
               sphinx: tuple[str, ...] = (), cache: Path | None = None, tz: str | None = None) -> Build:
    """Build ``docs`` like ``nox -s docs`` does, into ``work``; output is stdout + stderr.

    The execution cache is ``work/cache`` unless ``cache`` names another one; ``tz``
    sets the build's time zone. A unit test may not build (tests/conftest.py, tiers).
    """
    if os.environ.get("BOOK_TEST_TIER") == "unit":
        raise AssertionError(f"a unit test builds {docs}: mark it fixture (tests/conftest.py, tiers)")
    return run_build(docs, work, builder, *options, sphinx=sphinx, cache=cache, tz=tz)


# conf.py of a fixture book built in the test's process: sphinx.testing reads the configuration
# from the sources' folder, so this one runs the repository's (paths it names relative to the
# repository made absolute).
IN_PROCESS_CONF = """\
__file__ = {conf!r}
exec(compile(open(__file__, encoding="utf8").read(), __file__, "exec"))
html_favicon = {root!r} + "/" + html_favicon
book_results_dir = {root!r} + "/results"  # the settings' defaults, beside conf.py
book_releases_file = {root!r} + "/torch-releases.txt"
"""


def in_process_sources(docs: Path, work: Path) -> Path:
    """A copy of the fixture book ``docs`` in ``work`` (made once), each language's folder
    with :data:`IN_PROCESS_CONF`, for sphinx.testing's app (tests/conftest.py's sphinx_book)."""
    if os.environ.get("BOOK_TEST_TIER") == "unit":
        raise AssertionError(f"a unit test builds {docs}: mark it fixture (tests/conftest.py, tiers)")
    copy = work / "docs"
    if not copy.exists():
        shutil.copytree(docs, copy)
        for folder in copy.iterdir():
            if folder.is_dir():
                (folder / "conf.py").write_text(IN_PROCESS_CONF.format(conf=str(ROOT / "conf.py"), root=str(ROOT)),
                                                encoding="utf8")
    return copy


def in_process_settings(code: str, cache_root: Path) -> dict[str, str]:
    """What the build driver passes Sphinx with -D for language ``code`` (on the CPU)."""
    from book_extensions.configuration import settings

    language = next(language for language in settings.read(ROOT).book_languages if language.code == code)
    return {"language": language.sphinx, "book_device": "cpu", "book_cache_root": str(cache_root)}


BOOK_BUILD_TIMEOUT = 900  # s: the real book from an empty cache takes about 3 min on 2 busy cores


def run_build(docs: Path, work: Path, builder: str = "html", *options: str,
              sphinx: tuple[str, ...] = (), cache: Path | None = None, tz: str | None = None) -> Build:
    """:func:`build_book` whatever test is running (the real book's background build)."""
    out, cache = work / "_build", cache or work / "cache"
    # The driver's default -j even under pytest-xdist's `-n auto`, as `nox -s docs` runs: one
    # process for a book of three pages or fewer a language (commands/build.py, SERIAL_READ:
    # most fixtures), parallel readers for a larger one (the real book, duplicate_names,
    # execution_faults), so the gates are tried both ways.
    command = [sys.executable, "-m", "book_extensions", "build", builder, "-q",
               "--docs", str(docs), "--out", str(out), "--cache-root", str(cache), *options]
    if sphinx:
        command += ["--", *sphinx]
    env = {**os.environ, **({"TZ": tz} if tz else {})}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=BOOK_BUILD_TIMEOUT, env=env)
    return Build(result.returncode, result.stdout + result.stderr, out, cache)


def copy_cache(source: Path, target: Path) -> None:
    """Make ``target`` a copy of the execution cache ``source`` (one key's folder, as
    cache_key.cache_dir names it), without waiting for or disturbing a build writing it.

    The database is copied with sqlite's backup API, which reads one consistent state of
    it even while a build commits; then each record's notebook. A record whose notebook
    is gone by then (the build replaced it) is dropped: its page executes again.
    Lock files are not copied: the copy has no writer yet.
    """
    target.mkdir(parents=True)
    database = source / "global.db"
    if not database.is_file():
        return
    with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True, timeout=60)) as read, \
            closing(sqlite3.connect(target / "global.db")) as copy:
        read.backup(copy)
        for pk, hashkey in copy.execute("select pk, hashkey from nbcache").fetchall():
            try:
                shutil.copytree(source / "executed" / hashkey, target / "executed" / hashkey)
            except (FileNotFoundError, shutil.Error):
                shutil.rmtree(target / "executed" / hashkey, ignore_errors=True)
                copy.execute("delete from nbcache where pk = ?", (pk,))
        copy.commit()
    if (source / "__version__.txt").is_file():  # jupyter-cache's format version
        shutil.copy2(source / "__version__.txt", target / "__version__.txt")


def book_cache(work: Path) -> Path:
    """The execution cache the suite builds the real book with: never the repository's, so
    that the suite runs beside a `nox -s docs` and beside another test run.

    A copy of the repository's (what the last `nox -s docs` executed) in ``work``, so that
    the book is not executed again; or BOOK_TEST_CACHE, a cache root used as it is and kept
    between runs."""
    from book_extensions.execution.cache_key import cache_dir

    if os.environ.get("BOOK_TEST_CACHE"):
        return Path(os.environ["BOOK_TEST_CACHE"])
    cache = work / "cache"
    copy_cache(cache_dir(ROOT / ".jupyter_cache", "cpu"), cache_dir(cache, "cpu"))
    return cache


ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def warnings_of(output: str) -> list[str]:
    """The build's warning lines, without colour codes (Sphinx colours them where the
    environment asks for colour, as CI's does)."""
    return [ANSI_COLOUR.sub("", line) for line in output.splitlines() if "WARNING" in line]


def assert_reported(output: str, expected: list[tuple[str, str]]) -> None:
    """Each (page, message) pair is in one warning line of the build's output."""
    found = warnings_of(output)
    for page, message in expected:
        assert any(page in line and message in line for line in found), (page, message, found)


def seed_repository_cache(cache_root: Path, repository_cache_root: Path = ROOT / ".jupyter_cache") -> bool:
    """Where the repository has no execution cache for this toolchain yet (a fresh clone), make
    the suite's copy of the real book's execution its cache, so that the doctest and
    determinism sessions after the tests start from it instead of executing every page again.

    An existing cache is never touched: the copy is made beside it and renamed into place
    only if the folder is still absent. Returns whether it seeded."""
    from book_extensions.execution.cache_key import cache_dir

    source, target = cache_dir(cache_root, "cpu"), cache_dir(repository_cache_root, "cpu")
    if target.exists() or not (source / "global.db").is_file():
        return False
    staging = target.with_name(f".{target.name}.seeding-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    copy_cache(source, staging)
    try:
        staging.rename(target)
    except OSError:  # made meanwhile (a build started): keep that one
        shutil.rmtree(staging, ignore_errors=True)
        return False
    return True


SCREENSHOTS = ROOT / "_build" / "screenshots"  # test artifacts of the browser tests


def require_tool(ok: bool, missing: str) -> None:
    """Go on where a tool the test needs is there (``ok``); else skip the test, except in CI
    (the ``CI`` variable set), where that fails: .ci/tools installs every tool the tests use.
    ``missing`` is the one line either says: what is missing, and how to get it."""
    import pytest

    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(missing)
    pytest.skip(missing)


def assert_one_line_config_error(load, path: Path, content: str, cause: str) -> None:
    """``load`` refuses ``path`` holding ``content`` with one line that names the file and ``cause``."""
    import pytest
    from sphinx.errors import ConfigError

    path.write_text(content, encoding="utf8")
    with pytest.raises(ConfigError) as raised:
        load(path)
    message = str(raised.value)
    assert str(path) in message and cause in message and "\n" not in message


def sleeping_build(out: Path, cache: Path) -> subprocess.Popen:
    """A build of tests/fixtures/timeout (English) in its own process group, returned once its
    page is in the cell that sleeps for ten minutes: that cell first creates the file
    ``sleeping`` in its working folder, inside the build's TMPDIR (a folder beside ``cache``),
    so the tests that stop the build wait for that file instead of sleeping for a guessed time."""
    import signal
    import time

    temporary = cache.with_name(f"{cache.name}.tmp")
    temporary.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
               "--docs", str(FIXTURES / "timeout" / "docs"), "--out", str(out), "--cache-root", str(cache)]
    build = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, env={**os.environ, "TMPDIR": str(temporary)})
    deadline = time.monotonic() + 120
    while not any(temporary.rglob("sleeping")):
        if build.poll() is not None or time.monotonic() > deadline:
            if build.poll() is None:  # its page sleeps for ten minutes: stop it all
                os.killpg(build.pid, signal.SIGKILL)
            raise AssertionError(f"the build never reached its sleeping cell: {build.communicate()[0]}")
        time.sleep(0.1)
    return build


def descendants(pid: int) -> list:
    """The processes below ``pid`` (psutil.Process), or none once it is gone."""
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
