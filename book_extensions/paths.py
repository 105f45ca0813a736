"""Where the book's repository and this package are, how a message names a path, and how a
file is written whole or not at all.

Standard library only, and importing nothing of the package: the noxfile, the build driver,
``toolchain`` and ``wheelhouse`` import it where Sphinx is not installed or not imported yet.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent  # book_extensions/: its locale/, static/, templates/
ROOT = PACKAGE.parent  # the repository: conf.py, docs/, examples/, results/, torch-releases.txt

# The folders the verbs read and write unless told otherwise (their --docs, --out, --cache-root,
# --results and --confdir): named once, so that no two verbs disagree.
DOCS = ROOT / "docs"
BUILD = ROOT / "_build"
CACHE_ROOT = ROOT / ".jupyter_cache"
RESULTS = ROOT / "results"
SITE = BUILD / "cpu" / "html"  # the web site a CPU build publishes
FOLDER_OPTIONS = {
    "--docs": (DOCS, "the pages, one folder per language"),
    "--out": (BUILD, "where builds write, one folder per device"),
    "--cache-root": (CACHE_ROOT, "the execution cache"),
    "--results": (RESULTS, "the records of every cell's outputs"),
    "--confdir": (ROOT, "the folder with conf.py"),
}


# Folders of each language's site that hold no pages: the offline editions' (replaced whole when
# they are copied in: attack 9, case 31) and, starting with "_", Sphinx's and the book's own
# (_static, _sources, _images, _notebooks...). A page may not be written there
# (checks/page_sources.py), and the checks of a site's pages leave them out (build.site_pages;
# attack 9, case 9: a page under _extra/ had no twin checked). Matched against a page's name
# without its suffix, or a site file's path, relative to its language's folder.
RESERVED_FOLDER = re.compile(r"(offline|_[^/]*)/.*|.*/_[^/]*/.*")


def add_folder_options(parser, *flags: str, helps: dict[str, str] | None = None) -> None:
    """Add the options ``flags`` (keys of :data:`FOLDER_OPTIONS`) to an argparse parser, with
    their defaults; ``helps`` replaces an option's help where a verb says more."""
    for flag in flags:
        default, help_text = FOLDER_OPTIONS[flag]
        help_text = (helps or {}).get(flag, help_text)
        parser.add_argument(flag, type=Path, default=default, help=f"{help_text} (default: {shown(default)})")


def shown(path: str | os.PathLike, base: Path = ROOT) -> str:
    """``path`` as a message names it: relative to ``base`` when inside it, else as given.

    ``base`` is the repository for its own files (a toolchain, a kernel spec), and the working
    directory (``Path.cwd()``) for the paths a command was given (``--docs``, ``--confdir``),
    which are read from there. The path is tried resolved (a relative one is read from the
    working directory), then as written: through a symlinked folder (a worktree's
    ``.toolchain``) it leaves the repository once resolved, and keeps the name it was given.
    """
    path = Path(path)
    for candidate in (path.resolve(), path):
        if candidate.is_relative_to(base):
            return candidate.relative_to(base).as_posix()
    return str(path)


def content_digest(path: str | os.PathLike) -> str | None:
    """What a page read from ``path``, as a digest: a file's bytes (sha256, read in pieces), a
    folder's sorted names ("folder " and theirs), another kind's type ("special <mode>": a pipe
    is never read); None for what cannot be read (gone, not allowed)."""
    try:
        status = os.stat(path)
        if stat.S_ISDIR(status.st_mode):
            names = "\0".join(sorted(os.listdir(path)))
            return "folder " + hashlib.sha256(names.encode(errors="surrogateescape")).hexdigest()
        if not stat.S_ISREG(status.st_mode):
            return f"special {stat.S_IFMT(status.st_mode):o}"
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: into a partial file of
    its own beside it (``.<name>.<random>.partial``), then renamed over it, so that a reader, or
    a build stopped halfway, finds the old file or the new one, never half of one; writers at
    once each rename their own (the last one wins). A failed write leaves no partial file. No
    fsync: what it guards against is a stopped process, not a power cut."""
    # The name cut so that the partial file's fits in a file name's 255 bytes.
    prefix = f".{path.name.encode()[:200].decode(errors='ignore')}."
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".partial")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data.encode("utf8") if isinstance(data, str) else data)
        os.chmod(partial, 0o644)  # as a file written the usual way (mkstemp's is 0600)
        os.replace(partial, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(partial)
        raise


# Beside the execution caches, which every build of the machine shares: what the steps after a
# build keep by digest of their inputs, so that another build folder need not make it again (the
# themes' sheets parsed and their fonts cut, site/asset_trimming.py; the contents the offline
# check found clean, checks/remote_loads.py).
BUILD_STORE = "trimming-store"  # named for its first use, trimming the theme's sheets


def build_store(cache_root: str | os.PathLike) -> Path:
    """The store of the execution cache root ``cache_root``, or the folder BOOK_TRIMMING_STORE
    names (the test suite's builds, each with a cache of its own, share one)."""
    return Path(os.environ.get("BOOK_TRIMMING_STORE") or Path(cache_root) / BUILD_STORE)


def keep_in_store(entry: Path | None, data: bytes) -> None:
    """Keep ``entry`` in a :func:`build_store` (none: no store). Builds of both languages may
    write the same entry at once (the same bytes). A store that cannot be written is left as
    it is: what it would have kept is made again next time."""
    if entry is None:
        return
    with suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(entry, data)


def write_own_file(path: Path, data: str | bytes) -> None:
    """:func:`write_atomically` for a file only the build writes (a record, a note): a folder
    found in its place is damage, removed first, so that the build makes its file again instead
    of failing on it for good (attack 8, case 26c; attack 9, cases 1 and 14)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    write_atomically(path, data)
