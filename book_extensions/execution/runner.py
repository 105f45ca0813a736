"""Runs a page's cells in a fresh kernel, or takes its outputs from the execution cache.

This replaces myst-nb's client for ``nb_execution_mode = "cache"``
(``myst_nb.core.execute.cache.NotebookClientCache``), which

- starts kernels on TCP ports, picked before they are bound: kernels started at once
  by parallel readers can collide ("Address already in use") and abort the build;
- catches only cell errors and timeouts, so a kernel that dies crashes the build
  without naming the page;
- runs a page in its own source folder, where a cell can edit the book's sources;
- lets parallel readers write the cache at the same time: jupyter-cache trims old
  records between two reads of its database and can delete a record another reader
  has just added (``KeyError: Cache record not found``);
- dates a cached page with the record's UTC time read as local time;
- keeps all of a cell's output, however large, for the page to render (a 5 MB line
  takes minutes there), control characters included;
- lets a process a cell started outlive the page, and write the sources while another
  page runs.

Here kernels talk over IPC sockets (no ports), every page runs in an empty scratch
folder, which with the build's folder of temporary files is all its kernel may write
(:mod:`..kernel.sandbox`, where Linux has Landlock; ``BOOK_KERNEL_SANDBOX=off`` in the
build's environment turns it off, as the tests of the comparisons below do), failures are
reported with the page and cell, and every cache access holds one
lock per cache. Each output is judged as it arrives (:class:`CheckedClient`: a cell
over the output limit stops its page at once). The book's repository (every file git
does not ignore, and the docs) is compared before and after each page: every page that saw
a change fails with it, and the kernel notes what it writes (:mod:`..kernel.writes`), so that
of pages running at once the message names the one that wrote. The processes a page leaves
running are stopped and reported.

jupyter-cache also commits a record before it writes the record's notebook, and crashes
on a record whose notebook is missing (``KeyError``) or truncated (``NotJSONError``).
Here a failed write (a full disk) is rolled back and reported with the page, a stored
notebook is read back before it counts, and a damaged record found later is dropped and
its page executed again.

Records are keyed on each cell's code without its comments and docstrings
(:mod:`.code_comments`), and hold that code: a page whose comments are in another
language is the same execution, and gets its outputs under its own source.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable
from contextlib import nullcontext, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from stat import S_ISREG

import psutil
from filelock import FileLock
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.cache.db import NbCacheRecord
from jupyter_client.manager import AsyncKernelManager
from myst_nb.core.execute.base import NotebookClientBase
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import ValidationError
from traitlets import Integer, default

from ..kernel import sandbox
from ..paths import content_digest, shown
from . import kernel_inputs, running_cells
from .cache_key import CACHE_LOCK
from .cell_checks import cell_line, output_size, too_much_output
from .code_comments import code_of
from .processes import adopt_orphans, command_line, stop

# A control character other than \t, \n, \r, unless it starts an ANSI colour (SGR) sequence,
# which myst-nb renders as colour. Browsers show the rest as nothing, or as a box. So too the
# format characters that reorder or hide text (bidirectional overrides and isolates, zero-width
# marks, the byte-order mark): a page would show other text than the cell printed (attack 6, 19a).
CONTROL_CHARACTER = re.compile(r"(?!\x1b\[[0-9;]*m)[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
                               r"\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def escape(character: str) -> str:
    """A character as Python writes it in a string: \\x07, \\u202e."""
    return f"\\x{ord(character):02x}" if ord(character) < 0x100 else f"\\u{ord(character):04x}"


class IpcKernelManager(AsyncKernelManager):
    """A kernel on IPC sockets, which cannot collide, started through :mod:`..kernel.sandbox`
    (it may write only in ``writable``) unless ``writable`` is None."""

    writable: list[str] | None = None

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc"

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        if self.writable is None:
            return command
        return sandbox.wrapped(command[0], self.writable, command)


def remove_folder_of(folder: Path, owner: int) -> None:
    """Remove ``folder`` if this is the process ``owner`` that made it."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


# Beside each page's log of writes: the page's name, for messages (written by the runner, not the kernel).
PAGE_NAME_SUFFIX = ".page"

# In a build's doctrees: its kernels' TMPDIR.
KERNEL_TEMPORARY_FOLDER = "book-kernel-tmp"


def kernels_confined() -> bool:
    """Whether kernels run in the sandbox (kernel/sandbox.py): Linux has Landlock, and it is not turned off."""
    return not sandbox.turned_off() and sandbox_abi() > 0


@functools.cache
def sandbox_abi() -> int:
    return sandbox.abi()


def escape_control_characters(output) -> str | None:
    r"""Write an output's control characters as ``\xNN``, in place; the first one, or None."""
    first = None

    def escaped(text: str) -> str:
        nonlocal first
        found = CONTROL_CHARACTER.search(text)
        if found is None:
            return text
        first = first or found.group()
        return CONTROL_CHARACTER.sub(lambda m: escape(m.group()), text)

    for key in ("text", "evalue"):
        if isinstance(output.get(key), str):
            output[key] = escaped(output[key])
    if "traceback" in output:
        output["traceback"] = [escaped(line) for line in output["traceback"]]
    for mime, value in output.get("data", {}).items():
        if isinstance(value, str):
            output["data"][mime] = escaped(value)
    return first


class PageStopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the page (:meth:`CheckedClient.stop`); ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class CheckedClient(NotebookClient):
    r"""nbclient's client, judging each output as it arrives rather than after the page.

    A cell that shows more than ``output_limit`` characters stops the page at once (its
    kernel is killed) and keeps nothing past the limit, so a flood of output is never
    cached or rendered (myst-nb's handling of carriage returns takes minutes on one long
    line). A control character is kept escaped (``\x07``) and refused.
    """

    output_limit = Integer(None, allow_none=True, help="the most characters a code cell may show")

    # The kernel's process, found when the notebook starts (:meth:`kernel_started`).
    kernel: psutil.Process | None = None
    # A dead kernel's exit code, read when nbclient reports the error (:meth:`kernel_failed`).
    kernel_exit_code: int | None = None
    # The signal (SIGINT or SIGTERM) that stopped the page, if one did (:meth:`stop`).
    stopped_by: int | None = None

    async def async_start_new_kernel(self, **kwargs) -> None:
        """Start the kernel, the book's handlers of SIGINT and SIGTERM in place.

        They replace nbclient's, which it adds just before (and removes, with these, when the
        page ends): nbclient's shut the kernel down and turn the interrupt into an ordinary
        error, which would report an interrupted page as a failing one.
        """
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with suppress(NotImplementedError, RuntimeError):  # no signals here (Windows, another thread)
                loop.add_signal_handler(signum, self.stop, signum)
        await super().async_start_new_kernel(**kwargs)

    def stop(self, signum: int) -> None:
        """Ctrl-C or SIGTERM: the page ends here (its kernel killed; once it has started,
        if it is starting) and the build stops (:meth:`PageRunner.execute`)."""
        self.stopped_by = signum
        self.kill_kernel()

    def kernel_started(self) -> psutil.Process | None:
        """The notebook starts (nbclient's on_notebook_start): the kernel's process is this
        process's child whose command line names the kernel's connection file (every kernel
        spec passes it); it is killed if the page was stopped while it started."""
        self.kernel = None
        for child in psutil.Process().children():
            with suppress(psutil.Error):  # one that ended meanwhile
                if self.km.connection_file in child.cmdline():
                    self.kernel = child
                    break
        if self.stopped_by is not None:
            # nbclient waits for the kernel's first reply next, checking whether it lives
            # at this interval (5 s): notice it dead within a second.
            self.shell_timeout_interval = 1
            self.kill_kernel()
        return self.kernel

    def kill_kernel(self) -> None:
        if self.kernel is not None:
            with suppress(psutil.Error):  # gone already
                self.kernel.kill()

    async def kernel_failed(self, notebook) -> None:
        """nbclient's on_notebook_error (a dead kernel, among others), which comes before it
        cleans up after the kernel: the provisioner still has the kernel's exit code."""
        with suppress(Exception):  # no exit code to report is reported as unknown
            self.kernel_exit_code = await self.km.provisioner.poll()

    def reset_execution_trackers(self) -> None:
        super().reset_execution_trackers()
        self.over_limit: tuple[int, int] | None = None  # (cell index, characters shown)
        self.control_character: tuple[int, str] | None = None  # (cell index, the character)
        self._shown: dict[int, tuple[int, int]] = {}  # cell index -> (outputs, characters)

    def output(self, outs, msg, display_id, cell_index):
        if self.over_limit is not None:  # the page is being stopped: keep nothing more
            return None
        out = super().output(outs, msg, display_id, cell_index)
        if out is None:
            return None
        character = escape_control_characters(out)
        if character and self.control_character is None:
            self.control_character = (cell_index, character)
        if self.output_limit is not None:
            count, size = self._shown.get(cell_index, (0, 0))
            # Counted as outputs arrive; recounted when the cell cleared its outputs.
            size = size + output_size({"outputs": [out]}) if count == len(outs) - 1 else output_size({"outputs": outs})
            self._shown[cell_index] = (len(outs), size)
            if size > self.output_limit:
                outs.remove(out)
                self.over_limit = (cell_index, size)
                self.kill_kernel()
                return None
        return out

    def refusal(self) -> tuple[int, str] | None:
        """(cell index, one-line reason) of the output this client refused, if any."""
        if self.over_limit is not None:
            index, size = self.over_limit
            return index, too_much_output(code_cell(self.nb, index), size, self.output_limit)
        if self.control_character is not None:
            index, character = self.control_character
            return index, (f"{code_cell(self.nb, index)} shows the control character "
                           f"{escape(character)}, which a page cannot show; leave it out "
                           "or print its repr()")
        return None


def code_cell_number(notebook, index: int) -> int:
    """The number of ``notebook.cells[index]`` among the notebook's code cells, from 1."""
    return sum(cell.cell_type == "code" for cell in notebook.cells[: index + 1])


def code_cell(notebook, index: int) -> str:
    """How messages name ``notebook.cells[index]``: "code cell 2"."""
    return f"code cell {code_cell_number(notebook, index)}"


@dataclass
class Execution:
    seconds: float
    # "CellTimeoutError", "DeadKernelError", "SourcesChanged", ..., or "PageProblem":
    # then ``detail`` is the whole one-line reason, naming the cell.
    error: str | None = None
    cell: int | None = None  # index in notebook.cells of the cell that was running
    detail: str = ""
    # What the kernel read outside the keyed folders (kernel/reads.py): path -> digest
    # (paths.content_digest), as it was when the page ended.
    reads: dict[str, str | None] = field(default_factory=dict)


def repository(folder: Path) -> Path:
    """The top of the git work tree ``folder`` is in; ``folder`` itself outside one."""
    with suppress(OSError):
        top = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True)
        if top.returncode == 0:
            return Path(top.stdout.strip())
    return folder


