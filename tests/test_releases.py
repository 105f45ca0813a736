"""Records under older torch releases: listed in one file, compared by the device engine,
shown under the cells they differ in, and no prose that names a release by hand."""

import json
import re
import subprocess
import sys

import pytest
from books import FIXTURES, ROOT, assert_reported, build_book
from bs4 import BeautifulSoup

from book_extensions.checks.prose import literal_versions
from book_extensions.commands import toolchain
from book_extensions.execution.cache_key import torch_version
from book_extensions.records import cell_records, release_changes, release_list

# --- the list of releases ----------------------------------------------------

def test_releases_are_listed_oldest_first(tmp_path):
    listing = tmp_path / "torch-release_changes.txt"
    listing.write_text("# comment\n2.15.0\n\n2.9.1  # a cluster image\n2.13.0\n")
    assert release_list.listed(listing) == ["2.9.1", "2.13.0", "2.15.0"]


@pytest.mark.parametrize("text, reason", [
    ("2.15.0\n2.15\n", "torch-release_changes.txt:2: '2.15' is not a torch release such as 2.15.0"),
    ("2.13.0\n2.13.0\n", "torch-release_changes.txt:2: 2.13.0 is listed twice"),
])
def test_a_bad_list_names_the_file_and_line(tmp_path, text, reason):
    listing = tmp_path / "torch-release_changes.txt"
    listing.write_text(text)
    with pytest.raises(release_list.ReleasesError, match=re.escape(reason)):
        release_list.listed(listing)


def test_the_book_lists_the_pinned_release_and_two_older_ones():
    listed = release_list.listed()
    assert toolchain.pinned_torch() in listed
    assert len([r for r in listed if release_list.version_key(r) < release_list.version_key(toolchain.pinned_torch())]) >= 2


# --- comparing releases: one engine, wording is news ---------------------------

def record(release, outputs):
    return {"device": "cpu", "device_name": "CPU", "torch": release, "cuda": None, "python": "3.11",
            "date": "2026-11-30", "pages": {"page": [{"source": "s1", "outputs": outputs}]}}


def test_a_change_of_wording_between_releases_is_reported():
    old = record("2.13.0", ["RuntimeError: output 0 of SigmoidBackward\n"])
    new = record("2.15.0", ["RuntimeError: output 0 of Sigmoid\n"])
    [change] = release_changes.changes(old, new)
    assert change.kind == "behaviour"
    assert (change.first, change.second) == ("RuntimeError: output 0 of SigmoidBackward", "RuntimeError: output 0 of Sigmoid")
    assert "2.13.0 printed" in change.detail and "2.15.0 printed" in change.detail


def test_torch_source_lines_and_float_noise_are_not_changes():
    old = record("2.13.0", ["UserWarning: x (Triggered internally at /__w/pytorch/a/b.cpp:822.)\n",
                            "tensor([0.1966])\n"])
    new = record("2.15.0", ["UserWarning: x (Triggered internally at /__w/pytorch/a/b.cpp:820.)\n",
                            "tensor([0.1967])\n"])
    assert release_changes.changes(old, new) == []


# --- prose never names a release ------------------------------------------------

def test_literal_versions_are_found_in_prose_only():
    text = ("---\nkernelspec: {name: torch 2.13}\n---\n"
            "In torch 2.13 it raises.\n"
            "```{code-cell} ipython3\nprint('torch 2.13')\n```\n"
            "The torch that built this page ({{ torch_version }}) warns; `torch==2.15.0` is pinned.\n"
            "旧的 2.14 版不同。PyTorch 2.x too.\n")
    assert literal_versions(text) == [(4, "torch 2.13"), (8, "torch==2.15"), (9, "2.14 版"), (9, "PyTorch 2.x")]


