"""Sessions for building and checking the book; each does one thing.

    nox -s docs        build both languages, record their outputs in results/<device>.json
                       (``-- --device cuda`` for the GPU job)
    nox -s doctest     run the "Check yourself" doctests of both languages
    nox -s tests       the test suite: the gates on small fixture books, and the real book
    nox -s compare     compare results/cpu.json with results/cuda.json; fails on behaviour
    nox -s serve       live preview of one language that rebuilds on save
    nox -s bench       how long builds take and how many pages each executes
    nox -s weight      bytes and first paint of every page of the built site, in Chromium

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

BUILD = ["python", "-m", "book_extensions.build"]
# A GPU runner's CUDA build of torch lives in its system site-packages.
SEES_SYSTEM_TORCH = ["--system-site-packages"]


def device_of(args: list[str]) -> str:
    for index, arg in enumerate(args):
        if arg == "--device" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--device="):
            return arg.split("=", 1)[1]
    return "cpu"


def install(session: nox.Session, device: str = "cpu") -> None:
    if device == "cpu":
        session.install("-q", "-r", "requirements.txt")
        return
    # On a GPU runner, keep its own CUDA torch and pin everything else.
    pinned = [line for line in Path("requirements.txt").read_text().splitlines()
              if not line.startswith("torch==")]
    without_torch = Path(session.create_tmp()) / "requirements-without-torch.txt"
    without_torch.write_text("\n".join(pinned) + "\n")
    session.install("-q", "-r", str(without_torch))


@nox.session(venv_params=SEES_SYSTEM_TORCH)
def docs(session: nox.Session) -> None:
    """Build the book, every language, and record its outputs; arguments go to the build."""
    device = device_of(session.posargs)
    install(session, device)
    session.run(*BUILD, "html", *session.posargs)
    session.run("python", "-m", "book_extensions.devices", "record", "--device", device)


@nox.session(venv_params=SEES_SYSTEM_TORCH)
def doctest(session: nox.Session) -> None:
    """Run every page's doctest blocks against the installed torch."""
    install(session, device_of(session.posargs))
    session.run(*BUILD, "doctest", *session.posargs)


@nox.session
def compare(session: nox.Session) -> None:
    """Compare the recorded CPU and CUDA outputs cell by cell."""
    install(session)
    session.run("python", "-m", "book_extensions.devices", "compare")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (pytest); arguments go to pytest."""
    install(session)
    session.run("pytest", *session.posargs)


@nox.session
def serve(session: nox.Session) -> None:
    """Live preview of one language (default en): ``nox -s serve -- zh``."""
    install(session)
    language = session.posargs[0] if session.posargs else "en"
    session.run(
        "python", "-m", "book_extensions.serve", language,
        external=False,
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Time cold, no-change, prose-edit and code-edit builds on a copy of docs/."""
    install(session)
    session.run("python", "-m", "book_extensions.bench", *session.posargs)


@nox.session
def weight(session: nox.Session) -> None:
    """Page weight and first contentful paint of the built site (run `docs` first)."""
    install(session)
    session.run("python", "-m", "book_extensions.weight", *session.posargs)
