"""Every published file is clean: no build-machine path in a figure, a notebook, an EPUB
(book_extensions/checks/leaked_paths.py), and no offline edition built from other sources
(book_extensions/editions/offline_builders.py); the test suite's own execution caches (tests/books.py)."""

import base64
import json
import re
import sqlite3
import struct
import zipfile
import zlib
from contextlib import closing
from urllib.parse import quote

import books
import pytest
from books import ROOT

GOOD_EDITION = "cutting-the-graph-en.pdf"  # conf.py's book_slug, the good fixture's English


def build_path_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "[book.build_path]" in line]


def test_a_figure_or_a_notebook_that_shows_a_build_path_fails_every_build(build_fixture):
    # The pages show nothing of the machine: the path is in an SVG's <desc> and in a
    # display's metadata, which only the published files carry.
    for attempt in ("first", "again"):  # sticky: the check reads the output, not the cache
        build = build_fixture("artifact_paths", "html", "--language", "en")
        assert build.returncode != 0, (attempt, build.output)
        lines = build_path_lines(build.output)
        assert any(re.search(r"WARNING: en/_images/\w+\.svg \(shown on figure\.md\) holds a build-machine "
                             r"path \(the \w[\w ']+\): ….*drawn in /", line) for line in lines), lines
        assert any("en/_notebooks/figure.ipynb holds a build-machine path" in line for line in lines), lines
        assert any("en/_notebooks/metadata.ipynb holds a build-machine path (the toolchain)" in line
                   for line in lines), lines
        assert len(lines) == 3, lines  # one line per file; the clean index page is not named


def test_every_written_form_of_a_path_is_found_and_only_a_path(tmp_path):
    from book_extensions.checks.leaked_paths import leaks

    machine = "/home/builder/my book"
    paths = [(machine, "the repository root"), ("/tmp", "the temp folder")]
    site = tmp_path / "site"
    site.mkdir()
    written = {
        "plain.txt": f"see {machine}/docs/en",
        "quoted.html": f'<a href="file://{quote(machine)}/x.html">x</a>',
        "wrapped.html": f"<pre>{machine.replace('/', '/<wbr>')}/<wbr>docs</pre>",
        "escaped.json": json.dumps({"where": f"{machine}/\u00e9"}, ensure_ascii=True),
        "at-the-end.svg": "<desc>drawn in /tmp</desc>",
        "not-a-path.js": "mount('/tmpfs'); load('/tmp.d'); const home = '/home/builder/my books';",
        # What a cell can print of its folder: quoted whole, with backslashes, in capitals.
        "all-quoted.txt": quote("/tmp/book-page-x/work", safe=""),
        "all-quoted-lower.txt": quote(machine, safe="").lower(),
        "backslashed.txt": "\\tmp\\book-page-x\\work",
        "capitals.txt": machine.upper() + "/DOCS",
    }
    for name, text in written.items():
        (site / name).write_text(text, encoding="utf8")
    # A figure's metadata, in a text chunk, plain and compressed; its pixels are not read.
    (site / "figure.png").write_bytes(png(b"tEXt", b"Comment\0drawn in /tmp/x"))
    (site / "squeezed.png").write_bytes(png(b"zTXt", b"Comment\0\0" + zlib.compress(f"{machine}/x".encode())))
    (site / "pixels.png").write_bytes(png(b"IDAT", b"\xff\xfe/tmp/x"))
    comment = f"drawn in {machine}".encode()
    (site / "photo.jpg").write_bytes(b"\xff\xd8\xff\xfe" + struct.pack(">H", len(comment) + 2) + comment + b"\xff\xd9")
    (site / "entities.html").write_text("<p>&#47;tmp&#x2F;book-page-x&#47;work</p>", encoding="utf8")
    notebook = {"cells": [{"outputs": [{"data": {"image/png": base64.b64encode(
        png(b"iTXt", b"Comment\0\0\0\0\0drawn in /tmp/x")).decode()}}]}]}
    (site / "page.ipynb").write_text(json.dumps(notebook), encoding="utf8")
    # Attack 6, case 20: a PDF output with the path in a compressed stream, a GIF's comment.
    pdf = b"%PDF-1.4\n1 0 obj << /Filter /FlateDecode >> stream\n" + zlib.compress(f"({machine})".encode()) + \
        b"\nendstream endobj\n%%EOF"
    (site / "document.ipynb").write_text(json.dumps({"cells": [{"outputs": [{"data": {
        "application/pdf": base64.b64encode(pdf).decode(), "text/plain": "<document>"}}]}]}), encoding="utf8")
    comment = b"drawn in /tmp/x"
    gif = b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0, 0, 0) + b"\x21\xfe" + bytes([len(comment)]) + comment + \
        b"\x00" + b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00" + b"\x3b"
    (site / "animation.gif").write_bytes(gif)
    (site / "clean.gif").write_bytes(gif.replace(comment, b"drawn in a book"))
    with zipfile.ZipFile(site / "book.epub", "w") as epub:
        epub.writestr("EPUB/index.xhtml", f"<p>{machine}/docs</p>")
    found = {rel: kind for rel, kind, _ in leaks(site, paths)}
    assert found == {
        "plain.txt": "the repository root",
        "quoted.html": "the repository root",
        "wrapped.html": "the repository root",
        "escaped.json": "the repository root",
        "at-the-end.svg": "the temp folder",
        "all-quoted.txt": "the temp folder",
        "all-quoted-lower.txt": "the repository root",
        "backslashed.txt": "the temp folder",
        "capitals.txt": "the repository root",
        "figure.png": "the temp folder",
        "squeezed.png": "the repository root",
        "page.ipynb": "the temp folder",
        "photo.jpg": "the repository root",
        "entities.html": "the temp folder",
        "document.ipynb": "the repository root",
        "animation.gif": "the temp folder",
        "book.epub:EPUB/index.xhtml": "the repository root",
    }
    # A rebuild scans only what changed: files found clean are noted by their digest, and a
    # file that holds a path is found again by every build until it is mended.
    known_clean: dict[str, str] = {}
    assert {rel for rel, _, _ in leaks(site, paths, known_clean)} == set(found)
    assert "clean.gif" in known_clean and "plain.txt" not in known_clean
    (site / "clean.gif").write_bytes(gif)
    assert {rel for rel, _, _ in leaks(site, paths, known_clean)} == {*found, "clean.gif"}
    (site / "clean.gif").write_bytes(b"GIF89a")
    skipped = dict(known_clean)
    assert {rel for rel, _, _ in leaks(site, paths, known_clean)} == set(found)
    assert known_clean.keys() == skipped.keys() | {"clean.gif"}


