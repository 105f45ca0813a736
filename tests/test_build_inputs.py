"""What the build reads and writes besides the pages: the record of a build is made from the
docs and cache that build used (``build html --record``, what ``nox -s docs`` runs), and every
input file is checked before Sphinx starts, each problem one line naming the file."""

import json
import re

import pytest
from books import FIXTURES, ROOT, build_book

from book_extensions.records import cell_records


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
        status = cell_records.main(["record", "--cache-root", str(cache), "--results", str(tmp_path / "results")])
    assert status == 2
    assert capsys.readouterr().err.strip().startswith(f"error: a build is using the execution cache {cache}")
    assert not (tmp_path / "results").exists()


@pytest.mark.unit
def test_record_without_an_execution_is_one_line(tmp_path, capsys):
    status = cell_records.main(["record", "--cache-root", str(tmp_path / "cache"), "--docs",
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
            "```{testoutput}\n:options: +ELLIPSIS\n...\n```\n")
    found = [(line, dict(counts)) for line, counts in page_relaxations(page)]
    assert found == [(1, {"+NORMALIZE_WHITESPACE (the whole block)": 1, "+ELLIPSIS": 1, "+SKIP": 1}),
                     (7, {":skipif: True": 1}), (16, {"+ELLIPSIS (the whole block)": 1})]
