"""Build the book: every language with one Sphinx builder (html: all at once).

    python -m book_extensions build html --device cpu
    python -m book_extensions build doctest

Everything goes under ``<out>/<device>/``, so a CUDA build never mixes with a CPU one:
``doctrees/<language>/`` (shared by every builder but doctest, whose examples write its own
``doctrees-doctest/<language>/``), ``html/`` (the published site: one
folder per language and the site root's files), ``html-work/<language>/`` (where Sphinx
writes the site, kept between builds so that they are incremental) and
``<builder>/<language>/`` for the other builders (doctest, singlehtml, epub, linkcheck).

What the driver guarantees, since Sphinx alone does not:

- A failure sticks. Sphinx reads only changed pages again, so a warning raised while a page
  was read or written would not come back in a build with nothing changed. Each language's
  doctrees hold a note of its last successful html build (``book-last-build.json``), removed
  when any build starts and written only when an html build ends well (other builders
  resolve no references and write no notebooks into the shared doctrees). Without it (the
  last build failed, was stopped, never ran, or was another builder's), or when since then
  the book's code (``book_extensions/``, ``conf.py``, ``examples/``, the files beside the
  language folders and ``.autocorrectrc``), the Python environment or the build's settings
  changed, another Sphinx run (the live preview) wrote the doctrees, a source file was
  removed, or the working folder lost a file, Sphinx reads every page again (``-E``) into an emptied working folder: every
  problem is reported again until it is fixed. Cached executions keep that cheap.
- What changed is decided by content, never by time: the fast path below digests every
  input, and Sphinx reads again each page whose text or dependencies differ from what it
  was read from (:mod:`..execution.changed_pages`), whatever the files' times say; an edit
  made while a build runs is read by the next one.
- The site changes all at once, and only for a good build (:mod:`.publish`): once every
  asked language has built, a copy of the working folders (the other languages kept from
  the current site) and the site root's files replace ``html/``; a failed or stopped build
  leaves the last good site as it was.
- Bad input stops the build before Sphinx starts, one line per problem naming the file:
  conf.py's settings, the release list, the records in ``results/``, the term lists and the
  search words (:mod:`..configuration.input_files`); inside Sphinx a bad record was a crash report.
- A rebuild with nothing changed is quick: when nothing an html build reads changed since
  a language was last published (``docs/``, ``conf.py``, ``book_extensions/``, ``results/``,
  ``examples/``, ``torch-releases.txt``, ``requirements.txt``, the offline editions, the
  installed packages, the options, and every other file a page includes or loads: the last
  build listed those outside ``docs/`` with their digests) and its published folder still holds
  every file it was published with, each with the content it had (by digest), Sphinx is not
  started for it: ``[en] html unchanged in 0.3 s``. Other builders always run: they check
  (doctests, links) or feed the editions.
- ``--record`` records what was published: from the executed notebooks of the site, the ones
  its pages were rendered from, not from the execution cache (which another build sharing it
  may have changed, or someone removed).
- One build at a time: a lock in the execution cache and one in ``<out>/<device>/``, each
  twice: the driver's own, and one Sphinx and its readers hold, so that a killed driver leaves
  them locked until they end, and a doctest that releases the one its process was given lets
  no other build in; the live preview (``nox -s serve``) holds the same. A build also holds its toolchain shared
  (``.toolchain/torch-<release>.lock``), so that requirements.txt's re-sync waits for it. Paths
  are made absolute before anything reads them. SIGTERM and SIGINT go on to Sphinx (in a
  process group of its own) and its kernels; the driver waits until every process the
  build started is gone (ending any left behind, also after a normal build), and only
  then frees the locks and says in one line that the build was stopped.

The html build runs every language's Sphinx at once, but they read their pages (where
pages execute) one after the other, in conf.py's order (:class:`.reading_turn.ReadingTurn`): the first
language executes a changed page, the others take its outputs from the cache, and starting
Sphinx, writing and the steps after a language is written overlap; on two cores a prose edit
of both languages costs about the slower language's rebuild, not their sum. Other builders
build one language after the other. Each build reads its pages in parallel (``-j``). A
failing language does not stop the others: the run reports every problem, then exits
non-zero.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

from ..configuration import settings
from ..configuration.settings import Language, book_languages
from ..configuration.site_inputs import digest_of
from ..execution import processes, running_cells
from ..execution.cache_key import KernelMismatch, cache_dir, check_kernel, unreadable_cache, unwritable_cache
from ..myst_source import not_utf8
from ..paths import PACKAGE, RESERVED_FOLDER, add_folder_options, shown
from . import publish
from .build_locks import hold_build_locks
from .last_build import (
    DOCTREES,
    PUBLISHED,
    changed_dependencies,
    code_parts,
    compared_parts,
    damaged_doctrees,
    doctree_digests,
    environment_stamp,
    folder_files,
    forget_note,
    language_part,
    note_published,
    pages_part,
    published_now,
    read_note,
    read_published,
    report_nothing_read,
    site_input_parts,
    source_files,
    why_read_again,
    write_note,
)
from .reading_turn import ReadingTurn


def child_environment() -> dict[str, str]:
    """The environment of the Python processes the driver starts (Sphinx, the CUDA probe): the
    caller's, but for its Python warnings settings, which are not the build's:
    PYTHONWARNINGS=error made a third-party library's SyntaxWarning a crash report (attack 11,
    case 28). The book's own warnings are Sphinx's, which -W makes errors; kernels get an
    environment of their own (execution/kernel_inputs.py)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONWARNINGS"}


