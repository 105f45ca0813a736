"""The build driver: failures that stick, a site replaced only by a good build, paths made
absolute, one build per output folder, signals that stop everything, and a no-change rebuild
that does not start Sphinx (book_extensions/commands/build.py, commands/publish.py)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import psutil
import pytest
from books import FIXTURES, ROOT, assert_reported, build_book, descendants, sleeping_build

from book_extensions.commands import build as driver
from book_extensions.commands import last_build
from book_extensions.commands.reading_turn import ReadingTurn
from book_extensions.execution.page_execution import EXECUTIONS_FILE

pytestmark = pytest.mark.fixture

STICKY = [  # the four kinds of problem that passed the second build of an unchanged page
    ("zh/problems.md:11", "the prose names a torch release ('2.13 版')"),
    ("zh/problems.md:13", "half-width ',' after CJK text in '半角逗号紧跟汉字,应当报出'"),
    ("zh/problems.md:15", "undefined label: 'no-such-label'"),
    ("zh/problems.md:20", 'Duplicate explicit target name: "twice"'),
]


def test_every_problem_fails_every_build_until_it_is_fixed(build_fixture):
    for _ in range(2):  # nothing changed in between
        build = build_fixture("driver_sticky", "html", "--language", "zh")
        assert build.returncode == 1, build.output
        assert_reported(build.output, STICKY)
        assert "[zh] html FAILED (exit 1)" in build.output
    assert not (build.site() / "zh").exists()  # never published


def site_files(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


@pytest.fixture
def fresh_pages(tmp_path, fixture_cache):
    """A copy of the driver_pages book, and a function that builds its English pages."""
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "driver_pages" / "docs", docs)

    def build(tz: str | None = None):
        return build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache, tz=tz)
    return docs, build


@pytest.fixture(scope="session")
def built_pages(tmp_path_factory, fixture_cache):
    """The driver_pages book's English pages built once per worker, in the folder where each
    test of :func:`pages` then works, and a copy of that folder as the build left it."""
    place, saved = tmp_path_factory.mktemp("pages"), tmp_path_factory.mktemp("pages-built")
    shutil.copytree(FIXTURES / "driver_pages" / "docs", place / "docs")
    first = build_book(place / "docs", place, "html", "--language", "en", cache=fixture_cache)
    assert first.returncode == 0, first.output
    shutil.copytree(place, saved, symlinks=True, dirs_exist_ok=True)
    return place, saved, first


@pytest.fixture
def pages(built_pages, fixture_cache):
    """The driver_pages book just after its first good build (:func:`built_pages`, put back
    in the same folder with the same times: Sphinx keeps absolute paths), a function that
    builds its English pages again, and that first build."""
    place, saved, first = built_pages
    shutil.rmtree(place)
    shutil.copytree(saved, place, symlinks=True)
    docs = place / "docs"

    def build(tz: str | None = None):
        return build_book(docs, place, "html", "--language", "en", cache=fixture_cache, tz=tz)
    return docs, build, first


def test_a_failed_build_leaves_the_published_site_as_it_was(pages):
    docs, build, good = pages
    before = site_files(good.site())
    assert "en/second.html" in before
    second = docs / "en" / "second.md"
    second.write_text(second.read_text(encoding="utf8") + "\nNow with {ref}`a-broken-reference`.\n", encoding="utf8")
    broken = build()
    assert broken.returncode == 1
    assert_reported(broken.output, [("en/second.md:12", "undefined label: 'a-broken-reference'")])
    assert site_files(broken.site()) == before


def test_a_removed_page_leaves_the_site_with_its_notebook(pages):
    docs, build, first = pages
    site = first.site() / "en"
    assert (site / "old.html").is_file() and (site / "_notebooks" / "old.ipynb").is_file()
    (docs / "en" / "old.md").unlink()
    index = docs / "en" / "index.md"
    index.write_text(index.read_text(encoding="utf8").replace("second\nold\n", "second\n"), encoding="utf8")
    again = build()
    assert again.returncode == 0, again.output
    assert not (site / "old.html").exists() and not (site / "_notebooks" / "old.ipynb").exists()
    assert not [p for p in site.rglob("*") if p.stem == "old"]
    assert (site / "second.html").is_file() and (site / "_notebooks" / "index.ipynb").is_file()


def read_pages(build, language: str = "en") -> list[str]:
    report = build.out / "cpu" / "doctrees" / language / EXECUTIONS_FILE
    return json.loads(report.read_text())["read"]


def counts_checksum(site: Path | bytes) -> str:
    """The checksum Sphinx puts in a link (?v=) for the search's word counts, as they are now."""
    data = site if isinstance(site, bytes) else (site / "en" / "_static" / "searchcounts.js").read_bytes()
    crc = zlib.crc32(data.replace(b"\r", b""))
    return f"{crc:08x}"


def counts_link(site: Path) -> str:
    return re.search(r'searchcounts\.js\?v=(\w+)"', (site / "en" / "search.html").read_text(encoding="utf8"))[1]