def watched_files(root: Path) -> list[str]:
    """Every file under ``root`` that git does not ignore; outside a git work tree, every
    file but those in hidden folders, ``__pycache__`` and ``_build``."""
    with suppress(OSError):
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                                  "--exclude-standard"], capture_output=True)
        if listing.returncode == 0:
            return [os.path.join(root, os.fsdecode(name)) for name in listing.stdout.split(b"\0") if name]
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in ("__pycache__", "_build")]
        files += [os.path.join(folder, name) for name in names]
    return files


class PageProcesses:
    """The processes a page's cells start: this process's descendants, but its kernel.

    ipykernel ends the processes of its own process group when it shuts down, silently;
    one in a group or session of its own, or one whose kernel died, runs on (and may write
    the sources while another page runs). So the processes still running when a cell ends
    are noted, those left when the kernel is gone are stopped, and both are reported.
    """

    def __init__(self) -> None:
        adopt_orphans()
        self.this = psutil.Process()
        self.builds = set(self.this.children(recursive=True))  # the build's own, not the page's
        self.kernel_pid: int | None = None
        self.started: dict[psutil.Process, tuple[int, str]] = {}  # -> (cell index, command line)
        self.unnamed: set[psutil.Process] = set()  # noted by name only, for now
        self.after_cell: set[psutil.Process] = set()  # running when the latest cell ended

    def running(self, cell_index: int) -> set[psutil.Process]:
        """The page's processes running now; new ones are noted as started by the cell."""
        found = set()
        for process in set(self.this.children(recursive=True)) - self.builds:
            with suppress(psutil.Error):  # ended meanwhile
                if process.pid != self.kernel_pid and process.status() != psutil.STATUS_ZOMBIE:
                    command = command_line(process.cmdline())
                    if process not in self.started:
                        self.started[process] = (cell_index, command or process.name())
                        if not command:  # caught in exec, its command line not yet readable
                            self.unnamed.add(process)
                    elif process in self.unnamed and command:  # the cell that started it stays
                        self.started[process] = (self.started[process][0], command)
                        self.unnamed.discard(process)
                    found.add(process)
        return found

    def cell_ended(self, cell_index: int) -> None:
        self.after_cell = self.running(cell_index)

    def stop_the_rest(self, cell_index: int) -> list[tuple[int, str]]:
        """Once the kernel is gone: stop what still runs. (cell index, command line) of every
        process the page left running, earliest cell first."""
        left = self.after_cell | self.running(cell_index)
        stop(set(self.this.children(recursive=True)) - self.builds)
        return sorted(self.started[process] for process in left)


def kernel_refused(notebook) -> Execution | None:
    """A page whose front matter names another kernel spec: only the book's is checked and
    keyed (cache_key.check_kernel, kernel_inputs)."""
    kernel_name = notebook.metadata.get("kernelspec", {}).get("name", kernel_inputs.KERNEL_NAME)
    if kernel_name == kernel_inputs.KERNEL_NAME:
        return None
    return Execution(0.0, error="PageProblem", detail=(
        f"the page's front matter names the kernel spec {kernel_name!r}: every page runs the "
        f"book's kernel {kernel_inputs.KERNEL_NAME!r}, the one the execution cache is keyed by; "
        f"name that one (kernelspec: name: {kernel_inputs.KERNEL_NAME})"))


def run_kernel(client, environment: dict[str, str], kernel_log: Path) -> Execution:
    """Run the page's cells; how it ended, as an Execution (no time yet). The kernel's own
    messages (not the cells' output, which arrives as messages) go to ``kernel_log``: its last
    line says why a dead kernel died."""
    result = Execution(0.0)
    try:
        with kernel_log.open("w") as log:
            client.execute(stdout=log, stderr=log, env=environment)
    except CellTimeoutError:
        result.error = "CellTimeoutError"
    except DeadKernelError:
        code = client.kernel_exit_code
        result.error = "DeadKernelError"
        result.detail = f"exit code {code}" if code is not None else "exit code unknown"
        last = [line for line in kernel_log.read_text(errors="replace").splitlines() if line.strip()]
        if last:
            result.detail += f": {last[-1].strip()}"
    except Exception as error:  # noqa: BLE001 - reported with the page, never a crash
        result.error = type(error).__name__
        result.detail = (str(error).strip().splitlines() or [""])[0]
    return result


