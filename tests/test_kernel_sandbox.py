"""A page's kernel writes only in its own folders (book_extensions/kernel/sandbox.py): not the
sources, not the execution cache, not the site, whatever the executor's comparisons see."""

from __future__ import annotations

import pickle
import re
import shutil
import subprocess
import sys

import pytest
from books import FIXTURES, ROOT, build_book

from book_extensions.kernel import sandbox

needs_landlock = pytest.mark.skipif(not sandbox.abi(), reason="this Linux kernel has no Landlock")

PROBE = """
import os, subprocess, sys
allowed, refused = sys.argv[1], sys.argv[2]
open(os.path.join(allowed, "a"), "w").write("x")
for name, act in [("open", lambda: open(os.path.join(refused, "b"), "w")),
                  ("rename", lambda: os.rename(os.path.join(allowed, "a"), os.path.join(refused, "a"))),
                  ("mkdir", lambda: os.mkdir(os.path.join(refused, "d"))),
                  ("shell", lambda: subprocess.run(["sh", "-c", f"echo x > {refused}/c"], check=True,
                                                   stderr=subprocess.DEVNULL))]:
    try:
        act()
        print(name, "written")
    except (OSError, subprocess.CalledProcessError):
        print(name, "refused")
open(os.devnull, "w").write("x")
print(sorted(os.listdir(allowed)))
"""


