"""What a language's site is built from besides the Python environment and the build's options:
the files, by part, that the build driver digests to tell whether a site is unchanged, and that
an offline edition's stamp digests to tell whether it is still this book.

One list for both, since two lists drifted: the editions' left out ``torch-releases.txt``,
which every page reads (the other releases' outputs), and the typography rules, so an edition
stayed current after either changed. Standard library only (and the settings it is given):
the build driver reads it before Sphinx starts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..paths import PACKAGE, ROOT

Files = tuple[tuple[Path, str], ...]  # (folder, glob pattern) pairs


def add_files(digest, folder: Path, pattern: str = "**/*") -> None:
    """Each file's path (relative to ``folder``) and its content."""
    for path in sorted(folder.glob(pattern)):
        # A .mo is compiled from the .po beside it (the build driver compiles it), which counts.
        if path.is_file() and "__pycache__" not in path.parts and ".mo" not in path.suffixes:
            digest.update(f"{path.relative_to(folder)}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())


def digest_of_files(*where: tuple[Path, str]) -> str:
    """The digest of the files that match each (folder, pattern), by path and content (:func:`add_files`)."""
    digest = hashlib.sha256()
    for folder, pattern in where:
        add_files(digest, folder, pattern)
    return digest.hexdigest()


def digest_of(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def code_inputs(docs: Path, confdir: Path) -> dict[str, Files]:
    """What every page is read with, beside the page, by part: a change reads every page again."""
    return {
        "book_extensions": ((PACKAGE, "**/*"),),  # the code of every build
        "conf.py": ((confdir, "conf.py"),),
        # What the extensions read besides the pages (term lists, search words, the typography
        # rules of checks/typography.py) and the examples pages load.
        "rules beside the pages": (*((docs, path.name) for path in sorted(docs.iterdir()) if path.is_file()),
                                   (docs.parent, ".autocorrectrc")),
        "examples": ((confdir, "examples/**/*"),),
    }


def record_inputs(confdir: Path, config) -> Files:
    """The records pages show and the release list that orders them (conf.py's
    ``book_results_dir`` and ``book_releases_file``, read from ``config``: :func:`.settings.read`'s
    or Sphinx's), and the pinned toolchain."""
    releases = Path(confdir, config.book_releases_file)
    return ((Path(confdir, config.book_results_dir), "*.json"), (releases.parent, releases.name),
            (ROOT, "requirements.txt"))


def edition_parts(docs: Path, code: str, confdir: Path, config) -> dict[str, str]:
    """What one language's offline edition is built from, by part: the build's code and record
    inputs and that language's pages (the other language's pages change nothing it prints)."""
    parts = {name: digest_of_files(*where) for name, where in code_inputs(docs, confdir).items()}
    # What pages include from docs/ outside every language's folder (docs/shared/...): an edit
    # there left the edition linked as current (attack 9, case 3). Files a page includes from
    # outside docs/ and examples/ are not in it.
    languages = {language["code"] if isinstance(language, dict) else language.code for language in config.book_languages}
    shared = sorted(path for path in docs.iterdir() if path.is_dir() and path.name not in languages) if docs.is_dir() else []
    return {**parts, "records": digest_of_files(*record_inputs(confdir, config)),
            "pages": digest_of_files((docs / code, "**/*")),
            "shared pages": digest_of_files(*((folder, "**/*") for folder in shared))}
