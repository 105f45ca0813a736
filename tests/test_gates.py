"""Every gate of the build fails when it should, naming the page and the cause."""

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from books import FIXTURES, assert_reported, build_book, sleeping_build, warnings_of

pytestmark = pytest.mark.fixture


def test_every_unexpected_error_is_reported_with_its_page_and_cell(build_fixture):
    build = build_fixture("unexpected_errors", "html", "--language", "en")
    assert build.returncode != 0
    assert_reported(build.output, [
        ("en/index.md:", "code cell 2 raised ZeroDivisionError: division by zero"),
        ("en/index.md:", "code cell 3 raised NameError: name 'undefined_name' is not defined"),
        ("en/other.md:", "code cell 1 raised ValueError: boom"),
    ])
    assert len([line for line in warnings_of(build.output) if "[book.cell_error]" in line]) == 3
    assert "html FAILED" in build.output


def test_a_failing_page_fails_again_when_nothing_changed(build_fixture):
    first = build_fixture("unexpected_errors", "html", "--language", "en")
    again = build_fixture("unexpected_errors", "html", "--language", "en")
    assert first.returncode != 0 and again.returncode != 0
    assert "code cell 1 raised ValueError: boom" in again.output


def test_expected_errors_are_checked_not_assumed(build_fixture):
    build = build_fixture("expectations", "html", "--language", "en")
    assert build.returncode != 0
    found = "\n".join(line for line in warnings_of(build.output) if "en/index.md" in line)
    assert "code cell 1 was expected to raise RuntimeError ('anything') but raised nothing" in found
    assert ("code cell 2 was expected to raise RuntimeError ('object') but raised TypeError: "
            "object of type 'int' has no len()") in found
    assert ("code cell 3 was expected to raise RuntimeError ('inplace') but raised "
            "RuntimeError: something else went wrong") in found
    assert "code cell 4: the 'raises-exception' tag passes even when nothing is raised" in found
    assert "code cell 5: expect_error must be a mapping with 'type' and 'message'" in found
    assert "code cell 6" not in found  # raised what it declared
    assert len(re.findall(r"\[book\.expect_error\]", found)) == 5
    # nbclient would skip a cell so tagged, and the page would show its code with no output.
    assert "code cell 7: the 'skip-execution' tag would publish a cell that never ran" in found
    assert "ran anyway" in (build.work() / "en" / "index.html").read_text(encoding="utf8")
    # What a cell printed is what the record keeps: a page may not hide part of it.
    assert "code cell 8: the 'remove-stderr' tag hides what the cell printed" in found
    # Attack 5, cases 27, 31, 38: so may the remove-cell tag, and myst-nb's settings in a cell's
    # metadata, under "mystnb" or the older "render", which the page then hid unseen.
    assert "code cell 9: the 'remove-cell' tag hides what the cell printed" in found
    assert "code cell 10" not in found  # glued for later, shows nothing itself
    assert "code cell 11: its mystnb metadata sets remove_code_outputs" in found
    assert "code cell 12: its render metadata sets output_stderr" in found
    assert "code cell 13" not in found  # text_lexer only draws the output
    # Attack 7, case 19: an image's classes or size hide a figure (d-none, 1 px).
    assert "code cell 14: its mystnb metadata sets image" in found
    # Attack 7, case 17: tags written as a string stopped Sphinx with nbformat's traceback.
    assert "code cell 15: its option 'tags' is not what a notebook allows ('remove-output' is not of type 'array')" in found


def test_faults_in_one_page_are_reported_with_the_rest(build_fixture):
    """A dead kernel, a page that is not UTF-8 and a flood of output: each one line, none a crash."""
    build = build_fixture("execution_faults", "html", "--language", "en")
    assert build.returncode == 1, build.output  # 2 would be a Sphinx crash
    assert_reported(build.output, [
        ("en/dies.md:14", "the kernel died in code cell 2 (exit code 3); nothing from this page was cached"),
        ("en/latin.md:9", "not valid UTF-8 (byte 0xe9 at line 9)"),
        ("en/big.md:14", "code cell 2 shows 150,001 characters of output, more than the 100,000"),
        ("en/index.md:20", "code cell 1 raised ValueError: still reported"),
        # Attack 4, case 19: a Sphinx crash report (a file name too long) that blamed a cell.
        (f"en/long{'-name' * 49}.md:1", "the page's name is 249 bytes long, more than the 100 a page's name may "
                                        "have (it names its URL and the build's files): give it a shorter one"),
    ])
    assert "Traceback" not in build.output and "Exception occurred" not in build.output
    # Kernels talk over IPC sockets: no TCP ports to collide, and no warning about them.
    assert "Kernel is running over TCP" not in build.output
    # The page whose kernel died is not cached: the next build executes it again.
    from jupyter_cache import get_cache

    (folder,) = [d for d in build.cache.iterdir() if (d / "global.db").is_file()]
    cached = {Path(r.uri).name for r in get_cache(str(folder)).list_cache_records()}
    # Nor is the page that printed too much: the limit stops it while it runs.
    assert "dies.md" not in cached and "big.md" not in cached and {"index.md", "scratch.md"} <= cached
    # Pages run in an empty folder of their own, not beside their source (the build failed,
    # so the page is in the working folder, not the published site).
    assert "folder: [] False" in (build.work() / "en" / "scratch.html").read_text(encoding="utf8")