@pytest.mark.unit
@needs_landlock
def test_a_sandboxed_process_and_its_children_write_only_where_they_may(tmp_path):
    allowed, refused = tmp_path / "allowed", tmp_path / "refused"
    allowed.mkdir()
    refused.mkdir()
    result = subprocess.run(sandbox.wrapped(sys.executable, [str(allowed), "/dev"],
                                            [sys.executable, "-c", PROBE, str(allowed), str(refused)]),
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["open refused", "rename refused", "mkdir refused", "shell refused", "['a']"]
    assert list(refused.iterdir()) == []
    # Without the sandbox the same program writes everywhere: the probe can tell.
    unconfined = subprocess.run([sys.executable, "-c", PROBE, str(allowed), str(refused)],
                                capture_output=True, text=True, timeout=60)
    assert "open written" in unconfined.stdout.splitlines()


@pytest.mark.fixture
@needs_landlock
def test_a_cell_cannot_write_the_sources_the_cache_or_the_site(tmp_path):
    # Attack 3, case 16: a cell rewrote another page's cached notebook and the digest its record
    # is checked against; no comparison after the page can tell that from a good record.
    docs, cache, first = good_book_built(tmp_path)
    stored = {path: path.read_bytes() for path in cache.rglob("*.ipynb")}
    targets = {"source": docs / "en" / "index.md", "site": first.site() / "en" / "index.html",
               "cache database": next(cache.rglob("global.db")), "cached notebook": next(iter(stored))}
    source = targets["source"].read_bytes()
    # The paths in hex: the cell's code is shown on its page, where a build path may not be.
    lines = ["import pathlib"] + [
        f"try:\n    pathlib.Path(bytes.fromhex({str(path).encode().hex()!r}).decode()).write_bytes(b'x')\n"
        f"    print({name!r}, 'written')\nexcept PermissionError:\n    print({name!r}, 'refused')"
        for name, path in targets.items()]
    cell = "\n```{code-cell} ipython3\n" + "\n".join(lines) + "\n```\n"
    append_to_second_page(docs, cell)
    build = build_book(docs, tmp_path, "html", "--language", "en", cache=cache)
    assert build.returncode == 0, build.output
    shown = (build.site() / "en" / "second.html").read_text(encoding="utf8")
    assert all(f"{name} refused" in shown for name in targets), shown
    # The records of the pages that did not change are as stored; the page is as written.
    assert all(path.read_bytes() == data for path, data in stored.items() if path.exists())
    assert targets["cached notebook"].exists() and targets["source"].read_bytes() == source


@pytest.mark.fixture
@needs_landlock
def test_a_change_the_sandbox_lets_through_is_blamed_on_its_page_whatever_its_log_says(tmp_path):
    # Attack 5, case 35: Landlock leaves a file's mode alone; a cell made a source setuid and
    # world-writable, then wrote a line naming another page into the shared log of writes, and
    # the change was put down to that page: exit 0. Each page's log is its own now.
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    target = docs / "en" / "index.md"
    cell = ("\n```{code-cell} ipython3\nimport os, pathlib\n"
            f"target = bytes.fromhex({str(target).encode().hex()!r}).decode()\n"
            "os.chmod(target, 0o4777)\n"
            "log = pathlib.Path(os.environ['BOOK_WRITES_LOG'])\n"
            "log.write_text(log.read_text().replace(target, ''))\n"
            "try:\n    (log.parent / 'book-page-other.log').write_text(target + '\\n')\nexcept PermissionError:\n"
            "    print('refused')\n```\n")
    append_to_second_page(docs, cell)
    build = build_book(docs, tmp_path, "html", "--language", "en", cache=tmp_path / "cache")
    assert build.returncode == 1, build.output
    assert re.search(r"en/second\.md: WARNING: the book's sources changed while this page executed: "
                     r"\S*en/index\.md", build.output), build.output


@pytest.mark.fixture
@needs_landlock
def test_a_doctest_cannot_write_the_sources_or_the_cache_nor_end_the_build_early(tmp_path):
    # Attack 6, cases 7, 8, 29: "Check yourself" examples ran in Sphinx's own process with the
    # build's rights: one rewrote a page, one forged a cached output and its digest (published
    # and recorded by the next html build), one ended the process with status 0 before the
    # examples after it ran, and the build said "doctest ok".
    docs, cache, first = good_book_built(tmp_path)
    # The cache itself changes in this build (the page with the new block is read again, and
    # executed): a file of the doctest's own making stands for a forged record.
    targets = {"source": docs / "en" / "index.md", "site": first.site() / "en" / "index.html",
               "cache": next(cache.rglob("global.db")).parent / "forged"}
    before = {name: path.read_bytes() for name, path in targets.items() if path.exists()}
    lines = ["```{doctest}", ">>> import pathlib"]
    for name, path in targets.items():
        lines += [f">>> target = pathlib.Path(bytes.fromhex({str(path).encode().hex()!r}).decode())",
                  ">>> try:", "...     _ = target.write_bytes(b'x')", "... except PermissionError:",
                  f"...     print({name!r}, 'refused')", f"{name} refused"]
    # Attack 7, case 4: the doctrees the doctest process may write are its own, not the html
    # build's, where a planted catalog was published by every later html build.
    lines += [">>> import sys", ">>> doctrees = pathlib.Path(sys.argv[sys.argv.index('-d') + 1])",
              ">>> _ = (doctrees / 'planted').write_text('x')"]
    # It could as well leave an environment that runs code when loaded: the next doctest build
    # reads afresh and never loads it (it would run before that build's examples are confined).
    loaded = tmp_path / "loaded"
    lines += [f">>> _ = (doctrees / 'environment.pickle').write_bytes(bytes.fromhex({pickle.dumps(Touch(str(loaded))).hex()!r}))"]
    block = "\n" + "\n".join(lines) + "\n```\n"
    append_to_second_page(docs, block)
    confined = build_book(docs, tmp_path, "doctest", "--language", "en", cache=cache)
    assert confined.returncode == 0, confined.output
    assert confined.output.count("doctest ok") == 1  # the examples printed "refused", as they expect
    assert {name: path.read_bytes() for name, path in targets.items() if path.exists()} == before
    planted = [path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("planted")]
    assert planted == ["_build/cpu/doctrees-doctest/en/planted"]
    ended = "\n```{doctest}\n>>> import os\n>>> os._exit(0)\n>>> 1 + 1\n3\n```\n"
    append_to_second_page(docs, ended)
    early = build_book(docs, tmp_path, "doctest", "--language", "en", cache=cache)
    assert not loaded.exists()
    assert early.returncode == 1, early.output
    assert ("error: [en] the doctests ended before their summary: an example stopped the build's process"
            in early.output.splitlines()), early.output


@pytest.mark.fixture
@pytest.mark.skipif(sandbox.abi() < 6, reason="this Linux kernel's Landlock does not scope signals (ABI 6)")
def test_a_cell_cannot_signal_the_sphinx_that_runs_it(build_fixture):
    # Attack 6, case 17: a cell sent SIGSTOP to its Sphinx process, and the build hung for good.
    build = build_fixture("reader_killed", "html", "--language", "en")
    assert build.returncode == 1, build.output
    assert re.search(r"en/index\.md:\d+: WARNING: code cell 2 raised PermissionError: \[Errno 1\] Operation not "
                     r"permitted; a page's kernel may write only in its working folder and its temporary files, "
                     r"and signal only the processes it started", build.output), build.output
    assert "Sphinx ended while" not in build.output


class Touch:
    """Pickled, it makes a file when loaded."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def good_book_built(tmp_path):
    """A copy of the good fixture book, its English pages built: (docs, cache, the build)."""
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    first = build_book(docs, tmp_path, "html", "--language", "en", cache=cache)
    assert first.returncode == 0, first.output
    return docs, cache, first


def append_to_second_page(docs, text: str) -> None:
    """``text`` at the end of the second page, in both languages (parity wants both)."""
    for code in ("en", "zh"):
        with (docs / code / "second.md").open("a", encoding="utf8") as page:
            page.write(text)
