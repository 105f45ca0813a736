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
- dates a cached page with the record's UTC time read as local time.

Here kernels talk over IPC sockets (no ports), every page runs in an empty scratch
folder, the book's sources are compared before and after, failures are reported with
the page and cell, and every cache access holds one lock per cache.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from stat import S_ISREG

from filelock import FileLock
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_client.manager import AsyncKernelManager
from myst_nb.core.execute.base import NotebookClientBase
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from traitlets import default

# Files a page must not change, and the folder they are named from in messages: set by
# the build before pages are read (and before parallel readers fork).
watched_sources: list[Path] = []
sources_root = Path(".")

# The executed notebook of each page read in this process, for the checks that follow.
executed_notebooks: dict[str, object] = {}


class IpcKernelManager(AsyncKernelManager):
    """A kernel on IPC sockets, which cannot collide; it keeps the exit code of a dead kernel."""

    exit_code: int | None = None

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc"

    async def _async_is_alive(self) -> bool:
        if self.owns_kernel and self.has_kernel and self.provisioner is not None:
            code = await self.provisioner.poll()
            if code is not None:
                self.exit_code = code
                return False
        return await super()._async_is_alive()

    is_alive = _async_is_alive


@dataclass
class Execution:
    seconds: float
    error: str | None = None  # "CellTimeoutError", "DeadKernelError", "SourcesChanged", ...
    cell: int | None = None  # index in notebook.cells of the cell that was running
    detail: str = ""


def source_state() -> dict[str, tuple[int, int]]:
    """(mtime, size) of every watched file; compiled Python caches do not count."""
    state = {}
    for root in watched_sources:
        paths = [root] if root.is_file() else root.rglob("*")
        for path in paths:
            if "__pycache__" in path.parts:
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:  # an editor's swap file, gone since the listing
                continue
            if S_ISREG(stat.st_mode):
                state[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return state


def changed_sources(before: dict, after: dict) -> list[str]:
    def relative(path: str) -> str:
        with suppress(ValueError):
            return Path(path).relative_to(sources_root).as_posix()
        return path

    changed = [p for p in after if before.get(p) != after[p]] + [p for p in before if p not in after]
    return sorted(relative(p) for p in changed)


def execute(notebook, timeout: int | None) -> Execution:
    """Run every cell, errors included, in an empty scratch folder; the notebook gets the outputs."""
    running: dict[str, int] = {}

    def on_cell_start(cell, cell_index: int) -> None:
        if cell.cell_type == "code":  # nbclient calls this for Markdown cells too
            running["cell"] = cell_index

    before = source_state()
    started = time.perf_counter()
    result = Execution(0.0)
    # A cell may leave a process writing in its folder: cleaning up must not fail the build.
    with tempfile.TemporaryDirectory(prefix="book-page-", ignore_cleanup_errors=True) as scratch:
        # The sockets live beside the page's working folder, named by absolute path:
        # a relative one would resolve differently in the kernel and in this process.
        sockets = Path(scratch, "sockets")
        work = Path(scratch, "work")
        sockets.mkdir()
        work.mkdir()
        kernel_name = notebook.metadata.get("kernelspec", {}).get("name", "python3")
        manager = IpcKernelManager(kernel_name=kernel_name, ip=str(sockets / "kernel"))
        client = NotebookClient(
            notebook,
            km=manager,
            timeout=timeout,
            allow_errors=True,
            record_timing=False,
            on_cell_start=on_cell_start,
            resources={"metadata": {"path": str(work)}},
        )
        client.owns_km = True  # so that nbclient shuts the kernel down when the page is done
        # The kernel's own messages (not the cells' output, which arrives as messages)
        # go to a log: the last line says why a dead kernel died.
        kernel_log = Path(scratch, "kernel.log")
        try:
            with kernel_log.open("w") as log:
                client.execute(stdout=log, stderr=log)
        except CellTimeoutError:
            result.error = "CellTimeoutError"
        except DeadKernelError:
            code = manager.exit_code
            result.error = "DeadKernelError"
            result.detail = f"exit code {code}" if code is not None else "exit code unknown"
            last = [line for line in kernel_log.read_text(errors="replace").splitlines() if line.strip()]
            if last:
                result.detail += f": {last[-1].strip()}"
        except Exception as error:  # noqa: BLE001 - reported with the page, never a crash
            if getattr(client, "_async_cleanup_kernel_future", None) is not None:
                # nbclient caught Ctrl-C (or SIGTERM) and shut the kernel down: stop the build.
                raise KeyboardInterrupt from error
            result.error = type(error).__name__
            result.detail = (str(error).strip().splitlines() or [""])[0]
    result.seconds = time.perf_counter() - started
    result.cell = running.get("cell") if result.error else None
    changed = changed_sources(before, source_state())
    if changed and not result.error:
        result.error = "SourcesChanged"
        result.detail = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return result


def cache_lock(cache_path: str) -> FileLock:
    """Held for every read or write of one cache's database, across parallel readers."""
    return FileLock(os.path.join(cache_path, "book-cache.lock"))


def store(cache_path: str, notebook, uri: str, seconds: float) -> None:
    """Add an executed notebook to the cache, replacing an older execution of the same code."""
    with cache_lock(cache_path):
        get_cache(cache_path).cache_notebook_bundle(
            CacheBundleIn(notebook, uri, data={"execution_seconds": seconds}),
            check_validity=False, overwrite=True,
        )


def utc_timestamp(naive_utc: datetime) -> float:
    # jupyter-cache stores datetime.utcnow() without a zone.
    return naive_utc.replace(tzinfo=UTC).timestamp()


class PageClient(NotebookClientBase):
    """Outputs from the cache, or from a fresh execution that is then cached if it succeeded."""

    def start_client(self) -> None:
        cache_path = self.nb_config.execution_cache_path
        cache = get_cache(cache_path)
        record = None
        with cache_lock(cache_path):
            with suppress(KeyError):
                record = cache.match_cache_notebook(self.notebook)
            if record is not None:
                _, self._notebook = cache.merge_match_into_notebook(self.notebook)
        if record is not None:
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
        result = execute(self.notebook, self.nb_config.execution_timeout)
        if result.error is None:
            store(cache_path, self.notebook, str(self.path), result.seconds)
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
            "book_detail": result.detail,
        }
        if result.error is None:
            self.remember()

    def remember(self) -> None:
        # A copy: myst-nb then takes glued values out of the notebook and merges its streams.
        if self.path is not None:
            executed_notebooks[str(self.path)] = copy.deepcopy(self.notebook)


def install() -> None:
    """Make myst-nb use PageClient for the "cache" execution mode."""
    import myst_nb.sphinx_ as myst_nb_sphinx

    original = myst_nb_sphinx.create_client
    if getattr(original, "book_page_client", False):
        return

    def create_client(notebook, source, nb_config, logger, read_fmt=None):
        if nb_config.execution_mode == "cache":
            path = Path(source) if Path(source).is_file() else None
            return PageClient(notebook, path, nb_config, logger)
        return original(notebook, source, nb_config, logger, read_fmt)

    create_client.book_page_client = True
    myst_nb_sphinx.create_client = create_client
