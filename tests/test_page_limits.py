"""What a page may do while it runs: how much it shows, which characters, the processes it
leaves and the files it writes; each fault is one line naming the page, and nothing of
the page is cached."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import psutil
import pytest
from books import FIXTURES, ROOT, Build

from book_extensions.execution import runner

pytestmark = pytest.mark.fixture


def build(docs: Path, work: Path, cache: Path, limit_s: int, **environment: str) -> tuple[Build, float]:
    """Like books.build_book (html, English, with more ``environment``), but the build's
    whole process group is stopped after ``limit_s``: a build that hangs fails here
    instead of running on."""
    out = work / "_build"
    command = [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
               "--docs", str(docs), "--out", str(out), "--cache-root", str(cache)]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True, env={**os.environ, **environment})
    try:
        output, _ = process.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"the build did not finish in {limit_s} s") from None
    return Build(process.returncode, output, out, cache), time.perf_counter() - started


def warning(output: str, page: str, text: str) -> str:
    """The one warning line that names ``page`` and says ``text``."""
    found = [line for line in output.splitlines() if "WARNING" in line and page in line and text in line]
    assert len(found) == 1, (page, text, output)
    return found[0]


def rendered(run: Build) -> str:
    """The page as the build rendered it, whether the failed build published it or not."""
    (page,) = run.out.rglob("html*/en/index.html")
    return page.read_text(encoding="utf8")


def cached_pages(cache_root: Path) -> set[str]:
    from jupyter_cache import get_cache

    return {Path(r.uri).name for folder in cache_root.iterdir() if (folder / "global.db").is_file()
            for r in get_cache(str(folder)).list_cache_records()}


def test_a_flood_of_output_fails_in_seconds_and_is_neither_cached_nor_rendered(tmp_path):
    # One 5 MB line: myst-nb's carriage-return handling takes minutes on it, so the build
    # must stop the page before rendering; and again on the next build (nothing cached).
    for attempt in range(2):
        run, seconds = build(FIXTURES / "run_flood" / "docs", tmp_path / f"work{attempt}", tmp_path / "cache", 120)
        assert run.returncode == 1, run.output
        assert seconds < 30, seconds
        warning(run.output, "en/index.md:16", "code cell 2 shows 5,000,001 characters of output, more than the "
                "100,000 a cell may show; print a summary or a slice")
        assert "index.md" not in cached_pages(run.cache)
        page = rendered(run)
        assert "fine" in page and "x" * 1000 not in page


def test_control_characters_are_refused_and_colour_is_kept(build_fixture):
    run = build_fixture("run_control", "html", "--language", "en")
    assert run.returncode == 1, run.output
    warning(run.output, "en/index.md:16", r"code cell 2 shows the control character \x07, which a page "
            "cannot show; leave it out or print its repr()")
    page = rendered(run)
    assert "\x07" not in page and "\x0c" not in page
    assert '<span class=" -Color -Color-Red">red</span>' in page  # code cell 1's colour, as myst-nb shows it


def sleeping(seconds: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if process.info["cmdline"] == ["sleep", seconds]:
            found.append(process)
    return found


def test_processes_a_page_leaves_running_are_reported_and_stopped(build_fixture):
    try:
        run = build_fixture("run_processes", "html", "--language", "en")
        assert run.returncode == 1, run.output
        warning(run.output, "en/index.md:", "code cell 1 left 2 processes running (sleep 41.25 / sleep 41.5): "
                "a page must wait for what it starts; it was stopped")
        assert sleeping("41.25") == [] and sleeping("41.5") == []
    finally:  # what an older build leaves running
        for process in sleeping("41.25") + sleeping("41.5"):
            process.kill()


def test_a_process_that_writes_after_its_page_gets_that_page_blamed(tmp_path):
    # The page that started it is reported; the page running when it would have written is not.
    # Every process of the build carries TMPDIR or, in a kernel, a folder inside it (each page's
    # own temporary folder, where the late writer writes).
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "run_late_write" / "docs", docs)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    late = temporary / "late.txt"
    run, _ = build(docs, tmp_path / "work", tmp_path / "cache", 300, TMPDIR=str(temporary))
    assert run.returncode == 1, run.output
    # The shell, and its sleep, unless the page ended before the shell had started it or while
    # its forked child was still a shell (a busy machine).
    shell = r'sh -c sleep 3; echo late > "\$TMPDIR/late\.txt"'
    found = [line for line in run.output.splitlines() if "WARNING" in line and "en/index.md:" in line and re.search(
        rf'code cell 1 left (2 processes|1 process) running \({shell}( / (sleep 3|{shell}))?\): '
        r'a page must wait for what it starts; it was stopped', line)]
    assert len(found) == 1, run.output
    assert "slow.md" not in "\n".join(line for line in run.output.splitlines() if "WARNING" in line)
    # Stopped: no process of the build is left to write (instead of waiting out its 3 s; a
    # SIGKILLed process may take a moment to go).
    deadline = time.monotonic() + 30
    while left := with_environment("TMPDIR", str(temporary)):
        assert time.monotonic() < deadline, left
        time.sleep(0.1)
    assert not list(temporary.rglob(late.name))


def with_environment(name: str, value: str) -> list[str]:
    """The command lines of the live processes whose environment sets ``name`` to ``value`` or
    to a path inside it."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and \
                    (process.environ().get(name, "") + "/").startswith(value + "/"):
                found.append(" ".join(process.cmdline()))
        except psutil.Error:  # gone meanwhile, or another user's
            pass
    return found