def test_a_rebuild_with_nothing_changed_does_not_start_sphinx(pages):
    docs, build, first = pages
    assert read_pages(first) == ["index", "old", "second"]
    before = site_files(first.site())
    first_site_counts = (first.site() / "en" / "_static" / "searchcounts.js").read_bytes()
    assert counts_link(first.site()) == counts_checksum(first_site_counts)
    again = build()
    assert again.returncode == 0, again.output
    assert "[en] html unchanged in " in again.output and "html ok" not in again.output
    assert read_pages(again) == []
    assert site_files(again.site()) == before
    # A change is built, and only it is read.
    second = docs / "en" / "second.md"
    second.write_text(second.read_text(encoding="utf8") + "\nOne more sentence.\n", encoding="utf8")
    edited = build()
    assert edited.returncode == 0, edited.output
    assert "[en] html ok in " in edited.output and read_pages(edited) == ["second"]
    assert "One more sentence." in (edited.site() / "en" / "second.html").read_text(encoding="utf8")
    # Attack 8, case 6: the search page linked searchcounts.js with the previous build's checksum
    # (?v=), so a browser that had the old counts kept them.
    assert counts_link(edited.site()) == counts_checksum(edited.site()) != counts_checksum(first_site_counts)
    # What every page depends on (here the time zone; likewise book_extensions/ and conf.py):
    # every page is read again.
    elsewhere = build(tz="Asia/Shanghai")
    assert elsewhere.returncode == 0, elsewhere.output
    assert "[en] html ok in " in elsewhere.output and read_pages(elsewhere) == ["index", "old", "second"]


def test_the_driver_names_the_executions_report_as_the_extensions_do():
    assert last_build.EXECUTIONS_FILE == EXECUTIONS_FILE


def test_relative_paths_are_read_from_the_working_directory(tmp_path):
    # Sphinx read a relative book_cache_root from the config folder (the repository): the
    # cache landed there while the driver locked a folder in the working directory.
    name = "driver-test-relative-cache"
    docs = os.path.relpath(FIXTURES / "driver_pages" / "docs", tmp_path)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
             "--docs", docs, "--out", "out", "--cache-root", name],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert result.returncode == 0, result.stdout + result.stderr
        assert list((tmp_path / name).glob("*/global.db")) and (tmp_path / name / "book-build.lock").exists()
        assert not (ROOT / name).exists()
        assert (tmp_path / "out" / "cpu" / "html" / "en" / "index.html").is_file()
    finally:
        shutil.rmtree(ROOT / name, ignore_errors=True)