@dataclass
class PageRunner:
    """The page executor of one build: runs its pages and keeps what they left.

    Made by the build before pages are read (:meth:`for_build`), so before parallel readers
    fork: each then has its own copy, and its own executed notebooks. What it holds: the
    folders whose files a page must not change (the book's repository, its docs), the folder
    they are named from in messages, the folders in them the build itself writes (output,
    cache), the log in which kernels note what they write (kernel/writes.py), the most
    characters a code cell may show (None: no limit), and the executed notebook of each page
    read in this process, for the checks that follow. Made bare, it watches nothing and
    limits nothing (a tool that executes pages outside a build: ``releases record``).
    """

    watched_sources: list[Path] = field(default_factory=list)
    sources_root: Path = Path(".")
    unwatched: list[Path] = field(default_factory=list)
    # One log a page in it, which only that page's kernel may write (the sandbox): what it wrote
    # there (kernel/writes.py). None: nothing noted.
    writes_logs: Path | None = None
    # The build's doctrees, where this process notes the cell it runs (running_cells); None: nowhere.
    doctrees: Path | None = None
    output_limit: int | None = None
    executed_notebooks: dict[str, object] = field(default_factory=dict, repr=False)
    # The execution record (PageClient.exec_metadata) of each page read in this process.
    executions: dict[str, dict] = field(default_factory=dict, repr=False)
    # What each page's kernel read outside the keyed folders (Execution.reads), for the
    # page's dependencies (changed_pages.note_dependencies).
    reads: dict[str, dict[str, str | None]] = field(default_factory=dict, repr=False)
    # A page's kernel's whole environment, given the empty home made for the page
    # (page_execution.prepare_kernels); None: the CPU's, with the kernel package staged in
    # each page's scratch folder.
    kernel_environment: Callable[[Path], dict[str, str]] | None = field(default=None, repr=False)
    # myst-nb's settings as the build has them (FIXED_PAGE_SETTINGS, without "nb_"); a page whose
    # own configuration differs is refused (install_client). Empty: nothing compared.
    fixed_settings: dict[str, object] = field(default_factory=dict)
    temporary: Path | None = None  # the kernels' TMPDIR (temporary_folder)

    @classmethod
    def for_build(cls, confdir: Path, docs: Path, build_folders: list[Path], limit: int, logs: Path,
                  kernel_environment: Callable[[Path], dict[str, str]] | None = None) -> PageRunner:
        """Before pages are read: watch the repository of ``confdir`` and that of ``docs`` (one
        and the same, unless the docs are elsewhere) but the folders the build writes itself;
        kernels note what they write in the folder ``logs``, in the build's doctrees; a cell may
        show ``limit`` characters."""
        shutil.rmtree(logs, ignore_errors=True)  # an earlier build's writes are not this one's
        logs.mkdir(parents=True)
        running_cells.forget_all(logs.parent)
        made = cls(watched_sources=sorted({repository(confdir), repository(docs)}), sources_root=confdir,
                   unwatched=build_folders, writes_logs=logs, doctrees=logs.parent, output_limit=limit,
                   kernel_environment=kernel_environment)
        # The kernels' temporary folder: in the doctrees, emptied by each build, shared by its
        # parallel readers; the sandbox lets kernels write there and nowhere else of the build's.
        made.temporary = logs.parent / KERNEL_TEMPORARY_FOLDER
        shutil.rmtree(made.temporary, ignore_errors=True)
        made.temporary.mkdir()
        return made

    def temporary_folder(self) -> Path:
        """The kernels' temporary folder (their TMPDIR), shared by the pages: a build's is in its
        doctrees (:meth:`for_build`); any other runner's is made in the temporary folder when first
        asked for, and removed with the runner. Not one per page: torch 2.7.1's kernels then hung in
        a forked worker (a DDP example), which a folder shared by the pages does not."""
        if self.temporary is None:
            self.temporary = Path(tempfile.mkdtemp(prefix="book-kernels-"))
            # When this runner goes, or at exit; never by a parallel reader forked from this process.
            weakref.finalize(self, remove_folder_of, self.temporary, os.getpid())
        return self.temporary

    def source_state(self) -> dict[str, tuple[int, int, int, int]]:
        """(mtime, size, ctime, inode) of every watched file but those the build writes itself.
        The change time too: a write that keeps the size, followed by `touch -r` to put the
        modification time back, still moves it (a subprocess's writes are seen by this alone)."""
        skipped = tuple(os.path.join(folder, "") for folder in self.unwatched)
        state = {}
        for root in self.watched_sources:
            for path in watched_files(root):
                if path.startswith(skipped):
                    continue
                try:
                    stat = os.stat(path)
                except OSError:  # deleted, but still tracked; an editor's swap file; a dangling link
                    continue
                if S_ISREG(stat.st_mode):
                    state[path] = (stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns, stat.st_ino)
        return state

    def changed_sources(self, before: dict, after: dict) -> list[str]:
        """What changed, named from ``sources_root``."""
        changed = [p for p in after if before.get(p) != after[p]] + [p for p in before if p not in after]
        return sorted(self.relative(p) for p in changed)

    def relative(self, path: str) -> str:
        with suppress(ValueError):
            return Path(path).relative_to(self.sources_root).as_posix()
        return path

    def page_log(self, scratch: str) -> Path | None:
        """Where the kernel of the page run in ``scratch`` notes what it writes."""
        return None if self.writes_logs is None else self.writes_logs / f"{Path(scratch).name}.log"

    def log_sizes(self) -> dict[Path, int]:
        """How long each page's log of writes is now (as this page starts)."""
        sizes = {}
        for log in self.writes_logs.glob("*.log") if self.writes_logs is not None else ():
            with suppress(OSError):
                sizes[log] = log.stat().st_size
        return sizes

    def writers(self, scratch: str, since: dict[Path, int] | None = None) -> dict[str, list[str]]:
        """Each path the kernels noted writing (kernel/writes.py) while the page of ``scratch``
        ran (their logs past ``since``, their sizes as it started): the pages that noted it,
        this one included. Only to name them: a change is never excused by another page's note,
        since a note is no proof of a change (a write the sandbox refused is noted too), and a
        change an editor made while another page noted the same file would pass (attack 6,
        case 6). Believed only where each kernel can write its own log alone (the sandbox):
        elsewhere a cell could write a note into another page's log (attack 5, case 3)."""
        if self.writes_logs is None or not kernels_confined():
            return {}
        since = since or {}
        found: dict[str, list[str]] = {}
        for log in sorted(self.writes_logs.glob("*.log")):
            with suppress(OSError), log.open("rb") as file:
                file.seek(since.get(log, 0))
                lines = file.read().decode("utf8", errors="surrogateescape").splitlines()
                page = log.with_suffix(PAGE_NAME_SUFFIX).read_text(encoding="utf8")
                for path in dict.fromkeys(lines):
                    found.setdefault(self.relative(path), []).append(page)
        return found

    def changed_detail(self, changed: list[str], writers: dict[str, list[str]], page: str) -> str:
        """The changed files (five at most), each with the pages whose kernels noted writing it."""
        def named(path: str) -> str:
            pages = writers.get(path)
            if not pages:
                return path
            return f"{path} (noted written by the kernel of {', '.join('this page' if p == page else p for p in pages)})"
        return ", ".join(map(named, changed[:5])) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")

    def execute(self, notebook, timeout: int | None, page: str = "") -> Execution:
        """Run every cell, errors included, in an empty scratch folder; the notebook gets the outputs.

        While a cell runs, the build's doctrees note it (:mod:`.running_cells`), naming ``page``.

        A page must not change the watched files, and must wait for the processes it starts:
        those still running when it ends are stopped and reported.
        """
        refused = kernel_refused(notebook)
        if refused is not None:
            return refused
        running: dict[str, int] = {}
        processes = PageProcesses()

        def on_cell_start(cell, cell_index: int) -> None:
            if cell.cell_type == "code":  # nbclient calls this for Markdown cells too
                running["cell"] = cell_index
                if self.doctrees is not None:
                    running_cells.note(self.doctrees, page, code_cell_number(notebook, cell_index),
                                       cell_line(notebook, cell_index))

        def on_cell_executed(cell, cell_index: int, execute_reply) -> None:
            processes.cell_ended(cell_index)

        def on_notebook_start(notebook) -> None:
            kernel = client.kernel_started()
            processes.kernel_pid = kernel.pid if kernel is not None else None

        async def on_notebook_error(notebook) -> None:
            await client.kernel_failed(notebook)

        before, noted = self.source_state(), self.log_sizes()
        started, started_ns = time.perf_counter(), time.time_ns()
        # A cell may leave a process writing in its folder: cleaning up must not fail the build.
        with (tempfile.TemporaryDirectory(prefix="book-page-", ignore_cleanup_errors=True) as scratch,
              socket_parent(scratch) as parent):
            # The sockets live beside the page's working folder, named by absolute path:
            # a relative one would resolve differently in the kernel and in this process.
            sockets = Path(parent, "sockets")
            work = Path(scratch, "work")
            sockets.mkdir()
            work.mkdir()
            log = self.page_log(scratch)
            if log is not None:  # made here: the sandbox lets the kernel write it, not make it or its page's name
                log.with_suffix(PAGE_NAME_SUFFIX).write_text(page or "?", encoding="utf8")
                log.touch()
            manager = IpcKernelManager(kernel_name=kernel_inputs.KERNEL_NAME, ip=str(sockets / "kernel"))
            if not sandbox.turned_off():
                # Its own folders, the terminal devices and shared memory, and the log of writes.
                manager.writable = [scratch, parent, str(self.temporary_folder()), "/dev",
                                    *([str(log)] if log is not None else [])]
            client = CheckedClient(
                notebook,
                km=manager,
                timeout=timeout,
                allow_errors=True,
                record_timing=False,
                on_notebook_start=on_notebook_start,
                on_notebook_error=on_notebook_error,
                on_cell_start=on_cell_start,
                on_cell_executed=on_cell_executed,
                resources={"metadata": {"path": str(work)}},
                output_limit=self.output_limit,
                # nbclient skips a cell tagged "skip-execution"; every cell of the book runs (a tag
                # no cell can carry: YAML cannot hold a NUL), and cell_checks refuses the tag.
                skip_cells_with_tag="\0",
            )
            client.owns_km = True  # so that nbclient shuts the kernel down when the page is done
            try:
                result = run_kernel(client, self.page_environment(scratch, parent), Path(scratch, "kernel.log"))
            finally:
                # Before the sources are compared: a process left running cannot write later,
                # when another page would be blamed.
                left = processes.stop_the_rest(running.get("cell", 0))
            result.reads = kernel_reads(Path(scratch, READS_LOG), started_ns)
        if client.stopped_by is not None:
            # Ctrl-C or SIGTERM killed the kernel (CheckedClient.stop): however the page
            # ended, it did not fail; the build stops.
            # A signal that reached this process but not the build driver came from a cell:
            # the note of the running cell stays for the driver to name (running_cells).
            raise PageStopped(client.stopped_by)
        if self.doctrees is not None:
            running_cells.done(self.doctrees)
        result.seconds = time.perf_counter() - started
        result.cell = running.get("cell") if result.error else None
        self.judge(result, notebook, client.refusal(), left)
        # Every page that saw a change fails with it, whichever page made it: a kernel in the
        # sandbox can change a watched file's mode or times (Landlock leaves those alone), and
        # parallel readers see each other's changes; the notes name who wrote.
        changed = self.changed_sources(before, self.source_state())
        if changed and not result.error:
            result.error = "SourcesChanged"
            result.detail = self.changed_detail(changed, self.writers(scratch, noted), page)
        return result

    def page_environment(self, scratch: str, sockets: str | None = None) -> dict[str, str]:
        """The kernel's environment variables: never the build's (kernel_inputs lists them).
        ``sockets``: the folder of the page's kernel sockets, if not ``scratch``."""
        if self.kernel_environment is None:  # a bare runner's: the package lives and goes with the page
            package = kernel_inputs.staged_kernel_package(Path(scratch, "kernel-package"))
            environment = kernel_inputs.kernel_environment("cpu", Path(scratch, "home"), package=package)
        else:
            environment = self.kernel_environment(Path(scratch, "home"))
        # Temporary files in a folder of the build's own, which a sandboxed kernel may write: a
        # distributed run's files. torch.compile's caches (inductor's, triton's) are the page's own:
        # in the shared folder, one page's cell could edit the code another page's compile loads,
        # and that page's outputs would be cached (attack 5, case 1).
        environment["TMPDIR"] = str(self.temporary_folder())
        environment["TORCHINDUCTOR_CACHE_DIR"] = str(Path(scratch, "inductor"))
        environment["TRITON_CACHE_DIR"] = str(Path(scratch, "triton"))
        # Read by kernel/reads.py: what the page may read without it being noted, besides
        # the kernel's Python, its PYTHONPATH and the system's folders.
        environment["BOOK_READS_LOG"] = str(Path(scratch, READS_LOG))
        environment["BOOK_KNOWN_ROOTS"] = os.pathsep.join(
            dict.fromkeys([scratch, sockets or scratch, str(self.temporary_folder())]))
        if self.writes_logs is not None:  # read by kernel/writes.py
            environment.update(BOOK_WRITES_LOG=str(self.page_log(scratch)),
                               BOOK_WATCHED_ROOTS=os.pathsep.join(map(str, self.watched_sources)))
        return environment

    @staticmethod
    def judge(result: Execution, notebook, refusal: tuple[int, str] | None, left: list) -> None:
        """What the page did besides raising: a refusal of the client (which killed the kernel,
        so the kernel's death is not the cause to report), processes it left running."""
        if refusal is not None:
            result.error = "PageProblem"
            result.cell, result.detail = refusal
        if left and not result.error:
            result.error = "PageProblem"
            result.cell = left[0][0]
            shown = " / ".join(name[:60] for _, name in left[:3]) + (" / …" if len(left) > 3 else "")
            count = "a process" if len(left) == 1 else f"{len(left)} processes"
            result.detail = (f"{code_cell(notebook, result.cell)} left {count} running ({shown}): "
                             "a page must wait for what it starts; it was stopped")

    def reading(self, source: Path | str) -> None:
        """The build of this runner parses the page ``source`` now, in this thread: myst-nb's
        client for it is PageClient with this runner (:func:`install_client`). Called when
        Sphinx has read the page's source, just before it parses it; :func:`done_reading`
        when the page is parsed."""
        READING.set((self, str(source)))