def test_a_page_that_writes_at_the_repository_root_is_blamed(tmp_path, monkeypatch):
    # The executor's own comparison, the guard where Linux has no Landlock: the kernel's
    # sandbox (kernel/sandbox.py, tests/test_kernel_sandbox.py) would refuse the write.
    monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")
    # The docs' repository is watched whole, not only some of its folders.
    repository = tmp_path / "book"
    shutil.copytree(FIXTURES / "run_repo_write" / "docs", repository / "docs")
    # A kernel sees nothing of the build's environment (execution/kernel_inputs.py): the page
    # is told where the repository is in its own code.
    page = repository / "docs" / "en" / "index.md"
    page.write_text(page.read_text(encoding="utf8").replace("REPOSITORY", repr(str(repository))), encoding="utf8")
    (repository / "README.md").write_text("# A book\n")
    (repository / "requirements.txt").write_text("torch\n")
    (repository / "results").mkdir()
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    run, _ = build(repository / "docs", tmp_path / "work", tmp_path / "cache", 300)
    assert run.returncode == 1, run.output
    warning(run.output, "en/index.md", "the book's sources changed while this page executed: "
            f"{repository}/README.md, {repository}/requirements.txt, {repository}/results/x.json; "
            "if a cell wrote there, restore them")
    assert "index.md" not in cached_pages(run.cache)


def test_what_myst_nb_writes_beside_the_site_is_not_blamed_on_pages_running_meanwhile(tmp_path):
    # The output folder inside the book's repository, nothing ignored: while parallel readers
    # run pages, myst-nb writes each page's notebook beside the site (html-work/jupyter_execute),
    # which is the build's, not the sources.
    repository = tmp_path / "book"
    pages = repository / "docs" / "en"
    pages.mkdir(parents=True)
    front = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"
    names = [f"page{n}" for n in range(1, 8)]
    (pages / "index.md").write_text(f"{front}# Pages\n\n```{{toctree}}\n" + "\n".join(names) + "\n```\n")
    for number, name in enumerate(names, 1):
        (pages / f"{name}.md").write_text(f"{front}# Page {number}\n\n```{{code-cell}} ipython3\n"
                                          f"import time\n\ntime.sleep(1)\nprint({number})\n```\n")
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    run, _ = build(repository / "docs", repository / "work", tmp_path / "cache", 300)
    assert run.returncode == 0, run.output
    assert (repository / "work" / "_build" / "cpu" / "html-work" / "jupyter_execute" / "page1.ipynb").is_file()


def run_page(page_runner: runner.PageRunner, source: str, page: str = "") -> tuple[str | None, str]:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    result = page_runner.execute(notebook, timeout=60, page=page)
    raised = [output for output in notebook.cells[0].outputs if output.output_type == "error"]
    assert not raised, raised  # the cell did what it was written to
    return result.error, result.detail