def test_the_build_refuses_prose_that_names_a_release(sphinx_book):
    en, zh = sphinx_book("literal_version", "en"), sphinx_book("literal_version", "zh")
    assert en.statuscode != 0 and zh.statuscode != 0
    output = en.warning.getvalue() + zh.warning.getvalue()
    assert_reported(output, [
        ("en/index.md:16", "the prose names a torch release ('torch 2.13')"),
        ("zh/index.md:16", "the prose names a torch release ('2.13 版')"),
    ])
    assert len([line for line in output.splitlines() if "[book.literal_version]" in line]) == 2


def test_no_page_of_the_book_names_a_release():
    pages = sorted((FIXTURES.parent.parent / "docs").glob("*/*.md"))
    assert pages
    assert {str(p): literal_versions(p.read_text(encoding="utf8")) for p in pages
            if literal_versions(p.read_text(encoding="utf8"))} == {}


# --- an older release's output, shown under its cell ------------------------------

@pytest.mark.fixture
def test_an_older_release_that_printed_something_else_is_shown_under_the_cell(tmp_path):
    docs = FIXTURES / "release_notes" / "docs"
    [first, second] = cell_records.current_digests(docs)["index"]
    current = torch_version().split("+")[0]
    results = tmp_path / "results"
    results.mkdir()
    for release, outputs in (("1.0.0", "what an old release printed\n"), (current, "what the current release prints\n")):
        data = record(release, [])
        data["pages"] = {"index": [{"source": first, "outputs": ["the same on every release\n"]},
                                   {"source": second, "outputs": [outputs]}]}
        release_changes.record_path(results, release).write_text(json.dumps(data))
    listing = tmp_path / "torch-release_changes.txt"
    listing.write_text(f"1.0.0\n{current}\n")
    build = build_book(docs, tmp_path, sphinx=("-D", f"book_results_dir={results}",
                                               "-D", f"book_releases_file={listing}"))
    assert build.returncode == 0, build.output
    for language, printed, differ in (("en", "Output on torch 1.0.0 (differs from the above)",
                                       "On torch 1.0.0, 1 cell prints something else"),
                                      ("zh", "torch 1.0.0 上的输出（与上面不同）", "在 torch 1.0.0 上，有 1 个代码单元的输出不同")):
        page = (build.site() / language / "index.html").read_text(encoding="utf8")
        cells = page.split('id="cell-')
        assert len(cells) == 3, language  # every code cell has an anchor
        assert "book-release-output" not in cells[1]  # the same output: no note
        assert '<details class="book-release-output">' in cells[2]
        assert f"<summary>{printed}</summary>" in cells[2]
        assert "what an old release printed" in re.sub(r"<[^>]+>", "", cells[2])
        # The words that differ from what the current release prints are marked.
        assert re.findall(r'<mark class="book-changed">([^<]*)</mark>', cells[2]) == ["an old", "printed"]
        assert differ in page  # the provenance line says so
        # The page of changes links the changed cell.
        changes = re.sub(r"<[^>]+>", "", page.split("book-releases")[-1])
        assert 'href="#cell-2"' in page and "what an old release printed" in changes
        links = [a.get_text() for a in BeautifulSoup(page, "html.parser").select('a[href="#cell-2"]')]
        # named by its page and section (not "cell 2"): where a reader of that list goes
        assert {"Release notes › What changes", "版本说明 › 变化之处"} & set(links), links