# The page executor of the build that is parsing a page in this thread, and that page's source
# (PageRunner.reading). Parallel readers are processes, each with its own copy.
READING: ContextVar[tuple[PageRunner, str] | None] = ContextVar("book_page_reading", default=None)


def done_reading() -> None:
    """The page being parsed is parsed: no page of a book's build is being parsed in this thread."""
    READING.set(None)


# myst-nb's settings a page could set for itself in its metadata (under nb_metadata_key), each
# changing how it executes or what it shows: the book's are the same for every page.
FIXED_PAGE_SETTINGS = ("execution_mode", "execution_timeout", "execution_allow_errors", "execution_raise_on_error",
                       "execution_excludepatterns", "remove_code_source", "remove_code_outputs", "output_stderr",
                       "merge_streams", "execution_in_temp", "execution_cache_path",
                       # where cells keep their own settings, which cell_checks reads
                       "cell_metadata_key")


def page_setting_changes(nb_config, fixed: dict[str, object]) -> list[str]:
    """The settings a page's own configuration changes from the build's."""
    return [f"{name}={getattr(nb_config, name, None)!r}" for name, value in fixed.items()
            if getattr(nb_config, name, None) != value]


def install_client() -> None:
    """Make myst-nb create PageClient for a page that a book's build is parsing, with that build's
    runner (:meth:`PageRunner.reading`), whatever the page's own configuration (which is compared
    with the build's: :data:`FIXED_PAGE_SETTINGS`); its own client otherwise.

    myst-nb calls ``create_client``, an attribute of its module, so the replacement is one per
    process (installed once, whichever build comes first); each call finds the build it serves
    from the page being parsed in this thread, so two builds in one process never share a runner,
    and a Sphinx application without the book's extensions gets myst-nb's client.
    """
    import myst_nb.sphinx_ as myst_nb_sphinx

    if getattr(myst_nb_sphinx.create_client, "book_dispatch", False):
        return
    original = myst_nb_sphinx.create_client

    def create_client(notebook, source, nb_config, logger, read_fmt=None):
        noted = READING.get()
        if noted is None or noted[1] != str(source):
            return original(notebook, source, nb_config, logger, read_fmt)
        # A page of the book: through its build's runner, whatever the page's metadata says,
        # and a page that changes how it runs or shows its outputs fails the build.
        changed = page_setting_changes(nb_config, noted[0].fixed_settings)
        if changed:
            logger.warning(f"the page's metadata changes {', '.join(changed)}: a page cannot change how it "
                           "executes or what it shows; remove it")
        path = Path(source) if Path(source).is_file() else None
        return PageClient(notebook, path, nb_config, logger, runner=noted[0])

    create_client.book_dispatch = True
    myst_nb_sphinx.create_client = create_client


