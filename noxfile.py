"""Sessions for building and checking the book; each does one thing.

    nox -s docs        build both languages, record their outputs in results/<device>.json
                       (``-- --device cuda`` for the GPU job)
    nox -s pdf         the whole book as one PDF per language (Chromium prints the single-page
                       build), into _build/<device>/offline/<language>/; executes nothing
                       the HTML build has run
    nox -s epub        the whole book as one EPUB per language, checked by EPUBCheck
    nox -s doctest     run the "Check yourself" doctests of both languages
    nox -s tests       the test suite: the gates on small fixture books, and the real book
    nox -s lint        ruff on the book's own code
    nox -s linkcheck   every external link of both languages (needs the network)
    nox -s determinism execute every page a second time; fails on any output that changed
    nox -s compare     compare results/cuda.json with the CPU record of its torch release
                       (results/cpu-torch-<release>.json when recorded, else results/cpu.json);
                       fails on behaviour
    nox -s wheelhouse  the wheels .ci/gpu-check needs and the GPU machine lacks, into
                       wheelhouse/py<XY>/ (``-- --python 3.11``: for the rehearsal here)
    nox -s versions    execute the book under each release of torch-releases.txt, record
                       results/cpu-torch-<release>.json and print what changed
    nox -s newest-torch  build the book on the newest torch release; fails on what changed
    nox -s serve       live preview of one language that rebuilds on save
    nox -s bench       how long builds take and how many pages each executes
    nox -s weight      bytes, requests and first paint of every page on a throttled phone, in Chromium
    nox -s lighthouse  Lighthouse's scores (mobile preset) of every page, served compressed like
                       GitHub Pages; fails below 100 in accessibility, best practices or SEO

A bare ``nox`` runs ``tests`` and ``doctest`` (``nox.options.sessions`` below).
Each session runs verbs of the book's one command, ``python -m book_extensions <verb>``:
``python -m book_extensions --help`` lists every verb, ``<verb> --help`` gives its arguments.
Without nox installed, ``python3 noxfile.py -s docs`` installs it first (see below).
Every session runs in one shared environment per torch release, ``.toolchain/torch-<release>/``
(book_extensions/commands/toolchain.py), not in a virtualenv of its own.
"""

import os
import sys
from pathlib import Path

NOX_VERSION = "2026.10.20"
ROOT = Path(__file__).parent

if __name__ == "__main__":
    # Bootstrap for a machine with only Python and pip: put the pinned nox in
    # .nox-bootstrap/ and hand this command line over to it.
    import subprocess
    import venv

    bootstrap = ROOT / ".nox-bootstrap"
    python = bootstrap / "bin" / "python"
    if not python.exists():
        venv.create(bootstrap, with_pip=True)
        subprocess.run([python, "-m", "pip", "install", "-q", f"nox=={NOX_VERSION}"], check=True)
    os.execv(python, [str(python), "-m", "nox", "-f", __file__, *sys.argv[1:]])

import nox  # noqa: E402

sys.path.insert(0, str(ROOT))
from book_extensions.commands import toolchain  # noqa: E402  (standard library only)
from book_extensions.records import release_list  # noqa: E402  (standard library only)

nox.needs_version = f">={NOX_VERSION}"
nox.options.sessions = ["tests", "doctest"]  # a bare `nox` (the docstring says so)
nox.options.default_venv_backend = "none"

BUILD = ["-m", "book_extensions", "build"]
RELEASES = ["-m", "book_extensions", "releases"]


def environment(session: nox.Session, release: str | None = None) -> Path:
    """The shared environment of a torch release (default: the pinned one), made once.

    Every session runs in it instead of a virtualenv of its own: torch's wheel and its
    CUDA libraries take about 5 GB (see book_extensions/commands/toolchain.py).
    """
    try:
        env = toolchain.ensure(release, log=session.log)
    except toolchain.ToolchainError as error:
        session.error(str(error))
    session.env["VIRTUAL_ENV"] = str(env)
    session.env["PATH"] = os.pathsep.join([str(env / "bin"), os.environ.get("PATH", "")])
    return env