@pytest.mark.fixture
def test_an_older_release_that_showed_something_else_says_so_under_the_cell(tmp_path):
    # The same text, but the record says the cell showed an image there: the fold says which
    # kind differs (the book has no older figure to show), and a record made before the
    # digests says nothing about it.
    docs = FIXTURES / "release_notes" / "docs"
    [first, second] = cell_records.current_digests(docs)["index"]
    current = torch_version().split("+")[0]
    results = tmp_path / "results"
    results.mkdir()
    for release, format_ in (("1.0.0", None), ("1.1.0", 2)):
        data = {**record(release, []), **({"format": format_} if format_ else {})}
        data["pages"] = {"index": [{"source": first, "outputs": ["the same on every release\n"]},
                                   {"source": second, "outputs": ["what the current release prints\n"],
                                    "media": ["image/png 1111111111111111"]}]}
        release_changes.record_path(results, release).write_text(json.dumps(data))
    listing = tmp_path / "torch-releases.txt"
    listing.write_text(f"1.0.0\n1.1.0\n{current}\n")
    build = build_book(docs, tmp_path, sphinx=("-D", f"book_results_dir={results}",
                                               "-D", f"book_releases_file={listing}"))
    assert build.returncode == 0, build.output
    for language, printed, other in (("en", "Output on torch 1.1.0 (differs from the above)",
                                      "(the same text, and a different image/png)"),
                                     ("zh", "torch 1.1.0 上的输出（与上面不同）", "（文本相同，image/png 不同）")):
        page = (build.site() / language / "index.html").read_text(encoding="utf8")
        cells = page.split('id="cell-')
        assert "book-release-output" not in cells[1]
        assert re.findall(r"<summary>([^<]*)</summary>", cells[2]) == [printed]  # not 1.0.0's
        assert other in re.sub(r"<[^>]+>", "", cells[2])


# --- the book's own records -------------------------------------------------------

RESULTS = FIXTURES.parent.parent / "results"


def test_every_listed_release_is_recorded_for_the_current_code():
    digests = cell_records.current_digests(FIXTURES.parent.parent / "docs")
    for release in release_list.listed():
        data = cell_records.load(release_changes.record_path(RESULTS, release))
        assert data is not None, f"no record of torch {release}: run nox -s versions"
        assert cell_records.release_of(data) == release
        stale = [d for d in cell_records.compare(data, data, digests) if d.kind == "stale"]
        assert stale == [], f"torch {release}'s record is older than the code: run nox -s versions"


def test_the_pinned_release_is_recorded_as_the_build_printed_it():
    # The versions session executes pages outside Sphinx: it must see what the build sees.
    pinned = cell_records.load(release_changes.record_path(RESULTS, toolchain.pinned_torch()))
    built = cell_records.load(RESULTS / "cpu.json")
    assert cell_records.release_of(built) == toolchain.pinned_torch()
    assert pinned["pages"] == built["pages"]


def test_the_page_of_changes_shows_the_words_that_changed():
    old = ("RuntimeError: one of the variables needed for gradient computation has been modified by an "
           "inplace operation: which is output 0 of SigmoidBackward0, is at version 1; expected version 0")
    new = old.replace("SigmoidBackward0", "Sigmoid")
    assert release_changes.excerpt(old, new) == ("… output 0 of SigmoidBackward0, is at version …",
                                          "… output 0 of Sigmoid, is at version …")
    assert release_changes.excerpt("True\n", "False\n") == ("True\n", "False\n")
    # Two changes far apart: each with its own context, the words between them left out.
    hint = " Hint: one two three four five six seven with torch.autograd.set_detect_anomaly(True)."
    assert release_changes.excerpt(old + hint, new + hint.replace("(True)", "(True, check_nan=False)")) == (
        "… output 0 of SigmoidBackward0, is at version … six seven with torch.autograd.set_detect_anomaly(True).",
        "… output 0 of Sigmoid, is at version … six seven with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def test_the_changed_words_are_marked_word_by_word():
    old = "a tensor with no informations. Read the notes"
    new = "a tensor with no information. Read the notes"
    assert release_changes.marked_excerpt(old, new) == (
        [("… tensor with no ", False), ("informations.", True), (" Read the notes", False)],
        [("… tensor with no ", False), ("information.", True), (" Read the notes", False)])
    # Two changed words side by side are one change, with the space between them.
    assert release_changes.marked_excerpt("x a b y", "x c d y")[1] == [("x ", False), ("c d", True), (" y", False)]
    # A fold shows a whole output: lines and indentation kept, only changed words marked.
    assert release_changes.marked_words("True\n  tensor([1., 2.])", "True\n  tensor([1., 3.])") == [
        ("True\n  tensor([1., ", False), ("2.])", True)]
    assert release_changes.marked_words("same", "same") == [("same", False)]


def test_comparing_two_named_releases_fails_on_any_change(tmp_path):
    # What `nox -s newest-torch` ends with: the cells to read before moving the pin.
    docs = FIXTURES / "release_notes" / "docs"
    [first, second] = cell_records.current_digests(docs)["index"]
    for release, printed in (("2.15.0", "old wording\n"), ("2.16.0", "new wording\n"), ("2.16.1", "new wording\n")):
        data = record(release, [])
        data["pages"] = {"index": [{"source": first, "outputs": ["same\n"]}, {"source": second, "outputs": [printed]}]}
        release_changes.record_path(tmp_path, release).write_text(json.dumps(data))
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "book_extensions", "releases", "changes", "--results", str(tmp_path),
         "--docs", str(docs), *args], capture_output=True, text=True)
    changed = run("--from", "2.15.0", "--to", "2.16.0")
    assert changed.returncode == 1
    assert "torch 2.15.0 -> 2.16.0: 2 cells compared, 1 changed" in changed.stdout
    assert "docs/en/index.md code cell 2: 'old wording' -> 'new wording'" in changed.stdout
    assert run("--from", "2.16.0", "--to", "2.16.1").returncode == 0
    missing = run("--from", "2.15.0", "--to", "2.17.0")
    assert missing.returncode == 2 and "no record of torch 2.17.0" in missing.stderr


