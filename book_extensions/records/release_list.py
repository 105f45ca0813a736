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
    releases = []
    for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not RELEASE.fullmatch(text):
            raise ReleasesError(f"{path.name}:{number}: {text!r} is not a torch release such as 2.15.0")
        if text in releases:
            raise ReleasesError(f"{path.name}:{number}: {text} is listed twice")
        releases.append(text)
    return sorted(releases, key=version_key)