def cuda_problem() -> str | None:
    """Why a CUDA build cannot run here, or None; asked in a child so it stays cheap."""
    probe = "import torch; print(torch.cuda.is_available(), torch.__version__)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=child_environment())
    if result.returncode != 0:
        return f"cannot import torch: {result.stderr.strip().splitlines()[-1]}"
    available, version = result.stdout.split()
    if available != "True":
        return f"--device cuda asked for, but torch {version} sees no CUDA device here"
    return None


def output_dir(out: Path, device: str, builder: str, code: str) -> Path:
    """Where Sphinx writes one language: the html working folder, or the builder's own."""
    return out / device / (publish.WORK if builder == "html" else builder) / code


def doctrees_dir(out: Path, device: str, builder: str, code: str) -> Path:
    """Where Sphinx keeps what it read of one language: the doctest builder has its own, where
    its examples' process keeps its folder (execution/doctests.py), and which it reads afresh
    every time (-E, no note). The other builders share the html build's, which they read from
    and which no code of a page's reaches (kernels and examples run sandboxed). When examples
    ran in Sphinx's process, one planted a catalog in the html build's that every later html
    build published (attack 7, case 4)."""
    return out / device / ("doctrees-doctest" if builder == "doctest" else "doctrees") / code


# A build that reads this many source files or fewer (a rebuild after a small edit, a small
# book) runs Sphinx in one process: forking readers and writers for a page or two costs more
# than it saves (about 0.4 s a language; each fork parses the release records again).
SERIAL_READ = 3


def jobs_for(args, fresh: bool, noted: dict[str, str], sources: dict[str, str]) -> str:
    """Sphinx's -j: the one asked for, else one process for a small read, else one a core."""
    if args.jobs is not None:
        return args.jobs
    to_read = sources.keys() if fresh else \
        {name for name in noted.keys() | sources.keys() if noted.get(name) != sources.get(name)}
    return "1" if len(to_read) <= SERIAL_READ else "auto"


def sphinx_command(args, language: Language, docs: Path, out: Path, fresh: bool = False,
                   turn: ReadingTurn | None = None, jobs: str = "auto") -> list[str]:
    code = language.code
    return [
        sys.executable, "-m", "sphinx",
        *args.sphinx_args,  # first: Sphinx takes the last of each, and the rest are the driver's
        "-b", args.builder,
        "-c", str(args.confdir),
        "-d", str(doctrees_dir(out, args.device, args.builder, code)),
        "-D", f"language={language.sphinx}",
        "-D", f"book_device={args.device}",
        "-D", f"book_cache_root={args.cache_root}",
        *(turn.overrides() if turn is not None else ()),
        "-W", "-j", jobs, *(["-q"] if args.quiet else []), *(["-E"] if fresh else []),
        # Every page written, by every builder but html: sharing the html build's environment,
        # the EPUB's builder read nothing and wrote only pages whose own source was newer, and
        # kept another page's old title, an included file's old text, the book's old messages
        # (attack 8, cases 8, 10, 37); html's writing follows execution/changed_pages.py.
        *(["-a"] if args.builder != "html" else []),
        str(docs / code),
        str(output_dir(out, args.device, args.builder, code)),
    ]