def test_a_page_that_changes_the_sources_fails_and_is_not_cached(tmp_path, monkeypatch):
    # The executor's own comparison, the guard where Linux has no Landlock: the kernel's
    # sandbox (kernel/sandbox.py, tests/test_kernel_sandbox.py) would refuse the write.
    monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "unexpected_errors" / "docs", docs)
    written = docs / "en" / "written.txt"
    (docs / "en" / "other.md").write_text(
        (docs / "en" / "other.md").read_text().replace(
            'raise ValueError("boom")', f"open({str(written)!r}, 'a').write('x')"))
    for _ in range(2):  # not cached: the second build executes it (and fails) again
        build = build_book(docs, tmp_path / "work", "html", "--language", "en")
        assert build.returncode == 1, build.output
        assert_reported(build.output, [("en/other.md", "the book's sources changed while this page "
                                        f"executed: {written}; if a cell wrote there, restore them")])
        written.unlink()


def test_a_source_rewritten_by_a_subprocess_with_its_size_and_time_kept_is_found(tmp_path, monkeypatch):
    # The executor's own comparison, the guard where Linux has no Landlock: the kernel's
    # sandbox (kernel/sandbox.py, tests/test_kernel_sandbox.py) would refuse the write.
    monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")
    # Attack 2, case 16: a subprocess (which the kernel's audit of writes does not see) changed
    # another page at the same size and put its modification time back with `touch -r`.
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "unexpected_errors" / "docs", docs)
    index, other = docs / "en" / "index.md", docs / "en" / "other.md"
    other.write_text(other.read_text().replace('raise ValueError("boom")', "print('fine')"))
    saved = tmp_path / "saved.md"
    shutil.copy2(index, saved)
    script = (f"import os, subprocess; p = {str(index)!r}; t = open(p).read(); "
              "open(p, 'w').write(t.replace('x = 1', 'x = 2')); "
              f"subprocess.run(['touch', '-r', {str(saved)!r}, p], check=True)")
    other.write_text(other.read_text().replace("print('fine')", f"import subprocess, sys\n"
                                               f"subprocess.run([sys.executable, '-c', {script!r}], check=True)"))
    build = build_book(docs, tmp_path / "work", "html", "--language", "en")
    assert build.returncode == 1, build.output
    assert_reported(build.output, [("en/other.md", "the book's sources changed while this page executed: "
                                    f"{index}")])
    assert index.stat().st_mtime_ns == saved.stat().st_mtime_ns and index.stat().st_size == saved.stat().st_size


def test_a_cell_that_never_finishes_fails_after_the_timeout(build_fixture):
    build = build_fixture("timeout", "html", "--language", "en", sphinx=("-D", "nb_execution_timeout=3"))
    assert build.returncode != 0
    assert re.search(r"en/index\.md:\d+: WARNING: a cell ran longer than the 3 s timeout in code cell 2",
                     build.output), build.output


def test_outputs_must_not_show_build_machine_paths(build_fixture):
    build = build_fixture("output_path", "html", "--language", "en")
    assert build.returncode != 0
    assert re.search(r"en/index\.md:\d+: WARNING: an output shows a path of the build machine",
                     build.output), build.output


def test_a_zh_page_whose_code_differs_fails_parity(sphinx_book):
    build = sphinx_book("zh_code_differs", "zh")
    assert build.statuscode != 0
    assert ("parity: docs/zh/index.md code cell 2's code (comments and docstrings aside) differs from en/index.md's"
            in build.warning.getvalue())


def test_a_heading_whose_id_differs_between_languages_fails_parity(sphinx_book):
    # The language switch carries the reader's section over: its id must exist in both.
    build = sphinx_book("zh_anchor_differs", "zh")
    assert build.statuscode != 0
    assert_reported(build.warning.getvalue(), [("parity: docs/zh/index.md", (
        'heading 3 "自测" has no label and gets no id of its own (a number: #id1, #id2…), '
        'en/index.md\'s "Check yourself" gets #check-yourself: put the same (label)= above it in both languages'))])


