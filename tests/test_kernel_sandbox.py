"""A page's kernel writes only in its own folders (book_extensions/kernel/sandbox.py): not the
sources, not the execution cache, not the site, whatever the executor's comparisons see."""

from __future__ import annotations

import os
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
def test_a_doctest_cannot_write_the_build_nor_end_it_early_nor_forge_its_verdict(tmp_path):
    # Attack 6, cases 7, 8, 29: "Check yourself" examples ran in Sphinx's own process with the
    # build's rights: one rewrote a page, one forged a cached output and its digest (published
    # and recorded by the next html build), one ended the process with status 0 before the
    # examples after it ran, and the build said "doctest ok". Attack 7, case 4: one planted a
    # file in the doctrees, which the html build published. They run in a process of their own
    # now (execution/doctests.py), which writes only its own folders.
    docs, cache, first = good_book_built(tmp_path)
    # The cache itself changes in this build (the page with the new block is read again, and
    # executed): a file of the doctest's own making stands for a forged record.
    doctrees = first.out / "cpu" / "doctrees-doctest" / "en"
    targets = {"source": docs / "en" / "index.md", "site": first.site() / "en" / "index.html",
               "cache": next(cache.rglob("global.db")).parent / "forged",
               "html's doctrees": first.out / "cpu" / "doctrees" / "en" / "planted",
               "its own doctrees": doctrees / "environment.pickle"}
    lines = ["```{doctest}", ">>> import pathlib"]
    for name, path in targets.items():
        lines += [f">>> target = pathlib.Path(bytes.fromhex({str(path).encode().hex()!r}).decode())",
                  ">>> try:", "...     _ = target.write_bytes(b'x')", "... except PermissionError:",
                  f"...     print({name!r}, 'refused')", f"{name} refused"]
    block = "\n" + "\n".join(lines) + "\n```\n"
    append_to_second_page(docs, block)
    confined = build_book(docs, tmp_path, "doctest", "--language", "en", cache=cache)
    assert confined.returncode == 0, confined.output
    assert confined.output.count("doctest ok") == 1  # the examples printed "refused", as they expect
    assert [path for path in targets.values() if path.exists() and path.read_bytes() == b"x"] == []
    assert not (first.out / "cpu" / "doctrees" / "en" / "planted").exists()
    # Attack 7, cases 1 and 2: an example that writes the summary and ends its process, one that
    # makes doctest's comparison (and Sphinx's runner, were it there) pass anything, and one that
    # answers for the next example: each fails, and the examples after it do not pass for it.
    forged = [">>> import os", ">>> print('Doctest summary'); os._exit(0)", ">>> 1 + 1", "3",
              ">>> import doctest", ">>> doctest.OutputChecker.check_output = lambda *arguments: True",
              ">>> 1 + 1", "3",
              # It writes an answer into its page's connection (found up the stack), before its own.
              ">>> import json, sys", ">>> answer = {'id': '0', 'printed': '3\\n', 'exception': None}",
              ">>> frame = sys._getframe()", ">>> while 'stream' not in frame.f_locals:", "...     frame = frame.f_back",
              ">>> _ = frame.f_locals['stream'].write((json.dumps(answer) + '\\n').encode())", ">>> 2 + 2", "3"]
    append_to_second_page(docs, "\n```{doctest}\n" + "\n".join(forged[:4]) + "\n```\n")
    append_to_second_page(docs, "\n```{doctest}\n" + "\n".join(forged[4:]) + "\n```\n")
    early = build_book(docs, tmp_path, "doctest", "--language", "en", cache=cache)
    assert early.returncode == 1, early.output
    # Without colours (CI=true colours Sphinx's warnings).
    failed = re.findall(r"second\.md:(\d+): WARNING: a doctest failed:\nFailed example:\n    (.*)\n(.*)", plain(early.output))
    assert [(source, why.removesuffix(" [book.doctest]")) for _, source, why in failed] == [
        ("print('Doctest summary'); os._exit(0)",
         "the example ended its page's process; the page's examples after it did not run")], \
        early.output
    # With the first of them gone, the other two fail each.
    second = (docs / "en" / "second.md").read_text(encoding="utf8")
    (docs / "en" / "second.md").write_text(second.replace(">>> print('Doctest summary'); os._exit(0)\n", ""),
                                           encoding="utf8")
    forging = build_book(docs, tmp_path, "doctest", "--language", "en", cache=cache)
    assert forging.returncode == 1, forging.output
    failed = re.findall(r"WARNING: a doctest failed:\nFailed example:\n    (.*)\n(.*)", plain(forging.output))
    assert [(source, why.removesuffix(" [book.doctest]")) for source, why in failed] == [
        ("1 + 1", "Expected:"), ("1 + 1", "Expected:"),
        ("_ = frame.f_locals['stream'].write((json.dumps(answer) + '\\n').encode())",
         "the page's process answered other than with this example's outcome; the page's "
         "examples after it did not run")], forging.output


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


def good_book_built(tmp_path):
    """A copy of the good fixture book, its English pages built: (docs, cache, the build)."""
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    first = build_book(docs, tmp_path, "html", "--language", "en", cache=cache)
    assert first.returncode == 0, first.output
    return docs, cache, first


def plain(output: str) -> str:
    """A build's output without its terminal colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", output)


def append_to_second_page(docs, text: str) -> None:
    """``text`` at the end of the second page, in both languages (parity wants both)."""
    for code in ("en", "zh"):
        with (docs / code / "second.md").open("a", encoding="utf8") as page:
            page.write(text)


SHARED_MEMORY_PROBE = """
import os, sys
print(sorted(os.listdir("/dev/shm")))
open(os.path.join("/dev/shm", sys.argv[1]), "w").write("left behind")
"""


@pytest.mark.unit
def test_a_sandboxed_process_has_an_empty_dev_shm_of_its_own(tmp_path):
    # Attack 5, case 5: shared memory a cell left in /dev/shm outlived the build, where a later
    # page could read it. The machine's /dev/shm is neither seen nor written.
    import uuid

    mine, theirs = f"book-test-{uuid.uuid4().hex}", f"book-test-{uuid.uuid4().hex}"
    outside = f"/dev/shm/{theirs}"
    with open(outside, "w") as file:
        file.write("the machine's")
    try:
        result = subprocess.run(sandbox.wrapped(sys.executable, [str(tmp_path), "/dev"],
                                                [sys.executable, "-c", SHARED_MEMORY_PROBE, mine]),
                                cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["[]"]
        assert not os.path.exists(f"/dev/shm/{mine}")
    finally:
        for name in (outside, f"/dev/shm/{mine}"):
            if os.path.exists(name):
                os.unlink(name)