def png(kind: bytes, body: bytes) -> bytes:
    """A PNG file's bytes: its signature, one chunk (its checksum not checked) and the end."""
    import struct

    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4s", len(body), kind) + body + b"\0" * 4 + \
        struct.pack(">I4s", 0, b"IEND") + b"\0" * 4


def fake_edition(build_out, stamp: str | None):
    folder = build_out / "cpu" / "offline" / "en"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / GOOD_EDITION).write_bytes(b"%PDF-1.4 an edition of some other day\n")
    if stamp is not None:
        (folder / f"{GOOD_EDITION}.sources").write_text(stamp + "\n", encoding="utf8")


def test_an_edition_built_from_other_sources_is_neither_linked_nor_published(build_fixture, tmp_path):
    out = tmp_path / "_build"
    for stamp, why in ((None, f" (it has no {GOOD_EDITION}.sources)"), ("0" * 64, "")):
        fake_edition(out, stamp)
        build = build_fixture("good", "html", "--language", "en")
        assert build.returncode == 0, build.output  # not the book's error: an info line, no link
        assert (f"offline/en/{GOOD_EDITION} was not built from these sources{why}: run `nox -s pdf` again; "
                "until then the site neither links nor carries it") in build.output, build.output
        site = build.site() / "en"
        assert "book-pdf" not in (site / "index.html").read_text(encoding="utf8")
        assert not (site / "offline").exists()
    # Stamped with these sources (as `nox -s pdf` stamps it), it is linked and carried.
    from book_extensions.editions.offline_builders import sources_digest

    fake_edition(out, sources_digest(ROOT / "tests" / "fixtures" / "good" / "docs", "en", ROOT, "cpu"))
    build = build_fixture("good", "html", "--language", "en")
    assert build.returncode == 0 and "not built from these sources" not in build.output, build.output
    assert f'href="offline/{GOOD_EDITION}"' in (build.site() / "en" / "index.html").read_text(encoding="utf8")
    assert (build.site() / "en" / "offline" / GOOD_EDITION).is_file()


