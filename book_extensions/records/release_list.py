"""The torch releases the book is recorded under: ``torch-releases.txt``, one a line.

Read by the book (:mod:`.release_changes`), its commands (:mod:`.release_records`) and the
toolchain (:mod:`..commands.toolchain`, which the noxfile imports before any environment
exists): standard library only.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import ROOT

RELEASES_FILE = ROOT / "torch-releases.txt"
RELEASE = re.compile(r"\d+\.\d+\.\d+")


class ReleasesError(Exception):
    """A one-line reason why the releases cannot be listed, recorded or compared."""


def version_key(release: str) -> tuple[int, ...]:
    """2.9.1 before 2.13.0: releases sort by their numbers, not as text."""
    return tuple(int(part) for part in release.split("+")[0].split("."))


def listed(path: Path = RELEASES_FILE) -> list[str]:
    """The releases the book is recorded under, oldest first; ``#`` starts a comment."""
    releases, found = parsed(path, path.name)
    if found:
        raise ReleasesError(found[0])
    return releases


def problems(path: Path, name: str) -> list[str]:
    """Every problem of the list, one line each, the file called ``name`` (the build driver's
    check before Sphinx starts)."""
    return parsed(path, name)[1]


def parsed(path: Path, name: str) -> tuple[list[str], list[str]]:
    """(the releases, oldest first; one line per problem). The order of the lines is free:
    the releases are sorted by their numbers."""
    try:
        text = path.read_text(encoding="utf8")
    except FileNotFoundError:
        return [], [f"{name}: no such file (conf.py's book_releases_file names the list of torch releases)"]
    except UnicodeDecodeError as error:
        return [], [f"{name}: not UTF-8 (byte {error.object[error.start]:#04x} at offset {error.start})"]
    except OSError as error:
        return [], [f"{name}: cannot be read ({error.strerror or error})"]
    releases: dict[str, int] = {}
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not RELEASE.fullmatch(text):
            found.append(f"{name}:{number}: {text!r} is not a torch release such as 2.15.0")
        elif text in releases:
            found.append(f"{name}:{number}: {text} is listed twice (also on line {releases[text]})")
        else:
            releases[text] = number
    return sorted(releases, key=version_key), found