def cache_lock(cache_path: str) -> FileLock:
    """Held for every read or write of one cache's database, across parallel readers."""
    return FileLock(os.path.join(cache_path, CACHE_LOCK))


# A Unix socket's path holds at most 107 bytes; zmq names a kernel's sockets
# <folder>/sockets/kernel-<port>.
SOCKET_PATH_ROOM = 107 - len("/sockets/kernel-65535")


def socket_parent(scratch: str):
    """Where a page's kernel sockets go: beside its working folder, or in a folder of /tmp of
    their own when TMPDIR is too deep for a socket's path (zmq: "File name too long")."""
    if len(os.fsencode(scratch)) <= SOCKET_PATH_ROOM:
        return nullcontext(scratch)
    return tempfile.TemporaryDirectory(prefix="book-", dir="/tmp", ignore_cleanup_errors=True)


class CacheWriteError(Exception):
    """A page's outputs could not be stored; the message says where and why, in one line."""


def notebook_folder(cache, hashkey: str) -> Path:
    """Where jupyter-cache keeps the notebook (and artifacts) of the record ``hashkey``."""
    return cache._get_notebook_path_cache(hashkey).parent


def drop(cache, hashkey: str) -> None:
    """Remove the record ``hashkey`` and its folder, whichever of the two exists."""
    with suppress(KeyError):
        NbCacheRecord.remove_records([NbCacheRecord.record_from_hashkey(hashkey, cache.db).pk], cache.db)
    shutil.rmtree(notebook_folder(cache, hashkey), ignore_errors=True)


