"""The page executor: kernels that cannot collide, one cache shared safely, UTC dates."""

import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from books import FIXTURES, ROOT

from book_extensions.execution import runner

pytestmark = pytest.mark.fixture


def notebook(*sources: str):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def run_one(number: int) -> tuple[str | None, str]:
    nb = notebook(f"print({number} * 2)")
    result = runner.PageRunner().execute(nb, timeout=120)
    return result.error, nb.cells[0].outputs[0]["text"] if nb.cells[0].outputs else ""


def test_many_kernels_started_at_once_all_run():
    # On TCP, kernels pick free ports before binding them; started together, two can
    # pick the same one. On IPC sockets there are no ports to share.
    assert runner.IpcKernelManager().transport == "ipc"
    with ProcessPoolExecutor(8) as pool:
        results = list(pool.map(run_one, range(8)))
    assert results == [(None, f"{n * 2}\n") for n in range(8)]


@pytest.mark.unit
def test_the_output_method_checked_client_overrides_takes_what_it_was_written_against():
    # nbclient's public NotebookClient.output: CheckedClient.output calls it with these.
    import inspect

    from nbclient import NotebookClient

    assert list(inspect.signature(NotebookClient.output).parameters) == ["self", "outs", "msg", "display_id",
                                                                         "cell_index"]


@pytest.mark.unit
def test_the_kernel_start_checked_client_overrides_takes_what_it_was_written_against():
    # nbclient's public NotebookClient.async_start_new_kernel: CheckedClient's puts the book's
    # SIGINT and SIGTERM handlers in place, then calls it with the same keywords.
    import inspect

    from nbclient import NotebookClient

    assert list(inspect.signature(NotebookClient.async_start_new_kernel).parameters) == ["self", "kwargs"]


def test_ctrl_c_stops_a_page_as_an_interrupt_not_as_a_failure(monkeypatch):
    # The cell sends SIGINT to this process, as Ctrl-C would: the kernel is killed at once and
    # the page ends in KeyboardInterrupt, not in an error reported as the page's; the
    # handlers are gone once the page is. Unsandboxed: the sandbox lets a kernel signal only
    # its own processes (tests/test_kernel_sandbox.py), and a real Ctrl-C comes from the terminal.
    import signal

    monkeypatch.setenv("BOOK_KERNEL_SANDBOX", "off")

    nb = notebook("import os, signal, time\nos.kill(os.getppid(), signal.SIGINT)\ntime.sleep(60)", "print('never')")
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.PageRunner().execute(nb, timeout=120)
    assert time.monotonic() - started < 30
    assert nb.cells[1].outputs == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_dead_kernel_is_a_result_with_its_cell_and_exit_code():
    nb = notebook("print('first')", "import os\nos._exit(7)", "print('never')")
    result = runner.PageRunner().execute(nb, timeout=60)
    assert (result.error, result.cell, result.detail) == ("DeadKernelError", 1, "exit code 7")
    assert nb.cells[0].outputs[0]["text"] == "first\n"


@pytest.mark.unit
def test_each_page_runs_in_an_empty_scratch_folder_of_its_own():
    # The working folder is an input kernel_inputs.py neutralises: whatever the build's own
    # folder holds, a page starts in an empty one, and the next page does not see its files.
    page = "import os\nprint(os.listdir('.'), os.getcwd() != {cwd!r})\nopen('left.txt', 'w').write('x')"
    for _ in range(2):
        nb = notebook(page.format(cwd=os.getcwd()))
        assert runner.PageRunner().execute(nb, timeout=60).error is None
        assert nb.cells[0].outputs[0]["text"] == "[] True\n"


@pytest.mark.unit
def test_a_bare_runner_leaves_no_folder_behind(monkeypatch, tmp_path):
    # A bare runner (a tool's, a test's) stages the kernel package in the page's own scratch
    # folder: a folder removed only at exit stayed behind in pytest-xdist's workers.
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    nb = notebook("import book_extensions.kernel\nprint('ok')")
    assert runner.PageRunner().execute(nb, timeout=60).error is None
    assert nb.cells[0].outputs[0]["text"] == "ok\n"
    # The kernels' temporary folder goes with the runner (its client and callbacks hold it in a
    # reference cycle until the collector runs).
    import gc

    gc.collect()
    assert list(tmp_path.iterdir()) == []


