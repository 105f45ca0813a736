"""What the build reads and writes besides the pages: the record of a build is made from the
docs and cache that build used (``build html --record``, what ``nox -s docs`` runs), and every
input file is checked before Sphinx starts, each problem one line naming the file."""

import json
import re
import shutil
from pathlib import Path

import pytest
from books import FIXTURES, ROOT, build_book

from book_extensions.records import device_records


@pytest.mark.fixture
def test_the_record_is_what_the_published_page_shows(tmp_path):
    # Issue 31: `nox -s docs -- --cache-root X` built from X but recorded from the default
    # cache, where an unseeded cell had printed another number.
    results = tmp_path / "results"
    build = build_book(FIXTURES / "record_published" / "docs", tmp_path, "html", "--language", "en",
                       "--record", "--results", str(results), cache=tmp_path / "elsewhere")
    assert build.returncode == 0, build.output
    record = json.loads((results / "cpu.json").read_text(encoding="utf8"))
    (outputs,) = [cell["outputs"] for cell in record["pages"]["index"]]
    (printed,) = outputs
    assert re.fullmatch(r"0\.\d+\n", printed)
    page = (build.site() / "en" / "index.html").read_text(encoding="utf8")
    assert printed.strip() in page
    assert f"wrote {results / 'cpu.json'} (1 cells)" in build.output


def printed_number(path: Path) -> str:
    """The one number the record_published page printed, as a record (cpu.json) or its page shows it."""
    if path.suffix == ".json":
        (cell,) = json.loads(path.read_text(encoding="utf8"))["pages"]["index"]
        return cell["outputs"][0].strip()
    (number,) = set(re.findall(r"0\.\d{8,}", path.read_text(encoding="utf8")))
    return number


@pytest.mark.fixture
def test_the_record_is_the_published_page_whatever_became_of_the_cache(tmp_path):
    # Issue 31 (point 3): the record was read from the execution cache, not from the site. With
    # the cache gone while the site stayed, every build said "unchanged" and --record failed
    # ("has no cpu execution ... build first") for ever; with another build's execution in it
    # (two --out folders, one --cache-root), it recorded that build's number, not the page's.
    docs, cache, results = FIXTURES / "record_published" / "docs", tmp_path / "cache", tmp_path / "results"

    def build(folder: str, *record: str):
        return build_book(docs, tmp_path / folder, "html", "--language", "en", *record, cache=cache)

    first = build("a", "--record", "--results", str(results))
    assert first.returncode == 0, first.output
    page = first.site() / "en" / "index.html"
    shown = printed_number(page)
    assert printed_number(results / "cpu.json") == shown
    shutil.rmtree(cache)
    gone = build("a", "--record", "--results", str(results))
    assert gone.returncode == 0, gone.output
    assert "[en] html unchanged" in gone.output and printed_number(results / "cpu.json") == shown
    other = build("b")  # executes the page again, into the shared cache
    assert other.returncode == 0, other.output
    assert printed_number(other.site() / "en" / "index.html") != shown
    again = build("a", "--record", "--results", str(results))
    assert again.returncode == 0, again.output
    assert printed_number(page) == shown and printed_number(results / "cpu.json") == shown


@pytest.mark.unit
def test_a_record_of_a_site_not_built_from_the_pages_is_one_line(tmp_path):
    from book_extensions.records import cell_records

    docs = FIXTURES / "record_published" / "docs"
    with pytest.raises(cell_records.RecordError) as refused:
        cell_records.published_record("cpu", tmp_path / "html", docs, "en")
    assert str(refused.value).startswith("docs/en/index.md: its published notebook ")
    assert str(refused.value).endswith(" is missing; build html (--language en) first")
    notebooks = tmp_path / "html" / "en" / "_notebooks"
    notebooks.mkdir(parents=True)
    (notebooks / "index.ipynb").write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"book": {"outputs_date": "2026-12-05"}},
        "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1,
                   "source": "print(2)", "outputs": []}]}), encoding="utf8")
    with pytest.raises(cell_records.RecordError, match="was not built from this page"):
        cell_records.published_record("cpu", tmp_path / "html", docs, "en")


