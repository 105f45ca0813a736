"""Sessions for building and checking the book; each does one thing.

    nox -s docs        build both languages (``-- --device cuda`` for the GPU job)
    nox -s doctest     run the "Check yourself" doctests of both languages
    nox -s tests       the test suite: the gates on small fixture books, and the real book
    nox -s serve       live preview of one language that rebuilds on save
    nox -s bench       how long builds take and how many pages each executes

Without nox installed, ``python3 noxfile.py -s docs`` installs it first (see below).
"""

import sys
from pathlib import Path

NOX_VERSION = "2026.10.20"
ROOT = Path(__file__).parent

if __name__ == "__main__":
    # Bootstrap for a machine with only Python and pip: put the pinned nox in
    # .nox-bootstrap/ and hand this command line over to it.
    import os
    import subprocess
    import venv

    bootstrap = ROOT / ".nox-bootstrap"
    python = bootstrap / "bin" / "python"
    if not python.exists():
        venv.create(bootstrap, with_pip=True)
        subprocess.run([python, "-m", "pip", "install", "-q", f"nox=={NOX_VERSION}"], check=True)
    os.execv(python, [str(python), "-m", "nox", "-f", __file__, *sys.argv[1:]])

import nox  # noqa: E402

nox.needs_version = f">={NOX_VERSION}"
nox.options.sessions = ["tests", "doctest"]
nox.options.reuse_venv = "yes"  # pip still syncs requirements.txt on every run
nox.options.default_venv_backend = "venv"

PYTHON = "3.11"
BUILD = ["python", "-m", "book_extensions.build"]


def install(session: nox.Session) -> None:
    session.install("-q", "-r", "requirements.txt")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the book, every language; arguments go to book_extensions.build."""
    install(session)
    session.run(*BUILD, "html", *session.posargs)


@nox.session(python=PYTHON)
def doctest(session: nox.Session) -> None:
    """Run every page's doctest blocks against the installed torch."""
    install(session)
    session.run(*BUILD, "doctest", *session.posargs)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The test suite (pytest); arguments go to pytest."""
    install(session)
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def serve(session: nox.Session) -> None:
    """Live preview of one language (default en): ``nox -s serve -- zh``."""
    install(session)
    language = session.posargs[0] if session.posargs else "en"
    session.run(
        "python", "-m", "book_extensions.serve", language,
        external=False,
    )


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Time cold, no-change, prose-edit and code-edit builds on a copy of docs/."""
    install(session)
    session.run("python", "-m", "book_extensions.bench", *session.posargs)
