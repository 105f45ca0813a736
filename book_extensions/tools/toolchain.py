"""The book's Python environments: one per torch release, created once, shared by every session.

    python3 -m book_extensions.tools.toolchain              # the pinned release: prints its python
    python3 -m book_extensions.tools.toolchain 2.13.0       # another release, same pins otherwise

PyPI's Linux torch wheel brings several GB of CUDA libraries, so nox sessions do not
each get a copy: they all run in ``.toolchain/torch-<release>/``. Each environment holds
``requirements.txt`` with only the torch line changed, and is installed with the
project's own pins as pip's constraints (``PIP_CONSTRAINT``), so that a constraint set
by the machine (``pip config list``) can neither change nor block what is installed.
A stamp of the pins lets an unchanged environment start without asking pip anything.

Standard library only: the noxfile imports this before any environment exists.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


RELEASES_FILE = ROOT / "torch-releases.txt"
RELEASE = re.compile(r"\d+\.\d+\.\d+")


def version_key(release: str) -> tuple[int, ...]:
    """2.9.1 before 2.13.0: releases sort by their numbers, not as text."""
    return tuple(int(part) for part in release.split("+")[0].split("."))


def listed_releases(path: Path = RELEASES_FILE) -> list[str]:
    """The releases the book is recorded under, oldest first; ``#`` starts a comment."""
    releases = []
    for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not RELEASE.fullmatch(text):
            raise ToolchainError(f"{path.name}:{number}: {text!r} is not a torch release such as 2.15.0")
        if text in releases:
            raise ToolchainError(f"{path.name}:{number}: {text} is listed twice")
        releases.append(text)
    return sorted(releases, key=version_key)


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


def ensure(release: str | None = None, quiet: bool = True, log=print) -> Path:
    """The environment for ``release`` (default: the pinned one), installed and in sync."""
    release = release or pinned_torch()
    text = pins(release)
    env = location(release)
    digest = hashlib.sha256(text.encode("utf8")).hexdigest()
    stamp = env / STAMP
    if python_of(env).exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return env
    if not python_of(env).exists():
        log(f"creating the torch {release} environment in {env.relative_to(ROOT)}/ (the first time only)")
        venv.create(env, with_pip=True, clear=True)
    stamp.unlink(missing_ok=True)
    # The constraints file sits inside the environment so that what it was built from stays visible.
    constraints = env / "book-pins.txt"
    constraints.write_text(text, encoding="utf8")
    command = [str(python_of(env)), "-m", "pip", "install", *(["-q"] if quiet else []),
               "-r", str(constraints)]
    result = subprocess.run(command, env=pip_environment(constraints))
    if result.returncode != 0:
        raise ToolchainError(f"pip could not install {constraints} (torch {release}); see pip's message above")
    stamp.write_text(digest + "\n")
    return env


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        env = ensure(args[0] if args else None, quiet=False, log=lambda m: print(m, file=sys.stderr))
    except ToolchainError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(python_of(env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
