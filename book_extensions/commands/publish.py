"""Replace the published site at once, and only with a good build (run by the build driver).

Sphinx writes each language into ``<out>/<device>/html-work/<language>/``, never into the
site, ``<out>/<device>/html/``. Once every asked language has built, :func:`publish`
assembles the next site beside the current one: a copy of each language just built (a
copy, not hard links: Sphinx rewrites its files in place in the next build), the other
languages of the book as the current site has them (the driver first checks that they are
what their own builds published: ``build.changed_kept_sites``), and the site root's files
(:mod:`..site.root_files`). Then two renames swap it in and the old site is deleted. A failed or
stopped build never gets here, so the last good site stays as it was; a folder the book
no longer has (a language removed from conf.py) is not carried over.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..configuration.settings import Language

WORK = "html-work"  # <out>/<device>/html-work/<language>/: where Sphinx writes the site
SITE = "html"
NEXT, PREVIOUS = ".html-next", ".html-previous"  # beside the site, while it is replaced


def remove(path: Path) -> None:
    """Remove a folder, a file or a link, whichever ``path`` is (or nothing, if it is not there)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def recover(device_dir: Path) -> None:
    """Undo what a publish stopped halfway left (the site put aside, or half a next site),
    and clear what is not a site where the site goes (a file someone put there)."""
    site, previous = device_dir / SITE, device_dir / PREVIOUS
    if previous.is_dir() and not site.exists():
        os.rename(previous, site)
    if site.exists() and not site.is_dir():
        remove(site)
    remove(previous)
    remove(device_dir / NEXT)


def why_not(error: OSError) -> str:
    """An error of :func:`publish` in one line: copytree's lists every file it could not copy."""
    failures = error.args[0] if isinstance(error, shutil.Error) and error.args else None
    if isinstance(failures, list) and failures and len(failures[0]) == 3:
        reason = str(failures[0][2]).split(": '")[0]  # "[Errno 28] No space left on device"
        return f"{reason} ({len(failures)} files not copied)"
    return str(error)


def publish(device_dir: Path, built: list[str], languages: list[Language], docs: Path) -> str | None:
    """Make the site the working folders of ``built`` plus the other languages as published;
    returns why the site root's files are missing, if they are (as root_files.write)."""
    from ..site import root_files

    recover(device_dir)
    site, following = device_dir / SITE, device_dir / NEXT
    following.mkdir(parents=True)
    for language in languages:
        code = language.code
        source = device_dir / WORK / code if code in built else site / code
        if source.is_dir():
            shutil.copytree(source, following / code, symlinks=True)
    problem = root_files.write(following, device_dir / "doctrees", languages, docs)
    if site.exists():
        os.rename(site, device_dir / PREVIOUS)
    os.rename(following, site)
    remove(device_dir / PREVIOUS)  # none for the first site
    return problem