def test_a_page_in_one_language_only_fails_parity(sphinx_book):
    build = sphinx_book("one_language", "zh")
    assert build.statuscode != 0
    assert "parity: docs/en/extra.md has no zh counterpart (zh/extra.md)" in build.warning.getvalue()


def test_a_page_that_loads_a_script_from_another_host_fails(build_fixture):
    build = build_fixture("remote_script", "html", "--language", "en")
    assert build.returncode != 0
    assert "en/index.html loads https://cdn.example.com/tracker.js (<script src>): the site loads nothing" in build.output


def test_a_doctest_that_no_longer_holds_fails(build_fixture):
    build = build_fixture("doctest_mismatch", "doctest", "--language", "en")
    assert build.returncode != 0
    assert "Failed example:" in build.output
    assert "torch.ones(2, requires_grad=True).detach().requires_grad" in build.output


def test_cuda_where_there_is_none_stops_before_anything_runs(build_fixture, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    build = build_fixture("good", "html", "--device", "cuda")
    assert build.returncode == 2
    assert build.output.strip().splitlines() == [
        f"error: --device cuda asked for, but torch {torch.__version__} sees no CUDA device here"
    ]
    assert not list(build.cache.glob("cuda-*")) and not build.out.exists()


def test_sphinx_warnings_fail_the_build_and_are_all_reported(build_fixture):
    build = build_fixture("sphinx_warnings", "html", "--language", "en")
    assert build.returncode != 0
    assert_reported(build.output, [
        ("en/index.md:10", "undefined label: 'no-such-label'"),
        ("en/index.md:10", "unknown document: 'missing-page'"),
        ("en/orphan.md", "document isn't included in any toctree"),
        ("en/plain.md", "not a MyST notebook"),
    ])


def test_a_name_defined_on_two_pages_fails_under_parallel_reads_too_and_again_unchanged(build_fixture):
    # Sphinx warns of a second label, term or object only when it reads pages one by one; its
    # parallel readers' findings are merged unchecked. Seven pages: enough for -j 2 to read in parallel.
    # Python's objects share one namespace whatever their kind; a term is looked up in any case.
    duplicates = [("en/third.md", "object 'Holder' (py) is defined on 2 pages: fourth, third"),
                  ("en/second.md", "object 'grad_of' (py) is defined on 2 pages: first, second"),
                  ("en/second.md", "label 'leaves' (std) is defined on 2 pages: first, second"),
                  ("en/second.md", "term 'leaf' (std) is defined on 2 pages: first, second"),
                  ("en/sixth.md", "term 'leaf tensor' (std) is defined on 2 pages: fifth, sixth")]
    parallel = build_fixture("duplicate_names", "html", "--language", "en", "--jobs", "2")
    assert parallel.returncode != 0
    assert "duplicate label leaves" not in parallel.output  # read in parallel: Sphinx itself said nothing
    assert_reported(parallel.output, duplicates)
    assert not (parallel.site() / "en").exists()
    # Nothing changed, the driver's own choice of processes: it fails again.
    again = build_fixture("duplicate_names", "html", "--language", "en")
    assert again.returncode != 0
    assert_reported(again.output, duplicates)


def test_a_page_cannot_raise_its_own_timeout(build_fixture):
    # jupyter-cache lets a notebook's "execution" metadata override the build's timeout.
    build = build_fixture("page_execution", "html", "--language", "en", sphinx=("-D", "nb_execution_timeout=3"))
    assert build.returncode != 0
    assert_reported(build.output, [("en/index.md:6", "front matter sets execution: a page cannot change how it executes")])
    # The page ran under the build's own limit, not its 600 s.
    assert_reported(build.output, [("en/index.md:", "a cell ran longer than the 3 s timeout in code cell 1")])


def test_a_second_build_on_the_same_cache_is_refused_in_one_line(tmp_path):
    from books import FIXTURES, build_book
    from filelock import FileLock

    cache = tmp_path / "cache"
    cache.mkdir()
    with FileLock(str(cache / "book-build.lock")):  # as a build running elsewhere holds it
        build = build_book(FIXTURES / "good" / "docs", tmp_path, "html", "--language", "en")
    assert build.returncode == 2
    assert build.output.strip() == (f"error: another build is using the execution cache {cache}: "
                                    "wait for it to finish, or give this one its own --cache-root")
    assert not (tmp_path / "_build").exists()


def test_addresses_are_blanked_in_every_output_and_nothing_else_is(build_fixture):
    import json
    import re

    build = build_fixture("addresses", "html", "--language", "en")
    assert build.returncode == 0, build.output
    page = (build.site() / "en" / "index.html").read_text(encoding="utf8")
    notebook = (build.site() / "en" / "_notebooks" / "index.ipynb").read_text(encoding="utf8")
    for text in (page, notebook):
        assert "0xdeadbeef" in text  # printed hex is output, not an address
        assert not re.search(r"at 0x[0-9a-f]{6,}", text), re.findall(r".{30}at 0x[0-9a-f]{6,}", text)
    outputs = [o for c in json.loads(notebook)["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    error = next(o for o in outputs if o["output_type"] == "error")
    assert "object at 0x…" in error["evalue"] and any("object at 0x…" in line for line in error["traceback"])
    assert any("object at 0x…" in "".join(o.get("data", {}).get("text/html", "")) for o in outputs)


def determinism(docs: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "book_extensions", "determinism", "--docs", str(docs),
                           "--cache-root", str(cache)], capture_output=True, text=True, timeout=600)


def test_a_cell_that_prints_differently_on_each_run_is_found(build_fixture):
    # The build passes: from the cache, the page shows one run's time and nothing is wrong.
    build = build_fixture("nondeterministic", "html", "--language", "en")
    assert build.returncode == 0, build.output
    check = determinism(FIXTURES / "nondeterministic" / "docs", build.cache)
    assert check.returncode == 1, check.stdout + check.stderr
    (line,) = check.stderr.splitlines()
    assert line.startswith("error: tests/fixtures/nondeterministic/docs/en/index.md: code cell 2 "
                           "printed differently in two executions: 'now: ")
    assert "2 code cells executed twice: 1 printed differently" in check.stdout


def test_a_figure_or_html_that_changes_on_each_run_is_found(build_fixture):
    # Their text is the same on every run ("<Figure …>", "<IPython.core.display.HTML object>"):
    # only what they show differs. The same drawing, as PNG (the inline backend) and as an SVG
    # with matplotlib's random ids and date, passes.
    import json

    build = build_fixture("nondeterministic_media", "html", "--language", "en")
    assert build.returncode == 0, build.output
    notebook = json.loads((build.site() / "en" / "_notebooks" / "index.ipynb").read_text(encoding="utf8"))
    shown = [sorted(o.get("data", {})) for c in notebook["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert shown == [["image/png", "text/plain"], ["image/svg+xml", "text/plain"],
                     ["image/png", "text/plain"], ["text/html", "text/plain"]], shown
    check = determinism(FIXTURES / "nondeterministic_media" / "docs", build.cache)
    assert check.returncode == 1, check.stdout + check.stderr
    page = "error: tests/fixtures/nondeterministic_media/docs/en/index.md"
    assert check.stderr.splitlines() == [
        f"{page}: code cell 4 showed a different image/png in two executions: seed it, sort it, or show less",
        f"{page}: code cell 5 showed a different text/html in two executions: seed it, sort it, or show less",
    ]
    assert "5 code cells executed twice: 2 printed differently" in check.stdout


def test_an_unreadable_cache_is_one_line_naming_it(tmp_path):
    from book_extensions.execution.cache_key import cache_dir

    folder = cache_dir(tmp_path / "cache", "cpu")
    folder.mkdir(parents=True)
    (folder / "global.db").write_bytes(b"not a database " * 100)
    build = build_book(FIXTURES / "nondeterministic" / "docs", tmp_path, "html", "--language", "en",
                       cache=tmp_path / "cache")
    assert build.returncode == 2
    assert build.output.strip() == (f"error: the execution cache {folder} cannot be read (file is not a "
                                    "database): delete that folder (`make clean-cache` deletes the default one) and build again")


def test_ctrl_c_stops_the_build_without_a_traceback(tmp_path):
    # Its own process group, as a terminal's: Ctrl-C reaches the driver, Sphinx and the kernel,
    # once the page runs its sleeping cell.
    build = sleeping_build(tmp_path / "_build", tmp_path / "cache")
    os.killpg(build.pid, signal.SIGINT)
    output, _ = build.communicate(timeout=120)
    assert build.returncode == 130, output
    assert "error: the build was interrupted; run it again to finish" in output
    assert "Traceback" not in output


def test_cells_in_other_languages_and_broken_front_matter_say_what_to_fix(build_fixture):
    build = build_fixture("source_faults", "html", "--language", "en")
    assert build.returncode == 1, build.output
    assert_reported(build.output, [
        ("en/index.md:18", "code cell 2 is marked 'rust', but pages run in a Python kernel: "
                           "write {code-cell} ipython3, or a plain ```rust block"),
        ("en/front-matter.md:", "the front matter is not valid YAML: expected ',' or ']'"),
    ])
    # Said once, as what is wrong: not again as "not a MyST notebook".
    assert not any("front-matter.md" in line and "not a MyST notebook" in line for line in warnings_of(build.output))
    # An empty page: what it lacks, once each (Sphinx said "doesn't have a title" six times).
    assert_reported(build.output, [("en/empty.md", "not a MyST notebook"),
                                   ("en/empty.md", "the page has no title: start it with a '# ' heading")])
    assert "doesn't have a title" not in build.output


def test_the_site_root_waits_for_every_language(build_fixture):
    # Assembled once by the build driver, from each language's manifest: not from one
    # language's run, which would list languages it has not seen built.
    build = build_fixture("nondeterministic", "html", "--language", "en")
    assert build.returncode == 0, build.output
    assert "The site root (language chooser, 404, robots.txt) is not written: it waits for: zh" in build.output
    assert not (build.site() / "404.html").exists() and (build.site() / "en" / "index.html").exists()


def test_a_page_that_changes_how_it_runs_where_the_front_matter_check_cannot_see_fails(tmp_path):
    # Attack 4, cases 26 and 27: a Jupyter notebook page with its own outputs and execution mode
    # "off", and a front matter opened by "--- " (which myst-nb reads, and the check of a page's
    # source did not): both were published with outputs no cell had produced.
    import json

    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    second = docs / "en" / "second.md"
    text = second.read_text(encoding="utf8").replace("---\n", "--- \n", 1)
    second.write_text(text.replace("file_format: mystnb\n", 'file_format: mystnb\nmystnb:\n  execution_mode: "off"\n'
                                     "  cell_metadata_key: settings\n"),
                      encoding="utf8")
    notebook = {"nbformat": 4, "nbformat_minor": 5, "cells": [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Third"},
        {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 1, "source": "print(1)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "a stored output\n"}]}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}
    (docs / "en" / "third.ipynb").write_text(json.dumps(notebook), encoding="utf8")
    index = docs / "en" / "index.md"
    index.write_text(index.read_text(encoding="utf8").replace("second\n", "second\nthird\n", 1), encoding="utf8")
    build = build_book(docs, tmp_path / "work", "html", "--language", "en")
    assert build.returncode == 1, build.output
    assert_reported(build.output, [
        ("en/second.md", "the page's metadata changes execution_mode='off', cell_metadata_key='settings': "
                         "a page cannot change how it executes or what it shows; remove it"),
        ("en/third", "a page of the book is a MyST notebook (.md), not a .ipynb file: convert it (jupytext --to myst)"),
    ])


def test_raw_html_in_prose_runs_nothing_and_loads_nothing(tmp_path):
    # Attack 4, cases 8 and 9: the site's scan ended a script where html.parser does, not where a
    # browser does, and read no escaped URL in a script: both pages redirected the reader.
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    with (docs / "en" / "second.md").open("a", encoding="utf8") as page:
        page.write('\n<script>var a = 1;</script x><meta http-equiv="refresh" content="0;url=//evil.example/"></script>\n\n'
                   '<p>A paragraph.</p>\n\n<script>location.href = "https:\\/\\/evil.example/";</script>\n')
    build = build_book(docs, tmp_path / "work", "html", "--language", "en")
    assert build.returncode == 1, build.output
    found = [line for line in warnings_of(build.output) if "the page's raw HTML" in line]
    assert any("en/second.md:" in line and "runs a script (<script>)" in line for line in found), found
    assert any("acts on the whole page (<meta http-equiv=refresh>)" in line for line in found), found
    assert not (build.site() / "en").exists()


def test_a_cell_printing_a_lone_surrogate_is_named_for_what_it_did(tmp_path):
    # Attack 6, case 18a: the kernel could not send the text and sent its own traceback, and
    # the build said only that an output showed a toolchain path.
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "good" / "docs", docs)
    for code in ("en", "zh"):
        with (docs / code / "second.md").open("a", encoding="utf8") as page:
            page.write('\n```{code-cell} ipython3\nprint("a\\ud800b")\n```\n')
    build = build_book(docs, tmp_path / "work", "html", "--language", "en")
    assert build.returncode == 1, build.output
    assert re.search(r"en/second\.md:\d+: WARNING: code cell \d+ printed a character that cannot be encoded as "
                     r"UTF-8 \(a lone surrogate\), so the kernel sent its own error instead", build.output), build.output