# In a page's scratch folder: the paths its kernel read outside the keyed folders (kernel/reads.py).
READS_LOG = "book-reads.log"


# A read's digest when its file changed while the page ran: no content has it, so the next
# build executes the page again.
CHANGED_WHILE_RUNNING = "changed while the page ran"


def kernel_reads(log: Path, since_ns: int) -> dict[str, str | None]:
    """Each path the kernel noted in ``log`` (kernel/reads.py) and its content's digest now, or
    :data:`CHANGED_WHILE_RUNNING` for one changed since ``since_ns`` (time.time_ns() when the
    page started): its outputs may hold what it read before.

    Changed means its status change time (ctime), which the file system stamps on every write
    and which no program can set: a modification time can be in the future (a tar from a machine
    whose clock was ahead), which executed the page again at every build (attack 12, case 26)."""
    try:
        paths = log.read_bytes().decode(errors="surrogateescape").split("\0")
    except OSError:
        return {}
    found = {}
    for path in sorted({p for p in paths if os.path.isabs(p)}):  # the log is in the page's folder
        with suppress(OSError):
            status = os.stat(path)
            if status.st_ctime_ns >= since_ns:
                found[path] = CHANGED_WHILE_RUNNING
                continue
        found[path] = content_digest(path)
    return found


def changed_reads(reads: dict) -> list[str]:
    """The paths of ``reads`` (a record's) whose content differs now."""
    return [path for path, digest in reads.items() if content_digest(path) != digest]


def keyed(notebook):
    """A copy of ``notebook`` whose code cells hold their code only: what the cache keys and stores."""
    copied = copy.deepcopy(notebook)
    for cell in copied.cells:
        if cell.cell_type == "code":
            cell.source = code_of(cell.source)
            # Which file a program was loaded from is each language's own (examples/zh/…);
            # the code it put in the cell is what ran.
            cell.metadata.pop("load", None)
    return copied


def store(cache_path: str, notebook, uri: str, seconds: float, reads: dict | None = None) -> None:
    """Add an executed notebook to the cache, replacing an older execution of the same code;
    ``reads``: what its kernel read outside the keyed folders (:attr:`Execution.reads`).

    Nothing half-written stays: if writing fails, or the notebook does not read back, the
    record and its folder are removed again and CacheWriteError says why.
    """
    cache = get_cache(cache_path)
    notebook = keyed(notebook)
    _, hashkey = cache.create_hashed_notebook(notebook)
    with cache_lock(cache_path):
        try:
            # A folder left without its record or notebook would fail jupyter-cache's mkdir.
            shutil.rmtree(notebook_folder(cache, hashkey), ignore_errors=True)
            record = cache.cache_notebook_bundle(
                CacheBundleIn(notebook, uri, data={"execution_seconds": seconds, OUTPUTS_DIGEST: outputs_digest(notebook),
                                                   READS: reads or {}}),
                check_validity=False, overwrite=True,
            )
            cache.get_cache_bundle(record.pk)  # reads and parses the notebook just written
        except Exception as error:  # noqa: BLE001 - a full disk, a damaged database: one line
            with suppress(Exception):  # on a full disk even this may fail: reading drops it later
                drop(cache, hashkey)
            cause = (str(error).strip().splitlines() or [""])[0]
            raise CacheWriteError(
                f"the page ran, but its outputs could not be stored in the execution cache {cache_path} "
                f"({type(error).__name__}: {cause}): free disk space (or, if the cache is damaged, "
                "remove it with `make clean-cache`) and build again") from error


# What a cached execution gives a notebook's metadata (jupyter-cache's default).
CACHED_METADATA = ("kernelspec", "language_info", "widgets")
# In a cache record's data: the digest of the outputs stored, which a record read back must match.
OUTPUTS_DIGEST = "book_outputs_digest"
# In a cache record's data: what its kernel read outside the keyed folders, each path's digest then.
READS = "book_reads"
# How cached_notebook's reason starts when a file a record's kernel read has changed.
READ_CHANGED = "a file or folder its cells read has changed since the page ran"
# What of an output the page shows (not its metadata, which jupyter-cache may rewrite).
SHOWN_OUTPUT_KEYS = ("output_type", "name", "text", "data", "ename", "evalue", "traceback")