def jobs_value(text: str) -> str:
    """-j as Sphinx takes it: a whole number of processes from 1, or auto (said here in one line,
    not by Sphinx's usage message once per language)."""
    if text == "auto" or (text.isdigit() and int(text) >= 1):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes (1, 2, …) or auto")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m book_extensions build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builder", nargs="?", default="html", help="Sphinx builder (html, doctest, ...)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--language", action="append", dest="languages", metavar="CODE",
                        help="build only this language (repeatable); default: all")
    add_folder_options(parser, "--docs", "--out", "--cache-root", "--confdir")
    parser.add_argument("-j", "--jobs", type=jobs_value, help="Sphinx's processes: a number, or auto (default: one a core, one for a "
                        f"build that reads {SERIAL_READ} files or fewer)")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    parser.add_argument("--record", action="store_true",
                        help="html only: once the site is published, record every code cell's outputs in "
                             "<results>/<device>.json from the executed notebooks it published (the "
                             "reference language's), the ones its pages show")
    add_folder_options(parser, "--results", helps={"--results": "where --record writes"})
    parser.epilog = "Arguments after -- go to sphinx-build, for example: -- -D nb_execution_timeout=30"
    own, extra = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(own)
    if args.record and args.builder != "html":
        parser.error("--record records what an html build published: build html")
    args.sphinx_args = extra
    # Absolute before anything reads them: Sphinx reads a relative book_cache_root from the
    # config folder, and the driver from the working directory.
    for name in ("docs", "out", "cache_root", "confdir", "results"):
        setattr(args, name, getattr(args, name).resolve())
    return args


def missing_locale() -> str | None:
    """A locale the environment asks for and the machine lacks: Sphinx would stop with a traceback."""
    import locale

    try:
        locale.setlocale(locale.LC_ALL, "")
    except locale.Error:
        asked = next((f"{name}={os.environ[name]}" for name in ("LC_ALL", "LC_CTYPE", "LANG") if os.environ.get(name)),
                     "the locale")
        return f"{asked} is not a locale this machine has (`locale -a` lists them): set another, or C.UTF-8"
    return None


def undecodable_home_page(args: argparse.Namespace) -> str | None:
    """A language's home page that is not UTF-8: the build sets such a page aside and says so
    (checks/page_sources.py), but without its home page Sphinx stops with a crash report."""
    for language in book_languages(args.confdir):
        page = args.docs / language.code / "index.md"
        try:
            problem = not_utf8(page.read_bytes())
        except OSError:
            continue  # no home page: Sphinx says so
        if problem:
            return f"{shown(page, Path.cwd())}:{problem[0]}: not valid UTF-8 (byte 0x{problem[1]}): save the page as UTF-8"
    return None


def decomposed_page_names(docs: Path, codes: list[str]) -> list[str]:
    """Page files whose names are not in Unicode's composed form (NFC): Sphinx reads every name
    composed, so café.md spelt with a combining accent clashed with café.md, or lost its twin,
    in messages that never said why (attack 11, cases 15 and 47)."""
    problems = []
    for code in codes:
        folder = docs / code
        for page in sorted(folder.rglob("*.md")) if folder.is_dir() else ():
            name = page.relative_to(folder).as_posix()
            if unicodedata.normalize("NFC", name) != name:
                what = "name" if not unicodedata.is_normalized("NFC", page.name) else "folder's name"
                problems.append(f"{shown(page, Path.cwd())}: its {what} is not in Unicode's composed form (NFC): a "
                                "letter and a combining mark where one character would do, which Sphinx reads as the "
                                "composed name; rename it, typing its accented letters as one character each")
    return problems


def misplaced_folder(args: argparse.Namespace) -> str | None:
    """A folder the build writes that lies among the pages' sources, or the cache inside the
    output (published with the site, or deleted by each publish), or None."""
    for option, folder in (("--out", args.out), ("--cache-root", args.cache_root)):
        if folder.is_relative_to(args.docs):
            return (f"{option} {folder} is inside the docs folder {args.docs}: every page would see "
                    f"the build change its sources; choose a folder outside it")
    if args.record:
        # The first folder of its path that exists must be a folder, and not the pages' or the
        # output's (a record inside the site is published; inside docs/, every build reads again).
        existing = next(folder for folder in (args.results, *args.results.parents) if folder.exists())
        if not existing.is_dir():
            return (f"--results {args.results}: {existing} is a file: --results names the folder --record "
                    f"writes <device>.json into; choose a folder")
        for option, folder in (("--docs", args.docs), ("--out", args.out)):
            if args.results.is_relative_to(folder):
                return (f"--results {args.results} is inside the {option} folder {folder}: choose a folder "
                        f"outside it")
    if args.cache_root.is_relative_to(args.out) or args.out.is_relative_to(args.cache_root):
        return (f"--cache-root {args.cache_root} and --out {args.out} overlap: publishing would copy the "
                f"execution cache into the site or delete it; choose folders apart")
    return None