def two_page_book(tmp_path, monkeypatch, sandboxed: bool) -> tuple[runner.PageRunner, Path, Path]:
    """A repository watched as a build watches it, with its README, and the kernels' shared
    TMPDIR, for two pages run at once (parallel readers)."""
    if sandboxed and not runner.kernels_confined():
        pytest.skip("this Linux kernel has no Landlock")
    if not sandboxed:
        # Where Linux has no Landlock, any kernel could write into another page's log (attack 5,
        # case 3): no log is believed, and nobody is named.
        monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")
    repository = tmp_path / "book"
    repository.mkdir()
    readme = repository / "README.md"
    readme.write_text("# A book\n")
    # As the build starts kernels: from the startup file, which loads kernel/writes.py.
    monkeypatch.setenv("PYTHONSTARTUP", str(ROOT / "book_extensions" / "kernel" / "startup.py"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    # As the build makes it (PageRunner.for_build), watching the repository.
    logs = tmp_path / "writes"
    logs.mkdir()
    shared = tmp_path / "temporary"  # the kernels' TMPDIR, as a build's pages share it
    shared.mkdir()
    page_runner = runner.PageRunner(watched_sources=[repository], sources_root=repository, writes_logs=logs,
                                    temporary=shared)
    return page_runner, readme, shared


# A cell that waits (50 s at most) until a condition holds.
WAIT = "import time, pathlib\ndeadline = time.monotonic() + 50\nwhile not ({}) and time.monotonic() < deadline:\n" \
       "    time.sleep(0.05)\nassert {}, 'the other page never came'\n"


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unsandboxed"])
def test_of_two_pages_running_at_once_both_fail_and_the_writer_is_named(tmp_path, monkeypatch, sandboxed):
    # Parallel readers: page B's comparison sees what page A changed while B ran. A change of
    # mode is one the sandbox (kernel/sandbox.py) lets through: Landlock leaves it alone.
    page_runner, readme, shared = two_page_book(tmp_path, monkeypatch, sandboxed)
    # The overlap is made certain, not left to timing: A writes only once B runs (B's marker, in
    # the folder both may write), and B ends only once A's change is in A's log.
    running = shared / "b-running"
    seen = f"pathlib.Path({str(running)!r}).exists()"
    writer = WAIT.format(seen, seen) + f"import os\nos.chmod({str(readme)!r}, 0o600)"
    logged = f"any('README.md' in log.read_text() for log in pathlib.Path({str(page_runner.writes_logs)!r}).glob('*.log'))"
    waiter = f"open({str(running)!r}, 'w').close()\n" + WAIT.format(logged, logged)
    with ProcessPoolExecutor(2) as pool:
        wrote, waited = pool.map(run_page, [page_runner] * 2, [writer, waiter], ["a.md", "b.md"])
    assert running.exists() and oct(readme.stat().st_mode) == "0o100600"  # the pages ran as planned
    if sandboxed:
        assert wrote == ("SourcesChanged", "README.md (noted written by the kernel of this page)")
        assert waited == ("SourcesChanged", "README.md (noted written by the kernel of a.md)")
    else:
        assert wrote == waited == ("SourcesChanged", "README.md")


def test_another_pages_note_does_not_excuse_a_change_it_did_not_make(tmp_path, monkeypatch):
    """Attack 6, case 6: page A notes a write the sandbox refuses, and ends; then the README is
    edited while page B runs. A note is no proof of a change: B fails."""
    page_runner, readme, shared = two_page_book(tmp_path, monkeypatch, sandboxed=True)
    edited = shared / "edited"
    claimer = f"try:\n    open({str(readme)!r}, 'a')\nexcept PermissionError:\n    pass"
    waiter = WAIT.format(f"pathlib.Path({str(edited)!r}).exists()", f"pathlib.Path({str(edited)!r}).exists()")
    with ProcessPoolExecutor(2) as pool:
        waited = pool.submit(run_page, page_runner, waiter, "b.md")
        assert pool.submit(run_page, page_runner, claimer, "a.md").result() == (None, "")
        readme.write_text("# A book, edited while B ran\n")
        edited.touch()
        assert waited.result() == ("SourcesChanged", "README.md (noted written by the kernel of a.md)")