@pytest.mark.unit
def test_the_docs_session_records_in_the_build_it_runs():
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf8")
    docs = noxfile[noxfile.index("def docs("):].split("\n@nox.session", 1)[0]
    assert '"html", "--record", *session.posargs' in docs and '"records"' not in docs


@pytest.mark.unit
def test_record_is_refused_while_a_build_uses_the_cache(tmp_path, capsys):
    from filelock import FileLock

    cache = tmp_path / "cache"
    cache.mkdir()
    with FileLock(str(cache / "book-build.lock")):  # as a running build holds it
        status = device_records.main(["record", "--cache-root", str(cache), "--results", str(tmp_path / "results")])
    assert status == 2
    assert capsys.readouterr().err.strip().startswith(f"error: a build is using the execution cache {cache}")
    assert not (tmp_path / "results").exists()


@pytest.mark.unit
def test_record_without_an_execution_is_one_line(tmp_path, capsys):
    status = device_records.main(["record", "--cache-root", str(tmp_path / "cache"), "--docs",
                                str(FIXTURES / "record_published" / "docs"), "--results", str(tmp_path / "results")])
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: docs/en/index.md has no cpu execution in ") and line.endswith("; build first")


@pytest.mark.fixture
def test_a_doctest_compares_exception_messages_exactly_and_its_relaxations_are_listed(build_fixture):
    build = build_fixture("doctest_exact", "doctest", "--language", "en")
    assert build.returncode == 1, build.output
    assert build.output.count("Failed example:") == 2, build.output
    assert "        ...\n    RuntimeError: this message is completely wrong\nGot:" in build.output
    assert "        ...\n    RuntimeError: element 0 of tensors ...\nGot:" in build.output  # no ELLIPSIS asked
    assert re.findall(r"index\.md:(\d+): WARNING: a doctest failed", build.output) == ["17", "27"]
    assert re.findall(r"index\.md:(\d+): WARNING: (a >>> block that is not a \{doctest\} block[^[]*)", build.output) == [
        ("51", "a >>> block that is not a {doctest} block: nothing checks it; write it as a {doctest} block ")]
    # The doctests' output names each failure as the GPU job's comparison reads it.
    from book_extensions.commands.gpu_checks import findings

    output = (build.out / "cpu" / "doctest" / "en" / "output.txt").read_text(encoding="utf8")
    assert findings("", output) == ["index.md: doctest failed: torch.ones(1).sum().backward()"]
    assert output.count("Failed example:") == 2 and output.endswith("    7 tests in 1 pages\n    3 failures\n")
    (listed,) = [line for line in build.output.splitlines() if "relaxes" in line]
    assert listed == (f"[en] {FIXTURES.relative_to(ROOT).as_posix()}/doctest_exact/docs/en/index.md:35: "
                      "a doctest block relaxes the exact comparison: +ELLIPSIS (1 example)")


@pytest.mark.unit
def test_relaxations_are_found_in_examples_and_block_options():
    from book_extensions.checks.doctest_options import page_relaxations

    page = ("```{doctest}\n:options: +NORMALIZE_WHITESPACE\n>>> 1  # doctest: +ELLIPSIS, +SKIP\n1\n```\n"
            "text # doctest: +ELLIPSIS\n"
            "````{doctest}\n:skipif: True\n>>> 2\n2\n````\n"
            "```{doctest}\n>>> 3\n3\n```\n"
            "```{testoutput}\n:options: +ELLIPSIS\n...\n```\n"
            # MyST's YAML form of the same options (attack 9, case 15: a +SKIP passed unlisted).
            "```{doctest}\n---\noptions: +SKIP\nskipif: False\n---\n>>> 4\n5\n```\n"
            "```{doctest}\n>>> 5\n---\noptions: no option\n---\n```\n")
    found = [(line, dict(counts)) for line, counts in page_relaxations(page)]
    assert found == [(1, {"+NORMALIZE_WHITESPACE (the whole block)": 1, "+ELLIPSIS": 1, "+SKIP": 1}),
                     (7, {":skipif: True": 1}), (16, {"+ELLIPSIS (the whole block)": 1}),
                     (20, {"+SKIP (the whole block)": 1, ":skipif: False": 1})]
    # The same directives in reStructuredText, inside {eval-rst} (attack 6, case 9).
    rst = ("```{eval-rst}\n.. doctest::\n   :options: +ELLIPSIS\n\n   >>> 'x' * 9\n   'xx...'\n\n"
           "Prose after it.\n\n.. doctest::\n\n   >>> 1  # doctest: +SKIP\n   2\n```\n")
    assert [(line, dict(counts)) for line, counts in page_relaxations(rst)] == [
        (2, {"+ELLIPSIS (the whole block)": 1}), (10, {"+SKIP": 1})]