def input_problems(args: argparse.Namespace) -> list[str]:
    """What is wrong with the files the build reads besides the pages (release list, records,
    term lists): said here in one line each, where Sphinx would crash on them."""
    from ..configuration import input_files

    return input_files.problems(args.confdir, args.docs, args.sphinx_args)


def compile_sphinx_catalogs() -> None:
    """Compile each .po of the book's catalogs (conf.py's ``locale_dirs``) whose .mo beside it
    is not what it compiles to, as Sphinx does when it starts (sphinx.po) and when its builder starts (all), but
    whole or not at all: Sphinx writes a .mo in place, where a build started meanwhile (the
    tests run several) would read half of it."""
    from ..configuration.messages import compiled_catalog

    for po in sorted((PACKAGE / "locale").glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        # By content, not by time: a .po restored with an older time (cp -p, tar) still counts.
        compiled = compiled_catalog(po)
        if mo.is_file() and mo.read_bytes() == compiled:
            if mo.stat().st_mtime_ns < po.stat().st_mtime_ns:  # else Sphinx compiles it again, its own way
                os.utime(mo)
            continue
        # Not paths.write_atomically: several builds may compile one catalog at once (the tests
        # run several), so each writes a partial file of its own, and a read-only tree is no error.
        partial = mo.with_name(f"{mo.name}.{os.getpid()}.partial")
        try:
            partial.write_bytes(compiled)
            os.replace(partial, mo)
        except OSError:  # a read-only tree: Sphinx says so, in one warning
            with suppress(OSError):
                partial.unlink()


# --- processes: Sphinx in a group of its own, signals passed on, nothing left behind ---------

STOP_GRACE = 30  # seconds Sphinx has to stop after a signal before it is killed


class Stop:
    """The signal that stops the build (SIGTERM or SIGINT), passed on to the running Sphinx."""

    MESSAGES = {signal.SIGINT: "the build was interrupted", signal.SIGTERM: "the build was stopped by SIGTERM"}

    def __init__(self, locks: list[int] = ()) -> None:
        self.locks = tuple(locks)  # the locks the build's Sphinx processes hold (build_locks.PROCESSES_LOCK)
        self.finished = False  # the site was published: a late signal stops nothing
        self.signum: int | None = None
        self.since = 0.0
        self.children: list[subprocess.Popen] = []  # one Sphinx a language, several at once

    def __call__(self, signum: int, frame) -> None:
        if self.signum is None:
            self.signum, self.since = signum, time.monotonic()
        self.forward(signum)

    def forward(self, signum: int) -> None:
        for child in list(self.children):
            if child.poll() is None:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signum)

    def message(self) -> str:
        return f"error: {self.MESSAGES[self.signum]}; run it again to finish"


def run_sphinx(command: list[str], stop: Stop, turn: ReadingTurn | None = None) -> int:
    """Sphinx's exit status; it runs in a session of its own, so that a signal reaches all of
    it (its parallel readers too) through the driver, which waits for it to be gone."""
    fds = (*stop.locks, *(turn.fds() if turn is not None else ()))
    child = subprocess.Popen(command, start_new_session=True, pass_fds=fds, env=child_environment(),
                             preexec_fn=processes.end_with_parent)  # the driver killed
    if turn is not None:
        turn.handed_over()
    stop.children.append(child)
    if stop.signum is not None:  # arrived while it started
        stop.forward(stop.signum)
    try:
        while True:
            try:
                return child.wait(timeout=1)
            except subprocess.TimeoutExpired:
                if stop.signum is not None and time.monotonic() - stop.since > STOP_GRACE:
                    stop.forward(signal.SIGKILL)
    finally:
        stop.children.remove(child)


def end_leftovers(grace: float = 5) -> list[str]:
    """End every process the build left running (a kernel, a page's background process: the
    driver is their subreaper, so they stay its descendants) and wait until they are gone."""
    import psutil

    left = psutil.Process().children(recursive=True)
    names = []
    for process in left:
        with suppress(psutil.Error):
            names.append(f"{process.name()} (pid {process.pid})")
    processes.stop(left, grace)
    return names


# --- the build ------------------------------------------------------------------------------