@pytest.mark.parametrize("inside", ["_build", "en/_build"])
def test_an_output_folder_inside_the_docs_is_refused(tmp_path, inside):
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "driver_pages" / "docs", docs)
    out = docs / inside
    build = subprocess.run(
        [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
         "--docs", str(docs), "--out", str(out), "--cache-root", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 2
    assert build.stdout + build.stderr == (
        f"error: --out {out} is inside the docs folder {docs}: every page would see the build "
        "change its sources; choose a folder outside it\n")
    assert not out.exists()


@pytest.mark.parametrize("cache", ["out/cpu/html-work/en/cache", "out/cpu/html/cache", "out"])
def test_a_cache_inside_the_output_folder_is_refused(tmp_path, cache):
    # Inside the working folder it was published with the site (attack case 23), inside the
    # site deleted by every publish.
    docs, out, cache_root = tmp_path / "docs", tmp_path / "out", tmp_path / cache
    shutil.copytree(FIXTURES / "driver_pages" / "docs", docs)
    build = subprocess.run(
        [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
         "--docs", str(docs), "--out", str(out), "--cache-root", str(cache_root)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (build.returncode, build.stdout + build.stderr) == (2, (
        f"error: --cache-root {cache_root} and --out {out} overlap: publishing would copy the execution "
        "cache into the site or delete it; choose folders apart\n"))
    assert not out.exists()


def test_results_naming_a_file_is_refused_before_anything_runs(tmp_path):
    # It was "[Errno 17] File exists" after the site was built and published (attack 2, case 27a).
    results, out = tmp_path / "results", tmp_path / "out"
    results.write_text("not a folder\n", encoding="utf8")
    build = subprocess.run(
        [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en", "--record",
         "--docs", str(FIXTURES / "driver_pages" / "docs"), "--out", str(out), "--cache-root", str(tmp_path / "c"),
         "--results", str(results)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (build.returncode, build.stdout + build.stderr) == (2, (
        f"error: --results {results}: {results} is a file: --results names the folder --record writes "
        "<device>.json into; choose a folder\n"))
    assert not out.exists() and results.read_text(encoding="utf8") == "not a folder\n"


def test_a_home_page_that_is_not_utf8_is_one_line_before_sphinx_starts(tmp_path):
    # Set aside like any undecodable page, the home page left Sphinx to crash (attack case 36).
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "driver_pages" / "docs", docs)
    home = docs / "en" / "index.md"
    home.write_bytes(home.read_bytes() + b"bad \xff byte\n")
    line = home.read_bytes().count(b"\n")
    build = subprocess.run(
        [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
         "--docs", str(docs), "--out", str(tmp_path / "out"), "--cache-root", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (build.returncode, build.stdout + build.stderr) == (
        2, f"error: {home}:{line}: not valid UTF-8 (byte 0xff): save the page as UTF-8\n")


def end(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass


def test_a_second_build_into_the_same_output_is_refused_in_one_line(tmp_path):
    out = tmp_path / "_build"
    first = sleeping_build(out, tmp_path / "cache-1")
    left = descendants(first.pid)
    try:
        second = build_book(FIXTURES / "driver_pages" / "docs", tmp_path, "html", "--language", "en",
                            cache=tmp_path / "cache-2")
        assert second.returncode == 2
        assert second.output == (f"error: another build is writing {out / 'cpu'}: wait for it to finish, "
                                 "or give this one its own --out\n")
    finally:
        os.kill(first.pid, signal.SIGTERM)
        first.communicate(timeout=120)
        end(left)


def test_sigterm_stops_sphinx_and_its_kernel_then_says_so_in_one_line(tmp_path):
    from filelock import FileLock

    out = tmp_path / "_build"
    build = sleeping_build(out, tmp_path / "cache")
    left = descendants(build.pid)  # Sphinx and the page's kernel
    assert len(left) >= 2
    try:
        os.kill(build.pid, signal.SIGTERM)
        output, _ = build.communicate(timeout=120)
        assert build.returncode == 143, output
        assert output.strip().splitlines() == ["error: the build was stopped by SIGTERM; run it again to finish"]
        # Gone before the driver was: it held the lock until then.
        assert not [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        with FileLock(str(out / "cpu" / "book-build.lock"), timeout=0), FileLock(str(tmp_path / "cache" / "book-build.lock"), timeout=0):
            pass
        assert not (out / "cpu" / "html").exists()
    finally:
        end(left)


def test_a_cell_that_ends_the_process_executing_it_is_named_in_one_line(build_fixture, monkeypatch):
    # Attack case 10: the cell signals its kernel's parent, the Sphinx process reading the
    # page; Sphinx died with its own crash report, which names no page. Where Landlock scopes
    # signals (tests/test_kernel_sandbox.py), the cell cannot: as on a Linux without it, here.
    monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")
    build = build_fixture("reader_killed", "html", "--language", "en")
    assert build.returncode == 1, build.output
    assert "[en] html FAILED" in build.output
    named = [line for line in build.output.splitlines() if "Sphinx ended while" in line]
    assert len(named) == 1, build.output
    assert re.fullmatch(r"error: \[en\] \S*reader_killed/docs/en/index\.md:15: Sphinx ended while code cell 2 "
                        r"of this page ran: .*", named[0]), named[0]
    assert not (build.site() / "en").exists()


# --- what a review found after the first round (issue 21) ----------------------------------

def test_a_doctest_build_between_two_html_builds_does_not_make_a_failure_pass(pages, fixture_cache):
    docs, build, _ = pages
    second = docs / "en" / "second.md"
    second.write_text(second.read_text(encoding="utf8") + "\nSee {ref}`no-such-label`.\n", encoding="utf8")
    assert build().returncode == 1
    # The doctest builder reads the same pages (into doctrees of its own), and resolves their
    # references too.
    doctest = build_book(docs, docs.parent, "doctest", "--language", "en", cache=fixture_cache)
    assert doctest.returncode == 1, doctest.output
    assert "second.md:12: WARNING: undefined label: 'no-such-label'" in doctest.output
    again = build()
    assert again.returncode == 1
    assert_reported(again.output, [("en/second.md:12", "undefined label: 'no-such-label'")])


def test_a_page_restored_with_its_older_time_is_built_again(pages):
    docs, build, _ = pages
    second = docs / "en" / "second.md"
    original, stat = second.read_bytes(), second.stat()
    second.write_text(second.read_text(encoding="utf8") + "\nA sentence to take back.\n", encoding="utf8")
    edited = build()
    assert "A sentence to take back." in (edited.site() / "en" / "second.html").read_text(encoding="utf8")
    second.write_bytes(original)  # as `cp -p` or `tar x` restores it: its bytes and its time
    os.utime(second, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    restored = build()
    assert restored.returncode == 0, restored.output
    assert "A sentence to take back." not in (restored.site() / "en" / "second.html").read_text(encoding="utf8")


def test_a_file_deleted_from_the_published_site_is_published_again(pages):
    docs, build, first = pages
    page = first.site() / "en" / "second.html"
    page.unlink()
    again = build()
    assert again.returncode == 0, again.output
    assert "unchanged" not in again.output and page.is_file()
    # Likewise a file deleted from the working folder Sphinx writes into: every page is built again.
    (first.work() / "en" / "_notebooks" / "index.ipynb").unlink()
    index = docs / "en" / "index.md"
    index.write_text(index.read_text(encoding="utf8") + "\nOne more line.\n", encoding="utf8")
    third = build()
    assert third.returncode == 0, third.output
    assert (third.site() / "en" / "_notebooks" / "index.ipynb").is_file()


DOCTREE_DAMAGE = ["a doctree is cut short", "a doctree is a folder", "an older doctree is put back"]


@pytest.mark.parametrize("damage", ["the site is a file", "the note is a list", "the note is a folder",
                                    "the note names a doctree elsewhere", *DOCTREE_DAMAGE])
def test_damaged_build_folders_are_built_over(pages, damage):
    docs, build, first = pages
    note = first.out / "cpu" / "doctrees" / "en" / last_build.NOTE
    # Attack 12, case 36; attack 13, cases 6 and 10: Sphinx loaded index's doctree to write index
    # again after an edit of second.md (its child): a crash report, on every build for a folder;
    # an older copy published the older page, exit 0.
    doctree = first.out / "cpu" / "doctrees" / "en" / "index.doctree"
    if damage == "a doctree is cut short":
        doctree.write_bytes(doctree.read_bytes()[:100])
    elif damage == "a doctree is a folder":
        doctree.unlink()
        doctree.mkdir()
    elif damage == "the note names a doctree elsewhere":
        # A damaged note must not make the build remove a file outside its folder.
        victims = [first.out.parent / "relative.doctree", first.out.parent / "absolute.doctree"]
        for victim in victims:
            victim.write_text("not the build's\n")
        noted = json.loads(note.read_text(encoding="utf8"))
        noted[last_build.DOCTREES] = {"../../../../relative.doctree": "0", str(victims[1]): "0"}
        note.write_text(json.dumps(noted), encoding="utf8")
    elif damage == "an older doctree is put back":
        older = doctree.read_bytes()
        index = docs / "en" / "index.md"
        index.write_text(index.read_text(encoding="utf8") + "\nThe index REMEMBERS.\n", encoding="utf8")
        assert build().returncode == 0
        doctree.write_bytes(older)
    elif damage == "the site is a file":
        shutil.rmtree(first.site())
        first.site().write_text("not a site\n")
    elif damage == "the note is a list":
        note.write_text("[1, 2]\n")
    else:
        note.unlink()
        note.mkdir()
    again = build()
    assert again.returncode == 0, again.output
    assert (again.site() / "en" / "second.html").is_file()
    # and the build after it, which publishes over what that one left
    second = docs / "en" / "second.md"
    second.write_text(second.read_text(encoding="utf8") + "\nEdited.\n", encoding="utf8")
    third = build()
    assert third.returncode == 0, third.output
    assert "Edited." in (third.site() / "en" / "second.html").read_text(encoding="utf8")
    if damage == "the note names a doctree elsewhere":
        assert all(victim.read_text() == "not the build's\n" for victim in victims)
    if damage in DOCTREE_DAMAGE:
        assert "[en] html ok in " in third.output and "(read again: index.doctree damaged)" in third.output, third.output
        assert "REMEMBERS" in (third.site() / "en" / "index.html").read_text(encoding="utf8") \
            or damage != "an older doctree is put back"
        assert build().returncode == 0  # and the build after it


def test_what_every_page_reads_besides_its_source_is_in_the_code_digest(tmp_path):
    """Term lists and search words beside the language folders, the typography rules and the
    examples pages load: a change must reach every page (Sphinx alone would read none again)."""
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "driver_pages" / "docs", docs)
    confdir = tmp_path / "conf"
    (confdir / "examples").mkdir(parents=True)
    shutil.copy(ROOT / "conf.py", confdir)
    args = driver.parse_args(["html", "--docs", str(docs), "--out", str(tmp_path / "out"),
                              "--cache-root", str(tmp_path / "cache"), "--confdir", str(confdir)])
    before = last_build.code_parts(args)
    for change, part in (
            (lambda: (docs / "terms.en.toml").write_text("# a term list\n"), "rules beside the pages"),
            (lambda: (tmp_path / ".autocorrectrc").write_text("rules:\n  space-word: 1\n"), "rules beside the pages"),
            (lambda: (confdir / "examples" / "program.py").write_text("print('version two')\n"), "examples")):
        change()
        after = last_build.code_parts(args)
        assert [name for name in after if after[name] != before[name]] == [part]
        # and the build's line names it (a note of the last build holds the parts it read)
        assert last_build.why_read_again({"site_parts": before}, after, None) == f" (read again: {part} changed)"
        before = after
    assert last_build.why_read_again({}, before, None) == ""  # no earlier note: nothing to compare


def test_pages_computed_from_every_page_are_read_again_only_when_code_changed(tmp_path, fixture_cache):
    """The provenance and the device comparison show every page: a prose edit reads and writes
    one page; a title edit reads one and writes them all (the new title shown); a code edit
    reads them again."""
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "computed_pages" / "docs", docs)
    chapter = docs / "en" / "chapter.md"

    def build():
        done = build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache)
        assert done.returncode == 0, done.output
        return done

    first = build()
    assert read_pages(first) == ["chapter", "devices", "index", "provenance"]
    work = first.out / "cpu" / "html-work" / "en"
    written = lambda: {name: (work / f"{name}.html").stat().st_mtime_ns for name in ("chapter", "devices", "provenance")}  # noqa: E731
    before = written()
    chapter.write_text(chapter.read_text(encoding="utf8").replace("Some prose.", "Other prose."), encoding="utf8")
    assert read_pages(build()) == ["chapter"]
    # Nothing the computed pages show changed: the edited page alone is written (issue 30).
    after = written()
    assert [name for name in before if before[name] != after[name]] == ["chapter"]
    chapter.write_text(chapter.read_text(encoding="utf8").replace("# A chapter", "# A renamed chapter"),
                       encoding="utf8")
    renamed = build()
    assert read_pages(renamed) == ["chapter"]
    assert "A renamed chapter" in (renamed.site() / "en" / "provenance.html").read_text(encoding="utf8")
    chapter.write_text(chapter.read_text(encoding="utf8").replace("print(1 + 1)", "print(2 + 2)"), encoding="utf8")
    assert read_pages(build()) == ["chapter", "devices"]


# --- sources compared by content (issue 31) ---------------------------------------------------

def test_an_edit_dated_between_the_last_snapshot_and_the_read_is_built(fresh_pages):
    """Sphinx stamps a page with the time it finished reading it; an edit dated before that
    stamp but after the page's own time (a clock step, `rsync -a` or `cp -p` of a copy saved
    during a build) was never read again, and every later build said "unchanged"."""
    docs, build = fresh_pages
    second = docs / "en" / "second.md"
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(second, ns=(hour_ago, hour_ago))
    first = build()
    assert first.returncode == 0, first.output
    second.write_text(second.read_text(encoding="utf8") + "\nAn edit that the times do not show.\n",
                      encoding="utf8")
    later = hour_ago + 5 * 10**9  # after the page's own time, long before the last build read it
    os.utime(second, ns=(later, later))
    edited = build()
    assert edited.returncode == 0, edited.output
    assert read_pages(edited) == ["second"]
    assert "An edit that the times do not show." in (edited.site() / "en" / "second.html").read_text(encoding="utf8")
    again = build()
    assert "[en] html unchanged in " in again.output


@pytest.mark.unit
def test_languages_built_at_once_read_in_turn(tmp_path):
    """The second language's Sphinx reads only once the first has given up its turn (read,
    failed or ended), so a changed page executes once, in the first language."""
    first = ReadingTurn(tmp_path / "en.lock", None)
    second = ReadingTurn(tmp_path / "zh.lock", first.path)
    marker = tmp_path / "zh-reads"
    waiter = subprocess.Popen(
        [sys.executable, "-c", "from book_extensions.execution import page_execution as p; import sys; "
         "from types import SimpleNamespace as N; config = N(book_reading_after=sys.argv[2], language='en'); "
         "p.wait_for_reading_turn(N(config=config), None, []); open(sys.argv[1], 'w').close()",
         str(marker), second.settings()["book_reading_after"]],
        pass_fds=second.fds(), cwd=ROOT)
    second.handed_over()
    with pytest.raises(subprocess.TimeoutExpired):
        waiter.wait(timeout=3)  # held: it cannot have read
    assert not marker.exists()
    first.give_up()  # en read (or was unchanged)
    assert waiter.wait(timeout=60) == 0 and marker.exists()


@pytest.mark.unit
def test_a_locale_the_machine_lacks_is_one_line_before_sphinx_starts(tmp_path):
    result = subprocess.run([sys.executable, "-m", "book_extensions", "build", "html", "--out", str(tmp_path / "out"),
                             "--cache-root", str(tmp_path / "cache")], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "LC_ALL": "xx_NOWHERE.UTF-8"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: LC_ALL=xx_NOWHERE.UTF-8 is not a locale this machine has (`locale -a` lists them): "
        "set another, or C.UTF-8"]
    assert not (tmp_path / "out").exists()


def test_a_value_glued_from_another_page_follows_that_pages_code(tmp_path, fixture_cache):
    """myst-nb fills in a value glued from another page when the showing page is written, and
    nothing wrote it again when the gluing page's code changed: the old value stayed published
    and every later build said "unchanged"."""
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "glued_pages" / "docs", docs)
    gluing = docs / "en" / "index.md"

    def shown():
        done = build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache)
        assert done.returncode == 0, done.output
        return (done.site() / "en" / "shown.html").read_text(encoding="utf8")

    assert "The answer is 111" in shown()
    gluing.write_text(gluing.read_text(encoding="utf8").replace("111", "222"), encoding="utf8")
    assert "The answer is 222" in shown()


NOTEBOOK = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"


def test_a_file_a_page_includes_or_loads_from_anywhere_is_followed(tmp_path, fixture_cache):
    """Issue 31: a ``{literalinclude}`` of a file outside docs/ was followed by Sphinx, but the
    driver's no-change check digests docs/ only ("unchanged", the old text published); and a
    program a code cell loads (``load:``) was no dependency at all, beside the page or not (the
    page was not read again: its old code and output published)."""
    docs = tmp_path / "book" / "docs"
    (docs / "en").mkdir(parents=True)
    beside, outside, included = docs / "en" / "beside.py", tmp_path / "outside.py", tmp_path / "snippet.txt"
    beside.write_text('print("BESIDE_ONE")\n')
    outside.write_text('print("OUTSIDE_ONE")\n')
    included.write_text("INCLUDED_ONE\n")
    (docs / "en" / "index.md").write_text(
        f"{NOTEBOOK}# Loads\n\n```{{literalinclude}} ../../../snippet.txt\n```\n\n"
        "```{code-cell} ipython3\n---\nload: beside.py\n---\n```\n\n"
        "```{code-cell} ipython3\n---\nload: ../../../outside.py\n---\n```\n", encoding="utf8")

    def build():
        built = build_book(docs, tmp_path / "book", "html", "--language", "en", cache=fixture_cache)
        assert built.returncode == 0, built.output
        return built, (built.site() / "en" / "index.html").read_text(encoding="utf8")

    first, page = build()
    assert {"BESIDE_ONE", "OUTSIDE_ONE", "INCLUDED_ONE"} <= set(re.findall(r"[A-Z]+_ONE", page))
    for path, word in ((included, "INCLUDED"), (outside, "OUTSIDE"), (beside, "BESIDE")):
        path.write_text(path.read_text().replace(f"{word}_ONE", f"{word}_TWO"))
        again, page = build()
        assert "unchanged" not in again.output and read_pages(again) == ["index"], again.output
        assert f"{word}_TWO" in page and f"{word}_ONE" not in page, (word, again.output)
        if path != beside:  # outside docs/: the driver names it
            assert f"(read again: {path} changed)" in again.output
    unchanged, _ = build()
    assert "[en] html unchanged in " in unchanged.output


def test_a_changed_title_is_shown_by_every_page_that_names_it(pages):
    # Attack 6, case 12b: Sphinx wrote only the page it read and its toctree parent, and the
    # next page kept the old title in its "previous" link.
    docs, build, first = pages
    assert "Second" in (first.site() / "en" / "old.html").read_text(encoding="utf8")
    second = docs / "en" / "second.md"
    second.write_text(second.read_text(encoding="utf8").replace("# Second", "# Renamed page"), encoding="utf8")
    again = build()
    assert again.returncode == 0, again.output
    for name in ("index.html", "second.html", "old.html"):
        assert "Renamed page" in (again.site() / "en" / name).read_text(encoding="utf8"), name


def test_a_published_file_edited_in_place_is_published_again(pages):
    # Issue 31: the no-change check compared the published files' sizes only.
    docs, build, first = pages
    page = first.site() / "en" / "second.html"
    html = page.read_text(encoding="utf8")
    title = re.search(r"<h1>(\w)", html).group(1)
    page.write_text(html.replace(f"<h1>{title}", "<h1>X", 1), encoding="utf8")  # the same size
    again = build()
    assert again.returncode == 0, again.output
    assert "unchanged" not in again.output and "(read again: the published files changed)" in again.output
    assert page.read_text(encoding="utf8") == html


def test_a_cell_that_writes_into_a_language_this_build_keeps_fails_it_until_that_language_is_built(tmp_path, fixture_cache, monkeypatch):
    # The executor's own comparison, the guard where Linux has no Landlock: the kernel's
    # sandbox (kernel/sandbox.py, tests/test_kernel_sandbox.py) would refuse the write.
    monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")
    # A kernel can write anywhere the build can: into the published site of a language that
    # a --language build copies over as it is, where no check of Sphinx's looks.
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    first = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert first.returncode == 0, first.output
    zh, en = first.site() / "zh", first.site() / "en"
    published = site_files(first.site())
    # The path in hex: the cell's code is shown on its page, where a build path may not be.
    cell = ("\n```{code-cell} ipython3\nimport pathlib\n"
            f"zh = pathlib.Path(bytes.fromhex({str(zh).encode().hex()!r}).decode())\n"
            "(zh / 'index.html').write_text((zh / 'index.html').read_text().replace('</body>', 'TAMPERED</body>'))\n"
            "_ = (zh / 'evil.html').write_text('<script src=\"https://evil.example/y.js\"></script>')\n```\n")
    for code in ("en", "zh"):
        with (docs / code / "second.md").open("a", encoding="utf8") as page:
            page.write(cell)
    for attempt in range(2):  # the second time with nothing changed
        # The second time the cell runs again (it changed files it read while it ran: kernel/reads.py),
        # and of the two files only index.html changes again while this build runs.
        changed = "evil.html, index.html" if attempt == 0 else "index.html"
        expected = (f"error: [zh] the published site changed outside its own build ({changed}): "
                    "nothing is published; build zh again (--language zh, or the whole book)")
        build = build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache)
        assert build.returncode == 1, build.output
        assert expected in build.output.splitlines()
        assert site_files(en) == {name[3:]: data for name, data in published.items() if name.startswith("en/")}
    # Building zh (its cell writes into its own published site, which publishing then replaces)
    # puts it right.
    fixed = build_book(docs, tmp_path, "html", "--language", "zh", cache=fixture_cache)
    assert fixed.returncode == 0, fixed.output
    assert b"TAMPERED" not in (zh / "index.html").read_bytes() and not (zh / "evil.html").exists()


def test_an_edit_of_one_languages_prose_builds_that_language_alone(tmp_path, fixture_cache):
    """Issue 30, the author's loop: every language was built again after any page of any language
    changed. Another language's page counts by what the build compares or shows of it (parity:
    code, headings and their anchors, labels, doctests, exercises); its prose does not."""
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    assert build_book(docs, tmp_path, "html", cache=fixture_cache).returncode == 0
    second = docs / "en" / "second.md"
    second.write_text(second.read_text(encoding="utf8") + "\nOne more sentence of prose.\n", encoding="utf8")
    prose = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert prose.returncode == 0, prose.output
    assert "[zh] html unchanged in " in prose.output and "[en] html ok in " in prose.output, prose.output
    assert "One more sentence of prose." in (prose.site() / "en" / "second.html").read_text(encoding="utf8")
    # A section the other language lacks: that language is compared again, and fails until it has it.
    second.write_text(second.read_text(encoding="utf8") + "\n(more)=\n## More\n\nText.\n", encoding="utf8")
    structure = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert structure.returncode == 1 and "[zh] html FAILED" in structure.output, structure.output
    assert "parity: docs/zh/second.md" in structure.output, structure.output
    # The record of each page's compared part, damaged, is made again: the build still decides right.
    (tmp_path / "_build" / "cpu" / last_build.COMPARED_PARTS).write_text("{not json", encoding="utf8")
    again = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert again.returncode == 1 and "[zh] html FAILED" in again.output, again.output


def test_a_kept_language_is_checked_against_what_was_published_whatever_removed_its_note(tmp_path, fixture_cache):
    # Attack 4, cases 5, 6, 32, 35: the check of a kept language leaned on that language's note,
    # which a doctest build (or a cell) removes; a link to an identical copy outside the site
    # passed for the page; the site root was never compared.
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    first = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert first.returncode == 0, first.output
    site = first.site()
    zh_page, root_page = site / "zh" / "second.html", site / "index.html"
    chooser = root_page.read_bytes()
    zh_page.write_text(zh_page.read_text(encoding="utf8") + "<!-- edited -->", encoding="utf8")
    (first.out / "cpu" / "doctrees" / "zh" / last_build.NOTE).unlink()
    refused = ("error: [zh] the published site changed outside its own build (second.html): nothing is "
               "published; build zh again (--language zh, or the whole book)")
    for builder in ("html", "doctest", "html"):  # a doctest build of zh in between removes nothing that counts
        language = "zh" if builder == "doctest" else "en"
        build = build_book(docs, tmp_path, builder, "--language", language, cache=fixture_cache)
        if builder == "html":
            assert build.returncode == 1 and refused in build.output.splitlines(), build.output
    # A page replaced by a link to the very same bytes outside the site is not the page.
    fixed = build_book(docs, tmp_path, "html", "--language", "zh", cache=fixture_cache)
    assert fixed.returncode == 0, fixed.output
    outside = tmp_path / "copy.html"
    shutil.copy(zh_page, outside)
    zh_page.unlink()
    zh_page.symlink_to(outside)
    linked = build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache)
    assert linked.returncode == 1 and refused in linked.output.splitlines(), linked.output
    zh_page.unlink()
    shutil.copy(outside, zh_page)
    # The site root's files, edited, are written again by the next build, with nothing else changed.
    root_page.write_text('<meta http-equiv="refresh" content="0;url=https://evil.example/">', encoding="utf8")
    again = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert again.returncode == 0, again.output
    assert root_page.read_bytes() == chooser
    # Attack 5, case 8: a published language's folder, deleted, was left out of the record by
    # the next build of another language, while the site root still linked it.
    shutil.rmtree(site / "zh")
    gone = ("error: [zh] was published, but its folder of the site (html/zh) is gone: nothing is published; "
            "build zh again (--language zh, or the whole book)")
    for _ in range(2):
        build = build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache)
        assert build.returncode == 1 and gone in build.output.splitlines(), build.output
    assert build_book(docs, tmp_path, "html", "--language", "zh", cache=fixture_cache).returncode == 0
    assert (site / "zh" / "second.html").is_file()
    # Attack 8, case 36: a page added to both languages, and only en built: the kept zh site lacks
    # its twin, so its language switch led to a 404 (exit 0). Refused until zh is built too.
    for code, title in (("en", "Third."), ("zh", "第三页。")):
        front = (docs / code / "second.md").read_text(encoding="utf8").split("\n---\n")[0]  # its front matter
        (docs / code / "third.md").write_text(f"{front}\n---\n(third)=\n# {title[:-1]}\n\n{title}\n", encoding="utf8")
        index = docs / code / "index.md"
        index.write_text(index.read_text(encoding="utf8").replace(":hidden:\nsecond\n", ":hidden:\nsecond\nthird\n"),
                         encoding="utf8")
    lacks = ("error: [zh] its published site lacks pages en has (third.html): the language switch would lead to "
             "missing pages; nothing is published; build zh too (the whole book, or --language zh as well)")
    for _ in range(2):
        build = build_book(docs, tmp_path, "html", "--language", "en", cache=fixture_cache)
        assert build.returncode == 1 and lacks in build.output.splitlines(), build.output
        assert not (site / "en" / "third.html").exists()
    both = build_book(docs, tmp_path, "html", cache=fixture_cache)
    assert both.returncode == 0, both.output
    assert (site / "en" / "third.html").is_file() and (site / "zh" / "third.html").is_file()


@pytest.mark.unit
def test_a_page_whose_name_is_not_in_composed_form_is_one_line_before_sphinx_starts(tmp_path):
    # Attack 11, cases 15 and 47: café.md with a combining accent beside (or as the twin of)
    # café.md with one character: Sphinx's own messages never said the names differ.
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    for code, name in (("en", composed), ("zh", decomposed)):
        (tmp_path / "docs" / code).mkdir(parents=True)
        (tmp_path / "docs" / code / f"{name}.md").write_text("# Café\n", encoding="utf8")
    (tmp_path / "docs" / "en" / "fine.md").write_text("# Fine\n", encoding="utf8")
    (tmp_path / "docs" / "en" / decomposed).mkdir()  # a folder so named: its pages are named by it
    (tmp_path / "docs" / "en" / decomposed / "inside.md").write_text("# Inside\n", encoding="utf8")
    problems = driver.decomposed_page_names(tmp_path / "docs", ["en", "zh"])
    why = ("is not in Unicode's composed form (NFC): a letter and a combining mark where one character would do, "
           "which Sphinx reads as the composed name; rename it, typing its accented letters as one character each")
    assert problems == [f"{tmp_path / 'docs' / 'en' / decomposed / 'inside.md'}: its folder's name {why}",
                        f"{tmp_path / 'docs' / 'zh' / decomposed}.md: its name {why}"]
    # The driver says so before Sphinx starts, as for any other bad input (exit 2).
    (tmp_path / "docs" / "en" / "index.md").write_text("# Home\n", encoding="utf8")
    build = subprocess.run(
        [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--docs", str(tmp_path / "docs"),
         "--out", str(tmp_path / "out"), "--cache-root", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (build.returncode, build.stdout + build.stderr) == (2, "".join(f"error: {line}\n" for line in problems))


@pytest.mark.unit
def test_jobs_is_a_number_of_processes_or_auto():
    assert [driver.jobs_value(text) for text in ("1", "2", "auto")] == ["1", "2", "auto"]
    for text in ("0", "-3", "abc", ""):
        with pytest.raises(Exception, match="is not a number of processes"):
            driver.jobs_value(text)


@pytest.mark.unit
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_before_sphinx_runs_is_said_in_one_line(monkeypatch, capsys, signum):
    # Attack 6, cases 10a, 10b: Ctrl-C while the driver checked its inputs was a traceback, and
    # SIGTERM ended it without a word.
    monkeypatch.setattr(driver, "start_problems", lambda args: os.kill(os.getpid(), signum) or [])
    assert driver.main(["html", "--out", "/nonexistent/out"]) == 128 + signum
    message = {signal.SIGINT: "the build was interrupted", signal.SIGTERM: "the build was stopped by SIGTERM"}
    assert capsys.readouterr().err.splitlines() == [f"error: {message[signum]}; run it again to finish"]
    assert signal.getsignal(signum) is not driver.interrupted  # put back as it was


@pytest.mark.unit
def test_a_published_file_whose_mode_changed_or_cannot_be_read_is_not_as_published(tmp_path, monkeypatch):
    # Attack 6, case 5: Landlock leaves modes alone; a cell made a kept page mode 600 (exit 0),
    # or 000 (a traceback in the driver).
    page = tmp_path / "index.html"
    page.write_text("<p>page</p>", encoding="utf8")
    page.chmod(0o644)
    published = last_build.folder_files(tmp_path)
    page.chmod(0o600)
    assert last_build.folder_files(tmp_path) != published
    page.chmod(0o644)
    assert last_build.folder_files(tmp_path) == published

    def refused(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refused)
    assert last_build.folder_files(tmp_path) == {"index.html": "unreadable:Permission denied"}


@pytest.mark.fixture
def test_a_folder_the_build_cannot_write_is_one_line(tmp_path, monkeypatch, capsys, fixture_cache):
    # Attack 6, case 15c: a read-only doctrees folder was a traceback from the driver.
    def refused(doctrees):
        raise PermissionError(13, "Permission denied", str(doctrees / last_build.NOTE))

    monkeypatch.setattr(driver, "forget_note", refused)
    status = driver.main(["html", "--language", "en", "--docs", str(FIXTURES / "good" / "docs"),
                          "--out", str(tmp_path / "_build"), "--cache-root", str(fixture_cache), "-q"])
    assert status == 1
    err = capsys.readouterr().err
    assert re.search(r"^error: \[en\] the build cannot write \S+/doctrees/en/\S+ \(Permission denied\): make it "
                     r"writable, or choose another --out$", err, re.M), err
    assert "Traceback" not in err


@pytest.mark.unit
def test_every_builder_but_html_writes_every_page(tmp_path):
    # Attack 8, cases 8, 10, 37: after an html build, `build epub` shared its environment, read
    # nothing, and wrote only the pages whose own source was newer than their .xhtml: the EPUB
    # kept another page's old title, an included file's old text and the book's old messages.
    from book_extensions.configuration.settings import book_languages

    english = book_languages(ROOT)[0]
    for builder, writes_all in (("html", False), ("epub", True), ("singlehtml", True), ("doctest", True)):
        args = driver.parse_args([builder, "--out", str(tmp_path / "out"), "--cache-root", str(tmp_path / "cache")])
        command = driver.sphinx_command(args, english, args.docs, args.out)
        assert ("-a" in command) == writes_all, builder


@pytest.mark.unit
def test_a_kept_language_must_have_the_pages_of_the_language_built(tmp_path):
    work = tmp_path / "cpu" / "html-work" / "en"
    # The folders of paths.RESERVED_FOLDER hold no pages: the offline editions', and those starting with "_".
    for name in ("index.html", "a.html", "sub/b.html", "_static/x.html", "_sources/index.md.txt",
                 "offline/en.html", "sub/_extra/c.html"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text("")
    built = {"en": {}}
    same = {"languages": {"zh": {"index.html": "", "a.html": "", "sub/b.html": "", "_static/y.html": "",
                                 "offline/zh.html": ""}}}
    assert driver.unmatched_pages(tmp_path / "cpu", built, same) == []
    other = {"languages": {"zh": {"index.html": "", "sub/b.html": "", "gone.html": ""}}}
    assert driver.unmatched_pages(tmp_path / "cpu", built, other) == [
        "[zh] its published site lacks pages en has (a.html): the language switch would lead to missing pages; "
        "nothing is published; build zh too (the whole book, or --language zh as well)",
        "[zh] its published site has pages en no longer has (gone.html): the language switch would lead to missing "
        "pages; nothing is published; build zh too (the whole book, or --language zh as well)"]
    assert driver.unmatched_pages(tmp_path / "cpu", {}, other) == []  # nothing built: nothing published
