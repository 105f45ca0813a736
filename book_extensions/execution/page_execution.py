"""How the book's pages execute, and what the build does with the result.

- every kernel starts from :mod:`..kernel.startup` (device, short tracebacks, warnings
  without paths); :mod:`.runner` runs each page, or takes it from the cache;
- before any page runs, the Python that kernels run is asked which Python it is and
  where its torch comes from: another torch (a stub on PYTHONPATH, a kernel spec naming
  another environment) or another Python is refused, so the versions a page names and
  the cache is keyed by are the ones its cells ran;
- kernels start with an environment of their own, not the build's: fixed values, the
  kernel package, an empty home per page (no user configuration: IPython's profile,
  matplotlibrc, ...); :mod:`.kernel_inputs` lists what a page's outputs depend on, each
  neutralised so or keyed;
- one cache per device, torch and Python version and the other keyed kernel inputs;
- a damaged cache is one line, never a crash: :mod:`.runner` executes a page again
  whose cached notebook is missing or unreadable, and a page whose outputs could not be
  stored (a full disk) is reported, with nothing half-written left in the cache;
- every cell runs to the end (errors included); :mod:`.cell_checks` then judges each cell,
  and a page that did not finish is reported with its cell and cause; an output that would
  make its page load or run anything from another host is refused with its cell
  (:mod:`..checks.remote_loads`);
- each page states which torch, device and date produced its outputs, and links its
  executed notebook (:mod:`.notebook_downloads`);
- ``book-executions.json`` beside the doctrees says which pages this build read and
  which of them it had to execute (the benchmark and tests count these).
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from docutils import nodes
from jupyter_cache import get_cache
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError, ExtensionError
from sphinx.util import logging

from .. import build_state
from ..checks import remote_loads
from ..configuration.messages import message
from ..editions import offline_builders
from ..paths import write_own_file
from ..records import release_changes
from ..site import exercises
from ..site.device_page import device_name
from . import kernel_inputs, page_state, processes, runner
from .cache_key import EXECUTIONS_FILE, KernelMismatch, cache_dir, check_kernel, torch_version, unreadable_cache, unwritable_cache
from .cell_checks import check_cells, clean_outputs
from .notebook_downloads import write_notebook

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda")

# The pages' kernel runs the toolchain's Python and torch (cache_key.toolchain, torch_version):
# configure_execution() refuses a build whose kernel runs any other (check_kernel), so nothing
# about it is kept per build.


def cache_path(config: Config) -> Path:
    return cache_dir(Path(config.book_cache_root), config.book_device)


def configure_execution(app: Sphinx, config: Config) -> None:
    device = config.book_device
    if device not in DEVICES:
        raise ConfigError(f"book_device must be one of {', '.join(DEVICES)}, not {device!r}")
    kernel_environment = prepare_kernels(device, Path(app.doctreedir) / KERNEL_PACKAGE_FOLDER)
    # Before anything imports torch here: with a stub on PYTHONPATH, this process would get it too.
    # The build driver asks the same before it starts Sphinx; this is for sphinx-build run by hand.
    try:
        check_kernel()
    except KernelMismatch as error:
        raise ConfigError(str(error)) from None
    device_name(device)
    if not Path(config.book_cache_root).is_absolute():
        config.book_cache_root = str(Path(app.confdir, config.book_cache_root))
    config.nb_execution_cache_path = str(cache_path(config))
    # The build driver says this before Sphinx starts; this is for sphinx-build run by hand.
    problem = unreadable_cache(Path(config.nb_execution_cache_path)) or unwritable_cache(Path(config.nb_execution_cache_path))
    if problem:
        raise ConfigError(problem)
    # Create the cache's database now, under the cache's lock: parallel readers, or the
    # languages building at once, that each find it missing race to create its tables, and
    # all but one crash.
    Path(config.nb_execution_cache_path).mkdir(parents=True, exist_ok=True)  # where the lock goes
    with runner.cache_lock(config.nb_execution_cache_path):
        get_cache(config.nb_execution_cache_path).list_cache_records()
    # Errors never stop a page: check_cells() below judges every cell afterwards,
    # so one build reports every unexpected (or missing) error of every page.
    config.nb_execution_allow_errors = True
    config.nb_execution_raise_on_error = False
    # This build's page executor: myst-nb runs every page through it from now on.
    build_state.run(app).page_runner = runner.PageRunner.for_build(
        Path(app.confdir), Path(app.srcdir).parent, limit=config.book_output_limit,
        build_folders=[Path(app.outdir), Path(app.doctreedir), Path(config.book_cache_root)],
        logs=Path(app.doctreedir, "book-writes"), kernel_environment=kernel_environment)
    # What no page may change for itself (through its metadata, under whatever nb_metadata_key
    # names): myst-nb's per-page configuration is compared with these as the page is executed.
    build_state.run(app).page_runner.fixed_settings = {
        name: getattr(config, f"nb_{name}") for name in runner.FIXED_PAGE_SETTINGS}
    runner.install_client()  # once per process: myst-nb's client for each page is the runner's of its build
    # Prose names the torch that built the page as {{ torch_version }}, never as a literal.
    config.myst_substitutions = {**config.myst_substitutions, "torch_version": torch_version()}


KERNEL_PACKAGE_FOLDER = "book-kernel-package"  # beside a build's doctrees


def prepare_kernels(device: str, folder: Path) -> Callable[[Path], dict[str, str]]:
    """What gives each page's kernel its whole environment (:mod:`.kernel_inputs`): fixed
    values, the kernel package staged in ``folder`` (the one repository code on its path), and
    an empty home of the page's own (``home``), so that neither the build's shell nor any user
    configuration (IPython's profile, matplotlibrc, ...) reaches a page's outputs. This
    process's environment is left as it is.

    ``folder`` is the caller's to remove: a build stages the package beside its doctrees,
    afresh each build. (A temporary folder removed at exit stayed behind wherever the
    process ended without running atexit: pytest-xdist's workers, a killed build.)"""
    shutil.rmtree(folder, ignore_errors=True)  # nothing left of an older package
    package = kernel_inputs.staged_kernel_package(folder)
    return functools.partial(kernel_inputs.kernel_environment, device, package=package)


def forget_failure_reports(app: Sphinx) -> None:
    """Failure reports of an earlier build go. (The folder where myst-nb writes each page's
    notebook and output files is left unwatched by the runner's client, which myst-nb
    hands its configuration.)"""
    shutil.rmtree(Path(app.outdir) / "reports", ignore_errors=True)


def executed_notebook(app: Sphinx, docname: str):
    """The page's notebook with its outputs, as this build's page executor left it."""
    return build_state.run(app).page_runner.executed_notebooks.pop(str(Path(app.env.doc2path(docname))))


def report_failed_execution(app: Sphinx, docname: str, exec_data: dict) -> None:
    """A page whose execution did not finish: the page, the cell and the cause, in one line."""
    error, detail = exec_data.get("error"), exec_data.get("book_detail") or ""
    if error == "CacheWriteError":  # the page ran, but its outputs could not be stored
        logger.warning(detail, location=docname, type="book", subtype="cache")
        return
    where, location = "", docname
    number = exec_data.get("book_cell_number")  # the runner's client names the cell
    if number is not None:
        where = f" in code cell {number}"
        location = (docname, exec_data.get("book_cell_line"))
    if error == "CellTimeoutError":
        reason = f"a cell ran longer than the {app.config.nb_execution_timeout} s timeout{where}"
    elif error == "DeadKernelError":
        reason = f"the kernel died{where} ({detail})"
    elif error == "SourcesChanged":
        reason = (f"the book's sources changed while this page executed: {detail}; if a cell "
                  "wrote there, restore them (git checkout) and let the page write only in its "
                  "working folder; if you edited them, build again")
    elif error == "PageProblem":  # the executor's own one-line reason, naming the cell
        reason = detail
    else:
        reason = f"execution stopped with {error}{where}" + (f": {detail}" if detail else "")
    logger.warning(
        f"{reason}; nothing from this page was cached",
        location=location, type="book", subtype="execution",
    )


def outputs_date(exec_data: dict) -> str:
    """The day (UTC) the page's outputs were produced, as its provenance line and its
    published notebook say it."""
    return datetime.fromtimestamp(exec_data["mtime"], tz=UTC).strftime("%Y-%m-%d")


def provenance_note(app: Sphinx, exec_data: dict) -> nodes.paragraph:
    text = message(app.config, "provenance").format(
        torch=torch_version(), device=device_name(app.config.book_device), date=outputs_date(exec_data)
    )
    return nodes.paragraph(text, text, classes=["book-provenance"])


def on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    # Sphinx parses the page next: myst-nb's client for it is this build's page executor's.
    build_state.run(app).page_runner.reading(app.env.doc2path(docname))


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    runner.done_reading()
    env = app.env
    docname = env.docname
    exec_data = build_state.run(app).page_runner.executions.pop(str(Path(env.doc2path(docname))), None)
    if not exec_data:
        return  # nothing to execute
    state = page_state.of(env)
    state.executed = exec_data.get("book_executed", False)
    state.produced, state.seconds = exec_data["mtime"], exec_data.get("runtime")
    if not exec_data["succeeded"]:
        report_failed_execution(app, docname, exec_data)
        state.problems = 1
        return
    notebook = executed_notebook(app, docname)
    state.problems += check_cells(app, docname, notebook)
    state.problems += remote_loads.check_outputs(app, docname, notebook)
    state.problems += clean_outputs(docname, doctree)
    note = provenance_note(app, exec_data)
    note += release_changes.annotate(app, docname, doctree, notebook)
    # After the folds: an exercise takes its cell's output into its answer, folds and all.
    state.problems += exercises.attach(app, docname, doctree, notebook)
    if app.builder.name == "html":  # the web site, not the offline editions
        # The build's record (`build html --record`) is made from this very notebook.
        write_notebook(app, docname, notebook, outputs_date(exec_data))
        note += offline_builders.download_links()  # filled per builder when the page is written
    doctree.append(note)


def reread_pages_with_problems(app: Sphinx, env, added, changed, removed) -> list[str]:
    # Sphinx re-reads only changed pages, so a page whose cells failed would pass
    # the next build unread. Reading it again is cheap: its outputs are cached.
    return [d for d, state in page_state.every(env).items() if state.problems and d not in removed]


def wait_for_reading_turn(app: Sphinx, env, docnames: list[str]) -> None:
    """With the languages built at once, the language before this one reads (and executes)
    first: this one then takes those outputs from the cache (commands/reading_turn.ReadingTurn)."""
    after = app.config.book_reading_after
    if after:
        from ..site.search import warm_up_segmenter

        warm_up_segmenter(app)  # while this process waits
        fd = os.open(after, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # given up when that language has read, failed or ended
        finally:
            os.close(fd)


def end_reading_turn(app: Sphinx, env) -> None:
    held = app.config.book_reading_turn_fd
    if held and not build_state.run(app).reading_turn_ended:
        build_state.run(app).reading_turn_ended = True  # once: the descriptor's number may be reused after
        with suppress(OSError):
            fcntl.flock(int(held), fcntl.LOCK_UN)
            os.close(int(held))


def on_env_before_read_docs(app: Sphinx, env, docnames: list[str]) -> None:
    build_state.site(env).read_now = sorted(docnames)


def write_executions(app: Sphinx) -> None:
    env = app.env
    read = build_state.site(env).read_now
    report = {
        "read": read,
        "executed": sorted(d for d in read if page_state.of(env, d).executed),
        # How long each executed page's cells ran (``nox -s bench`` holds a code edit's rebuild to it).
        "seconds": {d: page_state.of(env, d).seconds for d in read if page_state.of(env, d).executed},
        "cache": app.config.nb_execution_cache_path,
    }
    Path(app.doctreedir).mkdir(parents=True, exist_ok=True)
    write_own_file(Path(app.doctreedir, EXECUTIONS_FILE), json.dumps(report, indent=1) + "\n")


def setup(app: Sphinx) -> None:
    processes.forks_end_with_this_process()
    problem = processes.hold_preview_locks()  # a run of the live preview's (commands/serve.py)
    if problem:
        raise ExtensionError(problem)
    app.connect("config-inited", configure_execution)
    app.connect("builder-inited", forget_failure_reports)
    app.connect("env-before-read-docs", wait_for_reading_turn, priority=100)
    app.connect("env-before-read-docs", on_env_before_read_docs)
    app.connect("env-updated", end_reading_turn)
    app.connect("source-read", on_source_read)
    app.connect("doctree-read", on_doctree_read)
    app.connect("env-get-outdated", reread_pages_with_problems)
