"""The book's Python environments: one per torch release, created once, shared by every session.

    python3 -m book_extensions toolchain              # the pinned release: prints its python
    python3 -m book_extensions toolchain 2.13.0       # another release, same pins otherwise

PyPI's Linux torch wheel brings several GB of CUDA libraries, so nox sessions do not
each get a copy: they all run in ``.toolchain/torch-<release>/``. Each environment holds
``requirements.txt`` with only the torch line changed, and is installed with the
project's own pins as pip's constraints (``PIP_CONSTRAINT``), so that a constraint set
by the machine (``pip config list``) can neither change nor block what is installed.
A stamp of the pins lets an unchanged environment start without asking pip anything.
One session at a time creates or updates an environment (a lock beside it; the others
wait), and a package that ``requirements.txt`` no longer names is uninstalled. A build holds
the same lock shared for its whole run (:func:`hold_shared`), so an update waits until no
build is running on the environment, and a build does not start while one is updating it.

Standard library only: the noxfile imports this before any environment exists.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import subprocess
import sys
import venv
from contextlib import contextmanager
from pathlib import Path

from ..paths import ROOT, shown

REQUIREMENTS = ROOT / "requirements.txt"
HOME = ROOT / ".toolchain"
STAMP = "book-pins.sha256"
TORCH_PIN = re.compile(r"^torch==(\S+)\s*$", re.M)


class ToolchainError(Exception):
    """A one-line reason why an environment cannot be made."""


def pinned_torch(requirements: Path = REQUIREMENTS) -> str:
    found = TORCH_PIN.findall(requirements.read_text(encoding="utf8"))
    if len(found) != 1:
        raise ToolchainError(f"{requirements.name}: expected exactly one 'torch==<release>' line, found {len(found)}")
    return found[0]


def pins(release: str | None = None, requirements: Path = REQUIREMENTS) -> str:
    """requirements.txt with torch pinned to ``release`` (default: as written)."""
    text = requirements.read_text(encoding="utf8")
    pinned_torch(requirements)  # exactly one torch line
    if release is None:
        return text
    if not re.fullmatch(r"\d+(\.\d+){1,2}([a-z]+\d*)?(\+\w+)?", release):
        raise ToolchainError(f"not a torch release: {release!r} (expected e.g. 2.13.0)")
    return TORCH_PIN.sub(f"torch=={release}", text)


def newest_release(python: str = sys.executable) -> str:
    """The newest torch release the package index offers (pre-releases excluded)."""
    result = subprocess.run([python, "-m", "pip", "index", "versions", "torch"],
                            capture_output=True, text=True, env=pip_environment(REQUIREMENTS))
    found = re.match(r"torch \(([^)]+)\)", result.stdout)
    if result.returncode != 0 or not found:
        raise ToolchainError(f"could not ask the package index for torch's releases: {result.stderr.strip()[-200:]}")
    return found.group(1)


def location(release: str) -> Path:
    return HOME / f"torch-{release}"


def python_of(env: Path) -> Path:
    return env / "bin" / "python"


def pip_environment(constraints: Path) -> dict[str, str]:
    """pip's environment: our pins as the only constraints, whatever the machine sets."""
    env = dict(os.environ)
    env["PIP_CONSTRAINT"] = str(constraints)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.pop("PIP_REQUIRE_HASHES", None)
    return env


def in_sync(env: Path, digest: str) -> bool:
    stamp = env / STAMP
    return python_of(env).exists() and stamp.exists() and stamp.read_text().strip() == digest


def lock_file(env: Path) -> Path:
    """The environment's lock: beside it, since creating an environment clears its folder."""
    return env.with_name(env.name + ".lock")


def only_readers(lock: Path) -> bool:
    """Whether the lock is held shared only (builds running), not by a session installing."""
    with open(lock) as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