def start_problems(args: argparse.Namespace) -> list[str]:
    """Why a build (or the live preview) cannot start, one line each, before Sphinx would crash:
    the settings, the folders, the locale, every input file."""
    problems = settings.problems(args.confdir, args.docs, args.languages, args.sphinx_args)
    problems = problems or [problem for problem in [misplaced_folder(args), missing_locale(), undecodable_home_page(args)]
                            if problem]
    problems = problems or decomposed_page_names(args.docs, [language.code for language in book_languages(args.confdir)])
    return problems or input_problems(args)


class Interrupted(Exception):
    """A signal that came while the driver itself worked, before or after Sphinx ran."""


def interrupted(signum: int, frame) -> None:
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    return build_then(sys.argv[1:] if argv is None else argv)


def build_then(argv: list[str], after: Callable[[argparse.Namespace], int] | None = None) -> int:
    """The build, with SIGINT and SIGTERM said in one line whenever they come: during the
    languages' builds :class:`Stop` passes them on to Sphinx; before and after, they end the
    driver (attack 6, cases 10, 11: a traceback, or nothing said at all). ``after``: what runs
    on the built output while the build's locks are still held (the offline editions' printing,
    EPUBCheck and stamps: after the locks, a second build could rewrite what they read; attack 8,
    case 19); its status is the build's."""
    args = parse_args(argv)
    previous = {signum: signal.signal(signum, interrupted) for signum in Stop.MESSAGES}
    try:
        return run_build(args, after)
    except Interrupted as stopped:
        signum = stopped.args[0]
        recorded = "; the site is published, its record is not: run it again (nothing is built again)" \
            if args.record and getattr(args, "published", False) else "; run it again to finish"
        print(f"error: {Stop.MESSAGES[signum]}{recorded}", file=sys.stderr)
        return 128 + signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_build(args: argparse.Namespace, after: Callable[[argparse.Namespace], int] | None = None) -> int:
    problems = start_problems(args)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.device == "cuda":
        problem = cuda_problem()
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    languages = book_languages(args.confdir)
    if args.languages:
        unknown = set(args.languages) - {lang.code for lang in languages}
        if unknown:
            print(f"error: unknown language {', '.join(sorted(unknown))}: conf.py's book_languages has "
                  f"{', '.join(lang.code for lang in languages)}", file=sys.stderr)
            return 2
        languages = [lang for lang in languages if lang.code in args.languages]
    device_dir = args.out / args.device
    locks, problem = hold_build_locks(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        publish.recover(device_dir)
        # The kernel's torch and Python, not this process's, name the cache and the pages.
        # While the probe runs, jupyter-cache (SQLAlchemy: a second) is preimport for the cache's check.
        threading.Thread(target=preimport, args=("jupyter_cache.cache.main",), daemon=True).start()
        try:
            kernel = check_kernel()
        except KernelMismatch as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        cache = cache_dir(args.cache_root, args.device, kernel)
        problem = unreadable_cache(cache) or unwritable_cache(cache)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        compile_sphinx_catalogs()
        status = with_signals_passed_on(args, languages, locks.passed)
        args.published = status == 0
        return status or record_published(args, languages) or (after(args) if after else 0)
    finally:
        locks.close()  # the build's processes are gone by now


def preimport(module: str) -> None:
    """Import ``module`` ahead of its use (in a thread); a failure is its user's to report."""
    with suppress(ImportError):
        importlib.import_module(module)


def record_published(args: argparse.Namespace, languages: list[Language]) -> int:
    """With --record, the record of what this build published: made from the executed
    notebooks of the published site, the very ones its pages were rendered from (not from
    the execution cache, which another build may have changed or removed since), so a record
    cannot disagree with the site (``nox -s docs``). The reference language's, unless this
    build left it out: then the first it built (every language runs the same code)."""
    if not args.record:
        return 0
    from ..records import cell_records

    built = [language.code for language in languages]
    reference = settings.reference_language(args.confdir)
    try:
        cell_records.write_published_record(args.device, args.out / args.device / publish.SITE, args.docs,
                                            args.results, reference if reference in built else built[0])
    except (cell_records.RecordError, cell_records.UncomparableOutput, OSError) as error:
        print(f"error: the outputs were not recorded: {error}", file=sys.stderr)
        return 1
    return 0


def with_signals_passed_on(args: argparse.Namespace, languages: list[Language], locks: list[int]) -> int:
    stop = Stop(locks)
    previous = {signum: signal.signal(signum, stop) for signum in Stop.MESSAGES}
    processes.adopt_orphans()  # orphans of the build (a kernel, a daemon) stay ours to end
    try:
        status = build_languages(args, languages, stop)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stop.signum is not None and not stop.finished:
        print(stop.message(), file=sys.stderr)
        return 128 + stop.signum
    return status


def build_language(args: argparse.Namespace, language: Language, stop: Stop, book: tuple[dict, dict | None, dict[str, tuple[str, str]]],
                   turn: ReadingTurn | None = None) -> tuple[str, str | None]:
    """Build one language and say so in one line: ("unchanged", "built", "failed" or "stopped",
    the digest of what an html build read, to note once the site is published). ``book``: the
    code's and the site's parts (:func:`.last_build.code_parts`, :func:`.last_build.site_input_parts`)
    and what each page is to the other languages (:func:`.last_build.compared_parts`), the same for
    every language. With a ``turn`` (languages built at once), the processes it leaves are
    ended once all are done."""
    code = language.code
    started = time.perf_counter()
    doctrees = doctrees_dir(args.out, args.device, args.builder, code)
    note = read_note(doctrees)
    code_inputs = {**book[0], **language_part(language)}
    trusted = digest_of(code_inputs)
    parts = {**code_inputs, **book[1], "pages": pages_part(args, code, book[2])} if book[1] is not None else None
    inputs = digest_of(parts) if parts is not None else None
    site = args.out / args.device / "html"
    work = output_dir(args.out, args.device, args.builder, code)
    # The site as published must still be whole: a file deleted from it is published again.
    published = folder_files(site / code) if (site / code).is_dir() else None
    # And every file its pages were read from outside the docs folder must be as they read it.
    dependencies = changed_dependencies(doctrees) if inputs is not None else None
    if (inputs is not None and note.get("site") == inputs and published == note.get("files")
            and dependencies == []):
        report_nothing_read(doctrees)
        print(f"[{code}] {args.builder} unchanged in {time.perf_counter() - started:.1f} s", flush=True)
        return "unchanged", inputs
    why = why_read_again(note, parts, published, dependencies)
    damaged = damaged_doctrees(doctrees, note)
    if damaged:
        why = f" (read again: {', '.join(damaged)} damaged)"
    sources = source_files(args, code)
    noted = note.get("sources")
    noted = noted if isinstance(noted, dict) else {}
    fresh = (note.get("trusted") != trusted or note.get("environment") != environment_stamp(doctrees)
             or not set(noted) <= set(sources) or bool(damaged)
             # the working folder as the last good build left it (nothing deleted from it)
             or (args.builder == "html" and folder_files(work) != note.get("files")))
    try:
        forget_note(doctrees)
        if fresh:
            publish.remove(work)
        for name in damaged:  # a folder or a link in a doctree's place: Sphinx cannot write over it
            publish.remove(doctrees / name)
    except OSError as error:  # a folder the build cannot write (attack 6, case 15c)
        where = shown(Path(error.filename), Path.cwd()) if error.filename else shown(doctrees, Path.cwd())
        print(f"error: [{code}] the build cannot write {where} ({error.strerror}): make it writable, or "
              "choose another --out", file=sys.stderr, flush=True)
        return "failed", None
    if stop.signum is not None:
        return "stopped", None
    command = sphinx_command(args, language, args.docs, args.out, fresh, turn, jobs_for(args, fresh, noted, sources))
    returncode = run_sphinx(command, stop, turn)
    left = end_leftovers() if turn is None else []
    if stop.signum is not None:
        return "stopped", None
    if left:
        print(f"warning: [{code}] the build left processes running, now ended: {', '.join(left)}",
              file=sys.stderr)
    unfinished = unfinished_doctests(output_dir(args.out, args.device, args.builder, code)) \
        if returncode == 0 and args.builder == "doctest" else None
    if unfinished:
        print(f"error: [{code}] {unfinished}", file=sys.stderr)
        returncode = 1
    status = "ok" if returncode == 0 else f"FAILED (exit {returncode})"
    print(f"[{code}] {args.builder} {status} in {time.perf_counter() - started:.1f} s{why}", flush=True)
    if returncode:
        for line in running_cells.left_running(doctrees, lambda page: shown(page, Path.cwd())):
            print(f"error: [{code}] {line}", file=sys.stderr, flush=True)
        return "failed", None
    if args.builder != "html":
        # Another builder reads the same pages into the same doctrees, but resolves no
        # references and writes no notebooks: the next html build reads every page again.
        return "built", None
    # What the site was built from is noted once it is published (build_languages).
    write_note(doctrees, {"trusted": trusted, "environment": environment_stamp(doctrees),
                          "sources": sources, "files": folder_files(work), "site_parts": parts,
                          DOCTREES: doctree_digests(doctrees)})
    return "built", inputs


def unfinished_doctests(outdir: Path) -> str | None:
    """Why a doctest build that exited 0 did not pass, or None: the doctest builder writes its
    summary last in output.txt, with the number of failures, which must be 0 whatever the
    warnings settings let through (a build without its summary ended early)."""
    try:
        text = (outdir / "output.txt").read_text(encoding="utf8", errors="replace")
    except OSError as error:
        return f"the doctests' output {shown(outdir / 'output.txt', Path.cwd())} cannot be read ({error.strerror})"
    summary = re.search(r"^Doctest summary\n=+\n *\d+ tests in \d+ pages\n *(\d+) failures\n\Z", text, re.M)
    if summary is None:
        return "the doctests ended before their summary: the doctest build's process stopped early"
    if summary.group(1) != "0":
        return f"{summary.group(1)} doctests failed ({shown(outdir / 'output.txt', Path.cwd())})"
    return None


def report_doctest_relaxations(args: argparse.Namespace, language: Language) -> None:
    """Each doctest block that does not compare exactly (conf.py's doctest_default_flags), said
    before it runs: Sphinx trims the marks from the page, so only this says it."""
    from ..checks.doctest_options import relaxations

    for line in relaxations(args.docs / language.code):
        print(f"[{language.code}] {line}", flush=True)


def built_at_once(args: argparse.Namespace, languages: list[Language], stop: Stop,
                  book: tuple[dict, dict | None]) -> dict[str, tuple]:
    """The html build of every language at once, each reading in its turn (:class:`.reading_turn.ReadingTurn`):
    on two cores a rebuild after an edit takes about the time of the slower language."""
    from concurrent.futures import ThreadPoolExecutor

    device_dir = args.out / args.device
    turns, after = [], None
    for language in languages:
        turns.append(ReadingTurn(device_dir / f"book-reading-{language.code}.lock", after))
        after = turns[-1].path
    try:
        def in_turn(language: Language, turn: ReadingTurn) -> tuple[str, str | None]:
            try:
                return build_language(args, language, stop, book, turn)
            finally:  # unchanged, or stopped before Sphinx started: the next language reads now
                turn.give_up()

        with ThreadPoolExecutor(len(languages)) as pool:
            futures = {language.code: pool.submit(in_turn, language, turn)
                       for language, turn in zip(languages, turns, strict=True)}
            results = {code: future.result() for code, future in futures.items()}
    finally:
        for turn in turns:  # an unchanged language never started Sphinx: its turn is over
            turn.give_up()
    left = end_leftovers()
    if left and stop.signum is None:
        print(f"warning: the build left processes running, now ended: {', '.join(left)}", file=sys.stderr)
    return results


def changed_kept_sites(device_dir: Path, kept: list[str], before: dict, now: dict, record: dict) -> list[str]:
    """What is wrong with each published language this build keeps as it is: a cell of this
    build may have written into it (a kernel without a sandbox can write anywhere the build
    can), or something did since it was published (then every build says so, until that
    language is built again). Compared with the record of the last publish, which only
    publishing writes (not a language's note: a doctest build, or a cell, can remove that),
    and with the site as this build found it (``before``, ``now``: :func:`.published_now`'s;
    ``record``: :func:`.read_published`'s)."""
    problems = []
    languages = record.get("languages")
    for code in kept:
        published = languages.get(code) if isinstance(languages, dict) else None
        if code not in now["languages"]:
            if isinstance(published, dict) or code in before.get("languages", {}):
                # Published, and gone: the site root would still link it, and the record forget it.
                problems.append(f"[{code}] was published, but its folder of the site ({publish.SITE}/{code}) is gone: "
                                f"nothing is published; build {code} again (--language {code}, or the whole book)")
            continue
        site = now["languages"][code]
        if not isinstance(published, dict):
            # A site published before the record existed: its own build's note vouches for it.
            note = read_note(device_dir / "doctrees" / code)
            published = note.get("files") if "site" in note else None
        if not isinstance(published, dict):
            problems.append(f"[{code}] the published site cannot be vouched for: the record of the last publish "
                            f"({PUBLISHED}) lacks it; build {code} again (--language {code}, or the whole book)")
            continue
        for expected in (before.get("languages", {}).get(code), published):
            if expected is not None and site != expected:
                differ = sorted(name for name in expected.keys() | site.keys() if expected.get(name) != site.get(name))
                problems.append(f"[{code}] the published site changed outside its own build "
                                f"({', '.join(differ[:3])}{', …' if len(differ) > 3 else ''}): nothing is "
                                f"published; build {code} again (--language {code}, or the whole book)")
                break
    return problems


def site_pages(files: Iterable[str]) -> set[str]:
    """The pages among a language's site files (not those of paths.RESERVED_FOLDER)."""
    return {name for name in files if name.endswith(".html") and not RESERVED_FOLDER.fullmatch(name)}


def unmatched_pages(device_dir: Path, built: dict, now: dict) -> list[str]:
    """What is wrong with a language kept as published beside one just built from sources with
    other pages: each page's language switch links its twin, which the kept site lacks (a page
    added), and the kept pages link the built language's pages that are gone (a page removed),
    so the site would have dead links until the kept language is built too (attack 8, case 36)."""
    if not built:
        return []
    code = next(iter(built))
    pages = site_pages(folder_files(device_dir / publish.WORK / code))
    problems = []
    for kept, files in now["languages"].items():
        if kept in built:
            continue
        theirs = site_pages(files)
        for names, how in ((pages - theirs, f"lacks pages {code} has"), (theirs - pages, f"has pages {code} no longer has")):
            if names:
                shown_names = ", ".join(sorted(names)[:3]) + (", …" if len(names) > 3 else "")
                problems.append(f"[{kept}] its published site {how} ({shown_names}): the language switch would "
                                f"lead to missing pages; nothing is published; build {kept} too (the whole book, or "
                                f"--language {kept} as well)")
    return problems


def build_languages(args: argparse.Namespace, languages: list[Language], stop: Stop) -> int:
    code, site = code_parts(args), site_input_parts(args)  # digested once, for every language
    book = (code, site, compared_parts(args, digest_of(code)) if site is not None else {})
    device_dir = args.out / args.device
    codes = [language.code for language in book_languages(args.confdir)]
    before = published_now(device_dir, codes) if args.builder == "html" else {}
    if args.builder == "html" and len(languages) > 1:
        results = built_at_once(args, languages, stop, book)
    else:
        results = {}
        for language in languages:
            if args.builder == "doctest":
                report_doctest_relaxations(args, language)
            results[language.code] = build_language(args, language, stop, book)
            if stop.signum is not None:
                return 1
    if stop.signum is not None:
        return 1
    failed = [code for code, (result, _) in results.items() if result == "failed"]
    if failed:
        print(f"error: the {args.builder} build failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    if args.builder == "html":
        built = {code: inputs for code, (result, inputs) in results.items() if result == "built"}
        kept = [code for code in codes if code not in built]
        now, record = published_now(device_dir, codes), read_published(device_dir)  # read once
        changed = changed_kept_sites(device_dir, kept, before, now, record) or unmatched_pages(device_dir, built, now)
        for line in changed:
            print(f"error: {line}", file=sys.stderr)
        if changed:
            return 1
        # The root's files (language chooser, 404, robots.txt) as the last publish wrote them, or
        # written again: they are made from the languages' manifests, whatever changed them.
        root_changed = (device_dir / publish.SITE).is_dir() and record.get("root") != now["root"]
        if built or root_changed:
            # Every language built: a signal now waits until the site is swapped in and noted,
            # so that it never stops the swap halfway (and the build then says it finished).
            signal.pthread_sigmask(signal.SIG_BLOCK, Stop.MESSAGES)
            try:
                try:
                    problem = publish.publish(device_dir, list(built), book_languages(args.confdir), args.docs)
                except OSError as error:  # a full disk, a folder that cannot be written
                    publish.recover(device_dir)
                    print(f"error: the site was not published (the last one stays): {publish.why_not(error)}",
                          file=sys.stderr)
                    return 1
                note_published(device_dir, codes)
                for code, inputs in built.items():
                    doctrees = device_dir / "doctrees" / code
                    write_note(doctrees, {**read_note(doctrees), "site": inputs})
                stop.finished = True
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, Stop.MESSAGES)
            if problem:
                print(f"The site root (language chooser, 404, robots.txt) is not written: {problem}")
        print(f"The book is built. Open {(device_dir / 'html' / 'index.html').as_uri()}")
    return 0