def store_many(args: tuple[str, int]) -> int:
    cache_path, worker = args
    for n in range(6):
        nb = notebook(f"x = {worker * 6 + n}  # worker {worker}, notebook {n}")
        runner.store(cache_path, nb, f"/book/w{worker}-n{n}.md", 0.1)
    return worker


def test_parallel_readers_share_one_cache_without_losing_records(tmp_path):
    # jupyter-cache trims old records between two reads of its database: without the
    # lock, one writer could delete a record another writer had just added.
    from jupyter_cache import get_cache

    cache_path = str(tmp_path / "cache")
    get_cache(cache_path).list_cache_records()
    with ProcessPoolExecutor(4) as pool:
        list(pool.map(store_many, [(cache_path, w) for w in range(4)]))
    records = get_cache(cache_path).list_cache_records()
    assert sorted(r.uri for r in records) == sorted(f"/book/w{w}-n{n}.md" for w in range(4) for n in range(6))


@pytest.mark.parametrize("zone", ["America/New_York", "Pacific/Kiritimati"])
def test_cache_times_are_read_as_utc_in_every_time_zone(monkeypatch, zone):
    stored = datetime(2026, 1, 1, 0, 30)  # how jupyter-cache stores 00:30 UTC: no zone
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        assert runner.utc_timestamp(stored) == 1767227400.0
        assert stored.timestamp() != 1767227400.0  # reading it as local time would be wrong here
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_a_page_runs_under_a_temporary_folder_too_deep_for_a_socket_path(tmp_path):
    # zmq refused the kernel's socket ("File name too long") when TMPDIR was deep, as pytest's is.
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    result = subprocess.run(
        [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
         "--docs", str(FIXTURES / "driver_pages" / "docs"), "--out", str(tmp_path / "_build"),
         "--cache-root", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "TMPDIR": str(deep)})
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.unit
def test_each_build_has_a_page_executor_of_its_own(tmp_path, monkeypatch):
    from book_extensions.execution import runner
    from book_extensions.execution.runner import PageRunner
    from book_extensions.paths import ROOT

    logs = tmp_path / "doctrees" / "book-writes"
    logs.mkdir(parents=True)
    (logs / "book-page-old.log").write_text("an earlier build's line\n")
    build = PageRunner.for_build(ROOT, ROOT / "docs", [tmp_path / "out"], limit=10, logs=logs)
    assert (build.watched_sources, build.sources_root, build.output_limit) == ([ROOT], ROOT, 10)
    assert list(logs.iterdir()) == []  # an earlier build's writes are not this one's
    build.executed_notebooks["page.md"] = object()
    bare = PageRunner()  # a tool's, outside a build: nothing watched, no limit, nothing shared
    assert (bare.watched_sources, bare.writes_logs, bare.output_limit, bare.executed_notebooks) == ([], None, None, {})
    for name, page, noted in [("a", "a.md", f"{ROOT}/README.md\n{ROOT}/docs/x\n"), ("b", "b.md", f"{ROOT}/docs/x\n")]:
        (logs / f"book-page-{name}.log").write_text(noted)
        (logs / f"book-page-{name}.page").write_text(page)
    # Each page's kernel writes its own log alone (the sandbox), whatever a line of it says.
    monkeypatch.setattr(runner, "kernels_confined", lambda: True)
    assert build.writers("/tmp/book-page-b") == {"README.md": ["a.md"], "docs/x": ["a.md", "b.md"]}
    # Only what was noted while the page ran: a note made before it started names nobody.
    started = build.log_sizes()
    assert build.writers("/tmp/book-page-b", started) == {}
    with (logs / "book-page-a.log").open("a") as log:
        log.write(f"{ROOT}/LICENSE\n")
    assert build.writers("/tmp/book-page-b", started) == {"LICENSE": ["a.md"]}
    assert build.changed_detail(["LICENSE", "docs/x", "z"], build.writers("/tmp/book-page-b"), "b.md") == (
        "LICENSE (noted written by the kernel of a.md), docs/x (noted written by the kernel of a.md, this page), z")
    # Without the sandbox, a cell could write notes into another page's log (attack 5, case 3).
    monkeypatch.setattr(runner, "kernels_confined", lambda: False)
    assert build.writers("/tmp/book-page-b") == {}
    before, after = {f"{ROOT}/a": (1, 1), f"{ROOT}/c": (1, 1)}, {f"{ROOT}/a": (2, 1), f"{ROOT}/b": (1, 1)}
    assert build.changed_sources(before, after) == ["a", "b", "c"]