# --- bad input files: one line each, before Sphinx starts -----------------------------------

def good_record() -> dict:
    return json.loads((ROOT / "results" / "cpu-torch-2.13.0.json").read_text(encoding="utf8"))


def with_record(folder: Path, name: str, change) -> Path:
    """``folder`` holding one record, ``change(text of a good record)`` written as ``name``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(change(json.dumps(good_record(), indent=1)), encoding="utf8")
    return folder / name


def edited(**fields):
    return lambda text: json.dumps({**json.loads(text), **fields})


RECORD_CASES = [
    # A commit cut short: Sphinx's "parallel build error" with a traceback, never naming the file.
    ("truncated", "cpu-torch-2.13.0.json",
     lambda text: '{"device": "cpu", "pages": {"index": [{"source": "0512d95c1e6f5737", "outp',
     "{path}: not valid JSON (Unterminated string starting at: line 1 column 70 (char 69)): record it again"),
    ("no pages", "cpu-torch-2.13.0.json", edited(pages=[]),
     "{path}: 'pages' must map each page to its code cells, not []"),
    ("empty pages", "cpu.json", edited(pages={}), "{path}: 'pages' must map each page to its code cells, not {{}}"),
    ("wrong types", "cpu-torch-2.13.0.json", edited(torch=2.13, date=20261201),
     ("{path}: 'torch' must be a torch version such as '2.15.0+cpu', not 2.13",
      "{path}: 'date' must be a date such as '2026-12-01', or null, not 20261201")),
    ("a cell", "cuda.json", edited(device="cuda", pages={"index": [{"source": "0512d95c1e6f5737", "outputs": "1\n"}]}),
     '{path}: pages[\'index\'] code cell 1 must be {{"source": <digest>, "outputs": [<text>, ...]}}, '
     'not {{"source": "0512d95c1e6f5737", "outputs": "1\\n"}}'),
    ("not an object", "cpu.json", lambda text: "[]",
     "{path}: must be a record (a JSON object with device, device_name, torch, cuda, python, date and pages), not list"),
    ("another release", "cpu-torch-2.14.1.json", lambda text: text,
     "{path}: holds a record of torch {torch}, not of torch 2.14.1 as its name says"),
    ("not a release", "cpu-torch-latest.json", lambda text: text,
     "{path}: not a record name: cpu-torch-<release>.json, such as cpu-torch-2.15.0.json"),
]


def refused_before_sphinx(build, *lines: str) -> None:
    assert build.returncode == 2, build.output
    assert build.output.strip().splitlines() == [f"error: {line}" for line in lines]
    assert not (build.out / "cpu" / "html").exists() and not (build.out / "cpu" / "doctrees").exists()


@pytest.mark.fixture
@pytest.mark.parametrize(("case", "name", "change", "problem"), RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
def test_a_bad_record_is_one_line_before_sphinx_starts(tmp_path, case, name, change, problem):
    path = with_record(tmp_path / "results", name, change)
    build = build_book(FIXTURES / "good" / "docs", tmp_path, "html", "--language", "en",
                       sphinx=("-D", f"book_results_dir={path.parent}"))
    problems = (problem,) if isinstance(problem, str) else problem
    refused_before_sphinx(build, *(line.format(path=path, torch=good_record()["torch"]) for line in problems))


@pytest.mark.fixture
def test_junk_in_the_release_list_is_one_line_each_before_sphinx_starts(tmp_path):
    # Each bad line is one line naming the file and the line, before Sphinx starts: not a crash
    # report from inside Sphinx with the useful line buried in it.
    listing = tmp_path / "torch-releases.txt"
    listing.write_text("# releases\n2.13.0\nfoo bar\n2.15.0  # pinned\n2.13.0\n2.14\n", encoding="utf8")
    build = build_book(FIXTURES / "good" / "docs", tmp_path, "doctest", "--language", "en",
                       sphinx=("-D", f"book_releases_file={listing}"))
    refused_before_sphinx(build, f"{listing}:3: 'foo bar' is not a torch release such as 2.15.0",
                          f"{listing}:5: 2.13.0 is listed twice (also on line 2)",
                          f"{listing}:6: '2.14' is not a torch release such as 2.15.0")


@pytest.mark.fixture
def test_a_missing_release_list_is_one_line(tmp_path):
    build = build_book(FIXTURES / "good" / "docs", tmp_path, "html", "--language", "en",
                       sphinx=("-D", f"book_releases_file={tmp_path / 'none.txt'}"))
    refused_before_sphinx(build, f"{tmp_path / 'none.txt'}: no such file (conf.py's book_releases_file "
                                 "names the list of torch releases)")


def docs_with(tmp_path: Path, name: str, text: str) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    (docs / name).write_text(text, encoding="utf8")
    return docs


@pytest.mark.fixture
@pytest.mark.parametrize(("name", "text", "problem"), [
    ("terms.zh.toml", '[[term]]\nuse = "切断"\nmeaning = "cut"\nnot = "截断"\n',
     "{path}: the entry [[term]] '切断': 'not' and 'allow' must be lists of non-empty strings"),
    ("terms.zh.toml", '[[term]\nuse = "切断"\n',
     "{path}: not a term list ([[term]] entries with use, meaning and not): Expected ']]' at the end of an "
     "array declaration (at line 1, column 7)"),
    ("terms.zh.toml", '[[term]]\nuse = "内存"\nmeaning = "memory"\nnot = ["显存"]\n[search]\n"显存" = 1\n',
     "{path}: [search] must map each word readers type to the book's word, both strings (显存 = \"内存\")"),
    ("search_terms.zh.txt", "计算图 1000 n\n叶子张量 1000 N\n计算图 5\n",
     ("{path}:2: '叶子张量 1000 N' is not 'word [frequency] [tag]' (计算图 1000 n), which jieba reads",
      "{path}:3: 计算图 is listed twice (also on line 1)")),
], ids=["terms entry", "terms toml", "terms search", "search words"])
def test_a_bad_term_or_search_list_is_one_line_before_sphinx_starts(tmp_path, name, text, problem):
    docs = docs_with(tmp_path, name, text)
    build = build_book(docs, tmp_path, "html", "--language", "zh")
    problems = (problem,) if isinstance(problem, str) else problem
    refused_before_sphinx(build, *(line.format(path=docs / name) for line in problems))


@pytest.mark.unit
def test_the_books_own_input_files_pass():
    from book_extensions.configuration.input_files import problems

    assert problems(ROOT, ROOT / "docs") == []


@pytest.mark.unit
def test_a_misspelt_results_folder_or_device_page_is_one_line_each(monkeypatch):
    # Attack 7, cases 9d, 9e: taken without a word, and the pages said no record existed.
    from book_extensions.configuration.input_files import problems

    monkeypatch.chdir(ROOT)
    assert problems(ROOT, ROOT / "docs", ["-D", "book_results_dir=resluts", "-D", "book_device_page=cpu-vs-gpu"]) == [
        "book_results_dir: resluts is not a folder (where the records of the outputs are)",
        "book_device_page: 'cpu-vs-gpu' is not a page of docs/en"]
    assert problems(ROOT, ROOT / "docs", ["-D", "book_device_page=cpu-vs-cuda"]) == []


@pytest.mark.unit
def test_the_preview_checks_the_input_files_before_sphinx_starts(tmp_path, monkeypatch, capsys):
    # Issue 31: `nox -s serve` started sphinx-autobuild on a junk release list, which showed a traceback.
    from book_extensions.commands import serve

    def never(*args):
        raise AssertionError(f"the preview started: {args}")

    monkeypatch.setattr(serve.os, "execv", never)
    listing = tmp_path / "torch-releases.txt"
    listing.write_text("2.13.0\nfoo bar\n2.13.0\n", encoding="utf8")
    status = serve.main(["en", "--docs", str(FIXTURES / "good" / "docs"), "--out", str(tmp_path / "_build"),
                         "--cache-root", str(tmp_path / "cache"), "--", "-D", f"book_releases_file={listing}"])
    assert status == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {listing}:2: 'foo bar' is not a torch release such as 2.15.0",
        f"error: {listing}:3: 2.13.0 is listed twice (also on line 1)"]
    assert not (tmp_path / "_build").exists() and not (tmp_path / "cache").exists()


@pytest.mark.fixture
def test_a_symbolic_link_under_docs_is_one_line_each_before_sphinx_starts(tmp_path):
    # A folder linked into docs/ was published, but the build's digests of the pages did not
    # go into it: an edit there left every later build "unchanged" (attack 2, case 02). A loop
    # crashed Sphinx (case 03); a language folder linked to another's, its configuration (28).
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "page.md").write_text("# Page\n", encoding="utf8")
    (docs / "en" / "sub").symlink_to(outside, target_is_directory=True)
    (docs / "en" / "loop").symlink_to(docs / "en" / "loop")
    shutil.rmtree(docs / "zh")
    (docs / "zh").symlink_to(docs / "en", target_is_directory=True)
    build = build_book(docs, tmp_path, "html", "--language", "en")
    refused_before_sphinx(build, *(f"{docs / name} is a symbolic link: the build does not follow links under "
                                   f"{docs}; copy what it points to there instead"
                                   for name in ("en/loop", "en/sub", "zh")))


@pytest.mark.unit
def test_a_linked_file_is_found_as_a_link(tmp_path):
    from book_extensions.configuration.input_files import linked_sources

    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "page.md").write_text("# Page\n", encoding="utf8")
    assert linked_sources(tmp_path) == []
    (tmp_path / "en" / "copy.md").symlink_to(tmp_path / "en" / "page.md")
    (tmp_path / "en" / "gone.md").symlink_to(tmp_path / "nowhere.md")
    assert [line.split(" is a ")[0] for line in linked_sources(tmp_path)] == [
        str(tmp_path / "en" / "copy.md"), str(tmp_path / "en" / "gone.md")]


@pytest.mark.unit
def test_the_preview_refuses_a_port_it_cannot_serve_on_before_building(tmp_path, monkeypatch, capsys):
    # Attack 6, cases 22b, 22d: sphinx-autobuild built everything, then failed on the port.
    import socket

    from book_extensions.commands import serve

    def never(*args):
        raise AssertionError(f"the preview started: {args}")

    monkeypatch.setattr(serve.os, "execv", never)
    folders = ["--docs", str(FIXTURES / "good" / "docs"), "--out", str(tmp_path / "_build"),
               "--cache-root", str(tmp_path / "cache")]
    with pytest.raises(SystemExit):
        serve.main(["en", "--port", "99999", *folders])
    assert "'99999' is not a port (1-65535)" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = str(taken.getsockname()[1])
        assert serve.main(["en", "--port", port, *folders]) == 2
    assert capsys.readouterr().err.startswith(f"error: port {port} cannot be served on (Address already in use)")
    assert not (tmp_path / "_build").exists()