def python(session: nox.Session, env: Path, *args: str, **kwargs) -> None:
    session.run(str(toolchain.python_of(env)), *args, external=True, **kwargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the book, every language, and record its outputs; arguments go to the build."""
    # The build records what it published itself, from the same --docs, --cache-root and
    # --device: a separate `records record` read the default ones whatever the build was given.
    env = environment(session)
    python(session, env, *BUILD, "html", "--record", *session.posargs)


@nox.session
def doctest(session: nox.Session) -> None:
    """Run every page's doctest blocks against the installed torch."""
    env = environment(session)
    python(session, env, *BUILD, "doctest", *session.posargs)


@nox.session
def compare(session: nox.Session) -> None:
    """Compare the recorded CUDA outputs with the CPU record of the same torch release, cell by cell."""
    python(session, environment(session), "-m", "book_extensions", "records", "compare")


@nox.session
def wheelhouse(session: nox.Session) -> None:
    """Download the wheels a records-only run on the GPU machine needs and it lacks (CONTRIBUTING.md, "The GPU job")."""
    python(session, environment(session), "-m", "book_extensions", "wheelhouse", "download", *session.posargs)


@nox.session
def versions(session: nox.Session) -> None:
    """Execute every code cell under each release of torch-releases.txt (or those given) and record it."""
    try:
        releases = session.posargs or release_list.listed()
    except release_list.ReleasesError as error:
        session.error(str(error))
    for release in releases:
        python(session, environment(session, release), *RELEASES, "record")
    python(session, environment(session), *RELEASES, "changes")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on the book's own code (book_extensions, tests, examples, noxfile, conf.py)."""
    python(session, environment(session), "-m", "ruff", "check", ".")


@nox.session
def linkcheck(session: nox.Session) -> None:
    """Check every external link of both languages (needs the network; weekly in CI)."""
    python(session, environment(session), *BUILD, "linkcheck", *session.posargs)


@nox.session
def determinism(session: nox.Session) -> None:
    """Execute every page a second time and fail on any cell that prints differently (build first)."""
    python(session, environment(session), "-m", "book_extensions", "determinism", *session.posargs)


@nox.session(name="newest-torch")
def newest_torch(session: nox.Session) -> None:
    """Build the book on the newest torch release (or the one given); fail on what changed."""
    pinned = toolchain.pinned_torch()
    try:
        release = session.posargs[0] if session.posargs else toolchain.newest_release(
            str(toolchain.python_of(environment(session))))
    except toolchain.ToolchainError as error:
        session.error(str(error))
    if release == pinned:
        session.log(f"torch {release} is the newest release and the one requirements.txt pins: nothing to check")
        return
    python(session, environment(session, release), *RELEASES, "check")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite on every core and one more (pytest-xdist), all tiers but the scheduled one;
    arguments go to pytest: ``-- -m unit`` for the tier without builds, ``-- -m scheduled`` for that one."""
    # One worker more than cores: the workers also wait (on Chromium, on the builds they
    # start, on the timeouts some tests provoke), and with one a core a third of the CPU
    # stayed idle (1.37 of 2 cores busy over a run here).
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = cores + 1
    # The slowest tests, named at the end of every run: where the suite's time goes (runs here
    # took 13 to 17 minutes), from one run's own figures.
    python(session, environment(session), "-m", "pytest", "-n", str(workers), "--durations=30", *session.posargs)


@nox.session
def pdf(session: nox.Session) -> None:
    """The offline edition as PDF, one per language (the next `nox -s docs` links it)."""
    python(session, environment(session), "-m", "book_extensions", "editions", "pdf", *session.posargs)


@nox.session
def epub(session: nox.Session) -> None:
    """The offline edition as EPUB, one per language, checked by EPUBCheck."""
    python(session, environment(session), "-m", "book_extensions", "editions", "epub", *session.posargs)


@nox.session
def serve(session: nox.Session) -> None:
    """Live preview of one language (default: the first of conf.py): ``nox -s serve -- zh``; other
    arguments go to the command (``-- zh --out X --cache-root Y``: folders of its own)."""
    python(session, environment(session), "-m", "book_extensions", "serve", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Time cold, no-change, prose-edit and code-edit builds on a copy of docs/."""
    python(session, environment(session), "-m", "book_extensions", "bench", *session.posargs)


@nox.session
def weight(session: nox.Session) -> None:
    """First-load bytes, requests and first contentful paint of every page of the built site at
    375 px, on issue 20's phone (150 ms, 1.6 Mbit/s, CPU 4x slower); run `docs` first.
    `nox -s weight -- --page 'zh/*'` measures some pages, `-- --requests` lists each response."""
    python(session, environment(session), "-m", "book_extensions", "weight", *session.posargs)


@nox.session
def lighthouse(session: nox.Session) -> None:
    """Lighthouse's performance, accessibility, best-practices and SEO scores of every page of the
    built site (run `docs` first), mobile preset, served gzip-compressed like GitHub Pages; fails
    when a page scores below 100 in the last three. `nox -s lighthouse -- --page 'zh/*'` scores some
    pages. Needs Lighthouse in .tools/lighthouse/ (.ci/tools installs it)."""
    python(session, environment(session), "-m", "book_extensions", "lighthouse", *session.posargs)