def test_a_figure_drawn_differently_by_another_release_is_a_change(tmp_path):
    docs = FIXTURES / "release_notes" / "docs"
    [first, second] = cell_records.current_digests(docs)["index"]
    for release, drawn, format_ in (("2.14.0", "1111111111111111", None), ("2.15.0", "1111111111111111", 2),
                                    ("2.16.0", "2222222222222222", 2)):
        data = record(release, [])
        data["pages"] = {"index": [{"source": first, "outputs": ["same\n"]},
                                   {"source": second, "outputs": ["<Figure size 640x480 with 1 Axes>"],
                                    "media": [f"image/png {drawn}"]}]}
        if format_:
            data["format"] = format_
        release_changes.record_path(tmp_path, release).write_text(json.dumps(data))
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "book_extensions", "releases", "changes", "--results", str(tmp_path),
         "--docs", str(docs), *args], capture_output=True, text=True)
    changed = run("--from", "2.15.0", "--to", "2.16.0")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "torch 2.15.0 -> 2.16.0: 2 cells compared, 1 changed" in changed.stdout
    assert "docs/en/index.md code cell 2: 'image/png 1111111111111111' -> 'image/png 2222222222222222'" in changed.stdout
    # A record made before the digests: its text is compared, and the command says what is not.
    older = run("--from", "2.14.0", "--to", "2.15.0")
    assert older.returncode == 0, older.stdout + older.stderr
    assert "note: only text compared: the record of torch 2.14.0 predates the digests" in older.stdout


@pytest.mark.unit
def test_releases_behind_by_the_same_cells_are_one_sentence_in_either_language():
    from types import SimpleNamespace

    from book_extensions.configuration.settings import book_languages
    from book_extensions.records.release_changes import unrecorded_sentences

    behind = {"2.7.1": 6, "2.9.1": 6, "2.11.0": 0, "2.13.0": 1}
    english = SimpleNamespace(language="en", book_languages=book_languages(ROOT))
    assert unrecorded_sentences(english, behind) == [
        "Not yet run on torch 2.7.1 and 2.9.1: 6 cells changed since the last record.",
        "Not yet run on torch 2.13.0: 1 cell changed since the last record."]
    chinese = SimpleNamespace(language="zh_CN", book_languages=book_languages(ROOT))
    assert unrecorded_sentences(chinese, {"2.7.1": 1}) == ["有 1 个代码单元在 torch 2.7.1 的上次记录之后改动过，尚未重新运行。"]
    assert unrecorded_sentences(english, {"2.7.1": 0}) == []