def outputs_digest(notebook) -> str:
    """The digest of every code cell's outputs, as the page shows them: a cached notebook
    changed after it was stored (by a cell of another page, say, which can write anywhere the
    build can) no longer matches the digest its record was stored with."""
    def plain(value):  # a multiline string may be stored as a list of lines
        return "".join(value) if isinstance(value, list) else value

    def shown(output) -> dict:
        kept = {key: plain(value) for key, value in output.items() if key in SHOWN_OUTPUT_KEYS}
        if "data" in output:
            kept["data"] = {kind: plain(data) for kind, data in output["data"].items()}
        return kept

    every = [[shown(output) for output in cell.get("outputs", [])] for cell in notebook.cells if cell.cell_type == "code"]
    return hashlib.sha256(json.dumps(every, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def cached_notebook(cache, notebook) -> tuple[object, object, str]:
    """The cache's record of ``notebook``'s code and the notebook with its outputs (and its
    own sources, comments included), or (None, None, why the record was dropped: "" when
    there was none). A record whose kernel read a file that has changed since is dropped too."""
    code = keyed(notebook)
    try:
        record = cache.match_cache_notebook(code)
    except KeyError:
        return None, None, ""
    try:
        _, merged = cache.merge_match_into_notebook(code, nb_meta=CACHED_METADATA)
    except KeyError:  # jupyter-cache's "Notebook file does not exist for cache record"
        why = "its notebook is missing"
    except (ValueError, ValidationError, IndexError, OSError) as error:  # truncated: NotJSONError; mode 000
        why = f"its notebook is unreadable ({type(error).__name__})"
    else:
        reads = record.data.get(READS) or {}
        if record.data.get(OUTPUTS_DIGEST) != outputs_digest(merged):
            why = "its outputs were changed after they were stored"
        elif not isinstance(reads, dict):
            why = "its list of the files its cells read is unreadable"
        elif changed := changed_reads(reads):
            more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
            why = f"{READ_CHANGED} ({shown(changed[0])}{more})"
        else:
            for cell, own in zip(merged.cells, notebook.cells, strict=True):
                cell.source, cell.metadata = own.source, copy.deepcopy(own.metadata)
            return record, merged, ""
    # Executing the page again loses nothing; the record would fail every build.
    drop(cache, record.hashkey)
    return None, None, why


def take_outputs(notebook, merged) -> None:
    """Give ``notebook`` (the page's, which myst-nb renders and writes) what jupyter-cache
    merged from the cache: each code cell's outputs and execution count, and the notebook's
    kernelspec, language_info and widgets."""
    for cell, cached in zip(notebook.cells, merged.cells, strict=True):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = cached.outputs, cached.execution_count
    for key in CACHED_METADATA:
        if key in merged.metadata:
            notebook.metadata[key] = merged.metadata[key]


def utc_timestamp(naive_utc: datetime) -> float:
    # jupyter-cache stores datetime.utcnow() without a zone.
    return naive_utc.replace(tzinfo=UTC).timestamp()


class PageClient(NotebookClientBase):
    """Outputs from the cache, or from a fresh execution that is then cached if it succeeded;
    ``runner`` executes the page, and keeps its executed notebook."""

    def __init__(self, notebook, path, nb_config, logger, *, runner: PageRunner, **kwargs) -> None:
        super().__init__(notebook, path, nb_config, logger, **kwargs)
        self.runner = runner
        # myst-nb writes each page's notebook and output files into its output folder (outside
        # every published language folder): the build's files, not sources a page could change.
        folder = Path(nb_config.output_folder)
        if folder not in runner.unwatched:
            runner.unwatched.append(folder)

    def start_client(self) -> None:
        self.run_or_take_from_cache()
        if self.path is not None:
            self.runner.executions[str(self.path)] = self.exec_metadata

    def run_or_take_from_cache(self) -> None:
        cache_path = self.nb_config.execution_cache_path
        cache = get_cache(cache_path)
        with cache_lock(cache_path):
            record, merged, dropped = cached_notebook(cache, self.notebook)
        if dropped.startswith(READ_CHANGED):
            self.logger.info(f"{dropped}: executing the page again")
        elif dropped:
            self.logger.info(f"the execution cache {cache_path} had a damaged record of this page "
                             f"({dropped}): dropped it, executing the page again")
        if record is not None:
            take_outputs(self.notebook, merged)
            self.runner.reads[str(self.path)] = record.data.get(READS) or {}
            self.logger.info(f"Using cached notebook: ID={record.pk}")
            self.exec_metadata = {
                "mtime": utc_timestamp(record.created),
                "runtime": record.data.get("execution_seconds"),
                "method": "cache",
                "succeeded": True,
                "error": None,
                "traceback": None,
                "book_executed": False,
            }
            self.remember()
            return
        if self.path is None:
            raise ValueError("a page must be a file to be executed through the cache")
        try:
            result = self.runner.execute(self.notebook, self.nb_config.execution_timeout, page=str(self.path))
        except PageStopped as stopped:
            # Sphinx says "Interrupted!" of a KeyboardInterrupt it reads pages in (-j 1); the
            # build driver, which passed the signal on, says in one line that the build stopped.
            raise SystemExit(128 + stopped.signum) from None
        # The failing cell as the page's warning names it: its number among the code cells, its line.
        failed = result.cell is not None and result.cell < len(self.notebook.cells)
        if result.error is None:
            try:
                store(cache_path, self.notebook, str(self.path), result.seconds, result.reads)
            except CacheWriteError as error:
                result.error, result.detail = "CacheWriteError", str(error)
        self.exec_metadata = {
            "mtime": time.time(),
            "runtime": result.seconds,
            "method": "cache",
            "succeeded": result.error is None,
            "error": result.error,
            # myst-nb writes a report file (and a warning with its path) when this is set;
            # the book's own warning names the page, the cell and the cause instead.
            "traceback": None,
            "book_executed": True,
            "book_cell": result.cell,
            "book_cell_number": code_cell_number(self.notebook, result.cell) if failed else None,
            "book_cell_line": cell_line(self.notebook, result.cell) if failed else None,
            "book_detail": result.detail,
        }
        if result.error is None:
            self.runner.reads[str(self.path)] = result.reads
            self.remember()

    def remember(self) -> None:
        # A copy: myst-nb then takes glued values out of the notebook and merges its streams.
        if self.path is not None:
            self.runner.executed_notebooks[str(self.path)] = copy.deepcopy(self.notebook)