@contextmanager
def locked(env: Path, log):
    """One session at a time creates or updates an environment, and only while no build runs
    on it; another waits, saying for what.

    The lock file sits beside the environment, and is an flock: the kernel frees it when its
    holder dies, and it needs no package."""
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file(env), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if only_readers(lock_file(env)):
                log(f"waiting for {shown(env, ROOT)}/: a build (or `nox -s serve`) is running on it, and "
                    "requirements.txt changed; it is updated once they end")
            else:
                log(f"waiting for {shown(env, ROOT)}/: another session is creating or updating it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def hold_shared(prefix: Path | None = None) -> int | None:
    """A shared lock on the environment a build runs from (default: this Python's), for the
    build to hold until it ends (the descriptor goes to its children too): no session updates
    the environment under it. None when that Python is no environment of ours (the GPU machine's
    own); ToolchainError when a session is creating or updating it, or an update was left unfinished."""
    env = Path(sys.prefix if prefix is None else prefix)
    if not (env / "book-pins.txt").exists():  # written by ensure(), kept while it updates
        return None
    fd = os.open(lock_file(env), os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ToolchainError(f"{shown(env, ROOT)}/ is being created or updated by another session "
                             "(requirements.txt changed): build again once it is done") from None
    if not (env / STAMP).exists():
        os.close(fd)
        release = env.name.removeprefix("torch-")
        raise ToolchainError(f"{shown(env, ROOT)}/ was left half-updated (its update failed or was stopped): "
                             f"finish it with `python3 -m book_extensions toolchain {release}`, then build again")
    return fd


@contextmanager
def environment_held():
    """:func:`hold_shared` for a with block: a tool that executes pages in its own process
    (determinism, releases record) keeps the environment from being updated under it."""
    fd = hold_shared()
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


KEPT = {"pip", "setuptools", "wheel"}  # the environment's own tools, pinned or not


def names(requirements: str) -> set[str]:
    """The packages a requirements text names, in pip's normalised spelling."""
    found = set()
    for line in requirements.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            found.add(normalised(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line).group()))
    return found


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def remove_dropped(env: Path, dropped: set[str], quiet: bool, log) -> None:
    """Uninstall the packages an earlier requirements.txt installed and this one no longer names,
    unless a package that stays still requires one (pip show says which do)."""
    if not dropped:
        return
    shown_packages = subprocess.run([str(python_of(env)), "-m", "pip", "show", *sorted(dropped)],
                                    capture_output=True, text=True, env=pip_environment(env / "book-pins.txt"))
    removable = []
    for block in shown_packages.stdout.split("\n---\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "Name" not in fields:
            continue
        required_by = {normalised(n.strip()) for n in fields.get("Required-by", "").split(",") if n.strip()}
        if required_by <= dropped:
            removable.append(fields["Name"])
    if not removable:
        return
    log(f"removing {', '.join(removable)} from {shown(env, ROOT)}/: requirements.txt no longer names them")
    result = subprocess.run([str(python_of(env)), "-m", "pip", "uninstall", "-y", *(["-q"] if quiet else []),
                             *removable], env=pip_environment(env / "book-pins.txt"))
    if result.returncode != 0:
        raise ToolchainError(f"pip could not uninstall {', '.join(removable)} from {shown(env, ROOT)}; "
                             "see pip's message above")


def ensure(release: str | None = None, quiet: bool = True, log=print) -> Path:
    """The environment for ``release`` (default: the pinned one), installed and in sync."""
    release = release or pinned_torch()
    text = pins(release)
    env = location(release)
    digest = hashlib.sha256(text.encode("utf8")).hexdigest()
    if in_sync(env, digest):
        return env
    with locked(env, log):
        if in_sync(env, digest):  # made by the session this one waited for
            return env
        if not python_of(env).exists():
            log(f"creating the torch {release} environment in {shown(env, ROOT)}/ (the first time only)")
            venv.create(env, with_pip=True, clear=True)
        (env / STAMP).unlink(missing_ok=True)
        # The pins it was last installed from (book-pins.txt) stay in the environment, so that
        # what it was built from stays visible and what a new requirements.txt drops can go;
        # the new pins take their place only once pip has installed them.
        installed = env / "book-pins.txt"
        before = installed.read_text(encoding="utf8") if installed.exists() else ""
        constraints = env / "book-pins.new.txt"
        constraints.write_text(text, encoding="utf8")
        command = [str(python_of(env)), "-m", "pip", "install", *(["-q"] if quiet else []),
                   "-r", str(constraints)]
        result = subprocess.run(command, env=pip_environment(constraints))
        if result.returncode != 0:
            raise ToolchainError(f"pip could not install {constraints} (torch {release}); see pip's message above")
        constraints.replace(installed)
        remove_dropped(env, names(before) - names(text) - KEPT, quiet, log)
        (env / STAMP).write_text(digest + "\n")
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions toolchain", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("release", nargs="?", help="a torch release, such as 2.13.0 (default: the one requirements.txt pins)")
    args = parser.parse_args(argv)
    try:
        env = ensure(args.release, quiet=False, log=lambda m: print(m, file=sys.stderr))
    except ToolchainError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(python_of(env))
    return 0