@pytest.mark.unit
def test_a_process_caught_in_exec_is_named_by_its_command_line_once_it_has_one(monkeypatch):
    # A busy machine: when the cell ended, the shell it started was in exec, its command line
    # empty, and the report said "sh"; by the time the page is stopped it reads whole.
    import psutil

    class Shell:
        pid = 4242
        lines = [[], ["sh", "-c", "sleep 3"], ["sleep", "3"]]

        def status(self):
            return psutil.STATUS_SLEEPING

        def cmdline(self):
            return self.lines.pop(0) if len(self.lines) > 1 else self.lines[0]

        def name(self):
            return "sh"

    shell = Shell()
    watched = runner.PageProcesses()
    monkeypatch.setattr(watched.this, "children", lambda recursive: [shell])
    watched.builds = set()
    watched.cell_ended(0)
    assert watched.started[shell] == (0, "sh")
    watched.running(1)  # read again: the command line it was started with, by the same cell
    assert watched.started[shell] == (0, "sh -c sleep 3")
    watched.running(2)  # a command line read whole stays, whatever the process runs next
    assert watched.started[shell] == (0, "sh -c sleep 3")


@pytest.mark.unit
def test_pages_share_a_temporary_folder_but_not_torch_compiles_caches(tmp_path):
    # Attack 5, case 1: one page edited the module inductor had cached in the shared TMPDIR, and
    # another page's compile of the same function loaded it (its wrong output was then cached).
    bare = runner.PageRunner()
    first, second = (tmp_path / "a", tmp_path / "b")
    first.mkdir()
    second.mkdir()
    one, other = bare.page_environment(str(first)), bare.page_environment(str(second))
    assert one["TMPDIR"] == other["TMPDIR"]
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        assert Path(one[name]).is_relative_to(first) and Path(other[name]).is_relative_to(second)


@pytest.mark.unit
def test_characters_that_reorder_or_hide_text_are_escaped_like_control_characters():
    # Attack 6, case 19a: U+202E made a page show "True" where the cell printed "eurT".
    from book_extensions.execution.runner import escape_control_characters

    output = {"output_type": "stream", "name": "stdout", "text": "\u202eeurT and\u200b \x07\n"}
    assert escape_control_characters(output) == "\u202e"
    assert output["text"] == "\\u202eeurT and\\u200b \\x07\n"
    plain = {"output_type": "stream", "name": "stdout", "text": "\x1b[31mred\x1b[0m 中文 é\n"}
    assert escape_control_characters(plain) is None


@pytest.mark.unit
def test_a_cached_notebook_that_cannot_be_read_is_dropped_and_the_page_run_again(monkeypatch):
    # Attack 6, case 4: Landlock leaves modes alone, and a cell set the cache's stored notebooks
    # to mode 000; the next build read them and Sphinx crashed on the PermissionError.
    import nbformat

    from book_extensions.execution import runner

    class Record:
        hashkey, data = "key", {}

    class Cache:
        def match_cache_notebook(self, code):
            return Record()

        def merge_match_into_notebook(self, code, nb_meta=None):
            raise PermissionError(13, "Permission denied")

    dropped = []
    monkeypatch.setattr(runner, "drop", lambda cache, key: dropped.append(key))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    assert runner.cached_notebook(Cache(), notebook) == (None, None, "its notebook is unreadable (PermissionError)")
    assert dropped == ["key"]