def test_the_test_suites_cache_is_a_copy_that_drops_records_without_their_notebook(tmp_path):
    source, copy = tmp_path / "cache", tmp_path / "copy"
    (source / "executed" / "kept").mkdir(parents=True)
    (source / "executed" / "kept" / "base.ipynb").write_text("{}")
    (source / "__version__.txt").write_text("1")
    (source / "book-cache.lock").write_text("")
    with closing(sqlite3.connect(source / "global.db")) as database:
        database.execute("create table nbcache (pk integer primary key, hashkey text)")
        database.executemany("insert into nbcache values (?, ?)", [(1, "kept"), (2, "gone")])
        database.commit()
        # A writer in the middle of a transaction: the copy reads the last committed state.
        database.execute("insert into nbcache values (3, 'uncommitted')")
        books.copy_cache(source, copy)
    with closing(sqlite3.connect(copy / "global.db")) as database:
        assert database.execute("select hashkey from nbcache").fetchall() == [("kept",)]
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*")) == [
        "__version__.txt", "executed", "executed/kept", "executed/kept/base.ipynb", "global.db"]


def test_the_suites_book_is_built_with_a_seeded_copy_of_the_repositorys_cache(monkeypatch, tmp_path):
    from book_extensions.execution.cache_key import cache_dir

    monkeypatch.delenv("BOOK_TEST_CACHE", raising=False)
    cache = books.book_cache(tmp_path)
    repository = ROOT / ".jupyter_cache"
    assert cache.is_relative_to(tmp_path)
    if (cache_dir(repository, "cpu") / "global.db").exists():  # seeded with what `nox -s docs` executed
        assert (cache_dir(cache, "cpu") / "global.db").exists()
    monkeypatch.setenv("BOOK_TEST_CACHE", str(tmp_path / "own"))
    assert books.book_cache(tmp_path / "elsewhere") == tmp_path / "own"


def test_the_suites_execution_seeds_a_repository_without_a_cache_and_never_replaces_one(tmp_path):
    from book_extensions.execution.cache_key import cache_dir

    suite, repository = tmp_path / "suite", tmp_path / "repository"
    source = cache_dir(suite, "cpu")
    (source / "executed" / "page").mkdir(parents=True)
    (source / "executed" / "page" / "base.ipynb").write_text("{}")
    with closing(sqlite3.connect(source / "global.db")) as database:
        database.execute("create table nbcache (pk integer primary key, hashkey text)")
        database.execute("insert into nbcache values (1, 'page')")
        database.commit()
    assert books.seed_repository_cache(suite, repository)
    seeded = cache_dir(repository, "cpu")
    assert (seeded / "executed" / "page" / "base.ipynb").is_file()
    assert [p.name for p in repository.iterdir()] == [seeded.name]  # no staging folder left
    # A cache the repository has (a later `nox -s docs` executed into it) is never replaced.
    (seeded / "executed" / "page" / "base.ipynb").write_text('{"mine": 1}')
    assert not books.seed_repository_cache(suite, repository)
    assert (seeded / "executed" / "page" / "base.ipynb").read_text() == '{"mine": 1}'
    # Nor does a suite whose build left no database seed anything.
    assert not books.seed_repository_cache(tmp_path / "empty", tmp_path / "other")
    assert not (tmp_path / "other").exists()


@pytest.mark.unit
def test_a_record_of_clean_files_damaged_into_a_folder_is_made_again(tmp_path):
    # Attack 8, case 26c: the record replaced by a folder stopped the build with Sphinx's crash report.
    from book_extensions.checks.clean_files import known_clean

    record = tmp_path / "book-leaks-clean.json"
    (record / "inside").mkdir(parents=True)
    with known_clean(record, "rules") as files:
        assert files == {}
        files["page.html"] = "digest"
    with known_clean(record, "rules") as files:
        assert files == {"page.html": "digest"}


@pytest.mark.unit
def test_the_record_of_the_last_publish_damaged_into_a_folder_is_made_again(tmp_path):
    # Attack 9, case 1: book-published.json replaced by a folder gave a traceback after the new
    # site was in place, on every later build (case 14: book-executions.json, the same way).
    from book_extensions.commands import last_build

    (tmp_path / "html" / "en").mkdir(parents=True)
    (tmp_path / "html" / "en" / "index.html").write_text("page")
    (tmp_path / last_build.PUBLISHED / "inside").mkdir(parents=True)
    last_build.note_published(tmp_path, ["en"])
    assert list(last_build.read_published(tmp_path)["languages"]["en"]) == ["index.html"]
