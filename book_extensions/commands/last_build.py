"""The note of a language's last good build, and the digests of what a build reads.

Each language's doctrees hold ``book-last-build.json`` (:data:`NOTE`), written when its html
build ends well and removed when any build starts: what the build read (:func:`code_parts`,
:func:`site_input_parts`, the sources), the saved environment's stamp and the files it
published. The build driver (:mod:`.build`) compares a new build's inputs with it to decide
whether Sphinx must read every page again, or need not start at all (then
:func:`report_nothing_read` says so in the executions report).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path

from ..configuration import settings, site_inputs
from ..configuration.settings import Language
from ..configuration.site_inputs import digest_of_files
from ..execution.cache_key import DEPENDENCIES_FILE, EXECUTIONS_FILE, cache_dir
from ..execution.kernel_inputs import installed_packages
from ..paths import content_digest, shown, write_atomically, write_own_file
from . import publish

NOTE = "book-last-build.json"  # beside each language's doctrees: its last successful build
# Environment variables that change what a build or its kernels do.
ENVIRONMENT = ("PYTHON", "JUPYTER", "IPYTHON", "BOOK_", "SPHINX", "SOURCE_DATE_EPOCH", "TZ", "LANG", "LC_",
               "OMP_", "MKL_", "TORCH_", "PYTORCH_", "CUDA_")


def code_parts(args: argparse.Namespace) -> dict[str, str]:
    """What every page depends on, beyond the page, by part: the extensions' code, conf.py,
    the Python and its packages, the settings (and, per language, :func:`language_part`).
    A change reads every page again. Digested once a run, for every language."""
    # By the metadata folders on the path (as the cache key): importlib.metadata's distributions()
    # also reads the working directory ("" on the path), and a run of the tests saw its list change
    # between two builds of one test with nothing installed ("read again: packages changed").
    packages = installed_packages()
    settings = {
        "python": sys.executable, "device": args.device,
        "cache": str(cache_dir(args.cache_root, args.device)), "sphinx": args.sphinx_args,
        "environment": sorted((k, v) for k, v in os.environ.items() if k.startswith(ENVIRONMENT)),
    }
    # A stricter rule or an edited example must reach every page (site_inputs.code_inputs).
    return {
        **{name: digest_of_files(*where) for name, where in site_inputs.code_inputs(args.docs, args.confdir).items()},
        "packages": hashlib.sha256("\n".join(packages).encode()).hexdigest(),
        "settings": hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest(),
    }


def language_part(language: Language) -> dict[str, str]:
    return {"language": hashlib.sha256(json.dumps(asdict(language), sort_keys=True).encode()).hexdigest()}


def site_input_parts(args: argparse.Namespace) -> dict[str, str] | None:
    """What an html build reads besides the code's parts, by part: when these and the code's
    are unchanged, so is the site it makes. None for the other builders."""
    if args.builder != "html":
        return None
    return {"builder": args.builder,
            "records": digest_of_files(*site_inputs.record_inputs(
                args.confdir, settings.read(args.confdir, settings.override_pairs(args.sphinx_args)))),
            # The offline editions, which every page links and the site carries (a few MB: hashed in ms).
            "offline editions": digest_of_files((args.out / args.device / "offline", "**/*"))}


# Beside the build's output: of each page of the docs folder, the digest of what another
# language's build reads of it (:func:`compared_part`), by the digest of the file's content.
COMPARED_PARTS = "book-compared-parts.json"


def compared_parts(args: argparse.Namespace, checker: str) -> dict[str, tuple[str, str]]:
    """Each file of the language folders (by its path from the docs folder): the digest of its
    content, and of what another language's build reads of it (:func:`compared_part`). Digested
    once a run; a file's part is taken from the previous run's when its content is the same and
    ``checker`` (the digest of the code and packages that read the pages: :func:`code_parts`) too."""
    known = read_compared_parts(args, checker)
    found, by_content = {}, {}
    for folder in sorted(path for path in args.docs.iterdir() if path.is_dir()):
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                content = hashlib.sha256(path.read_bytes()).hexdigest()
                by_content[content] = known.get(content) or compared_part(path, content)
                found[str(path.relative_to(args.docs))] = (content, by_content[content])
    if by_content != known:
        with suppress(OSError):  # only a saving: the next build digests them again
            write_own_file(args.out / args.device / COMPARED_PARTS,
                           json.dumps({"checker": checker, "parts": by_content}, sort_keys=True))
    return found


def pages_part(args: argparse.Namespace, code: str, compared: dict[str, tuple[str, str]]) -> str:
    """The digest of the pages one language's html build reads: its own folder's files and the
    files beside the language folders whole; of every other language's pages, their names and
    what the build compares or shows of them (``compared``: :func:`compared_parts`, which has
    read every file of the language folders already). An edit of one language's prose then
    builds that language alone (it built every language: the author's loop of issue 30)."""
    digest = hashlib.sha256()
    site_inputs.add_files(digest, args.docs, "*")
    for name, (content, part) in compared.items():
        digest.update(f"{name}\0{content if Path(name).parts[0] == code else part}\0".encode())
    return digest.hexdigest()


def read_compared_parts(args: argparse.Namespace, checker: str) -> dict[str, str]:
    """The parts noted by an earlier build with the same ``checker``, or {} (each page is read)."""
    try:
        noted = json.loads((args.out / args.device / COMPARED_PARTS).read_text(encoding="utf8"))
        parts = noted["parts"] if noted.get("checker") == checker else {}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return {}
    return parts if isinstance(parts, dict) and all(isinstance(v, str) for v in parts.values()) else {}


def compared_part(path: Path, content: str) -> str:
    """The digest of what another language's build reads of the page at ``path``: what the
    parity check compares (front matter, code cells with their comments, headings and their
    anchors, labels, doctest blocks, exercises' options: checks/parity.py), which is also all
    that the cell checks, the pages' code record and the language switch read of it. A file
    that is not such a page, or does not read, counts by its whole ``content``."""
    if path.suffix != ".md":
        return content
    from ..checks import parity

    try:
        page = parity.read_page(path)
        compared = [page.front_matter, page.code_cells, page.headings, page.labels, page.checked_blocks,
                    page.anchors(), page.exercises]
        return hashlib.sha256(json.dumps(compared, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    except Exception:  # noqa: BLE001 - not UTF-8, not a page: its build reports it
        return content


def why_read_again(note: dict, parts: dict[str, str] | None, site_files: dict | None,
                   dependencies: list[str] | None = None) -> str:
    """What changed since the language was last published, as the build's line says it:
    " (read again: pages changed)"; empty without an earlier note to compare with.
    ``dependencies``: :func:`changed_dependencies`'s."""
    noted = note.get("site_parts")
    if parts is None or not isinstance(noted, dict):
        return ""
    changed = [name for name in parts if noted.get(name) != parts[name]]
    if not changed and site_files is not None and site_files != note.get("files"):
        changed = ["the published files"]
    if not changed:
        changed = ["the list of dependencies"] if dependencies is None else [shown(path) for path in dependencies]
    return f" (read again: {', '.join(changed)} changed)" if changed else ""


def changed_dependencies(doctrees: Path) -> list[str] | None:
    """Each file outside the docs folder that the language's pages were read from (a
    ``{literalinclude}``, a program a cell loads, a file or folder a kernel read:
    kernel/reads.py) and that now has other content or is gone,
    as the last build that ended well listed them (:data:`DEPENDENCIES_FILE`, written by
    :mod:`..execution.changed_pages`); None without that list: nothing can be trusted."""
    try:
        noted = json.loads((doctrees / DEPENDENCIES_FILE).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    if not isinstance(noted, dict):
        return None
    changed = []
    for path, digest in noted.items():
        if content_digest(path) != digest:
            changed.append(path)
    return changed


def source_files(args: argparse.Namespace, code: str) -> dict[str, str]:
    """Each source file of a language and its content's digest (which page changed is the
    extensions' to tell: execution/changed_pages.py, by content)."""
    folder = args.docs / code
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def folder_files(folder: Path, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """Each file of a built folder, its mode and its content's digest: what publishing copied,
    and must still be there as it was (a size or a time an edit in place can keep; its content
    it cannot; and a sandboxed cell can change a mode, which Landlock leaves alone: attack 6,
    case 5). A file that cannot be read is noted as such, not a traceback. A symbolic link is
    noted as one, with its target, never followed (a link to a copy of a page outside the site
    is not the page); ``leave_out``: top-level entries not to list."""
    found = {}
    for root, folders, files in os.walk(folder):
        here = Path(root)
        if here == folder:
            folders[:] = [name for name in folders if name not in leave_out]
            files = [name for name in files if name not in leave_out]
        for name in [*files, *(f for f in folders if (here / f).is_symlink())]:
            path = here / name
            found[str(path.relative_to(folder))] = f"link:{os.readlink(path)}" if path.is_symlink() else file_entry(path)
    return dict(sorted(found.items()))


def file_entry(path: Path) -> str:
    """A file's mode and the digest of its content, or why it cannot be read."""
    try:
        return f"{path.stat().st_mode & 0o7777:o}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
    except OSError as error:
        return f"unreadable:{error.strerror}"


# Beside the site: what the last publish put there, each language's files and the root's.
PUBLISHED = "book-published.json"


def published_now(device_dir: Path, codes: list[str]) -> dict:
    """What the site holds: each language's files, and the root's (every file outside them)."""
    site = device_dir / publish.SITE
    return {"languages": {code: folder_files(site / code) for code in codes if (site / code).is_dir()},
            "root": folder_files(site, leave_out=tuple(codes)) if site.is_dir() else {}}


def note_published(device_dir: Path, codes: list[str]) -> None:
    """Noted by the build driver right after it publishes, and by nothing else."""
    write_own_file(device_dir / PUBLISHED, json.dumps(published_now(device_dir, codes), indent=1) + "\n")


def read_published(device_dir: Path) -> dict:
    """The record of the last publish, or {} (nothing can be vouched for) when missing or damaged."""
    try:
        record = json.loads((device_dir / PUBLISHED).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def environment_stamp(doctrees: Path) -> list[int] | None:
    """The saved environment's size and time: another Sphinx run on these doctrees (the live
    preview, sphinx-build by hand) changes it, and may have read pages without failing."""
    try:
        stat = (doctrees / "environment.pickle").stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


# How a pickle ends (its STOP opcode): a doctree cut short (a build killed while Sphinx wrote
# it, a full disk) does not.
PICKLE_END = b"."
# In the note: each doctree's digest as the build that wrote the note left it.
DOCTREES = "doctrees"


def doctree_digests(doctrees: Path) -> dict[str, str]:
    """Each saved doctree of ``doctrees`` (by its name there) and its content's digest."""
    return {str(path.relative_to(doctrees)): content_digest(str(path)) or "unreadable"
            for path in sorted(doctrees.rglob("*.doctree"))}


def damaged_doctrees(doctrees: Path, note: dict) -> list[str]:
    """The saved doctrees that are not as the last good build left them (its note's digests):
    damaged in place, an older copy put back, a folder or a link in a file's place; without
    digests noted, those cut short. Sphinx loads a doctree it did not read again to write its
    page, and stopped with a crash report (attack 12, case 36; attack 13, cases 6 and 10); the
    build reads every page again instead."""
    noted = note.get(DOCTREES)
    if isinstance(noted, dict):
        # Only a doctree's name inside the folder: the note is a file of the build folder, and a
        # damaged one must not name a path elsewhere (the build removes what it names).
        return sorted(name for name, digest in noted.items() if own_doctree(name) and (
            (doctrees / name).is_symlink() or content_digest(str(doctrees / name)) != digest))
    damaged = []
    for path in sorted(doctrees.rglob("*.doctree")):
        try:
            with path.open("rb") as saved:
                saved.seek(-1, os.SEEK_END)
                if saved.read(1) == PICKLE_END and not path.is_symlink():
                    continue
        except OSError:  # empty (seek before the start), unreadable, a folder
            pass
        damaged.append(str(path.relative_to(doctrees)))
    return damaged


def own_doctree(name: object) -> bool:
    """Whether ``name`` (from a note) names a doctree inside its folder."""
    path = Path(name) if isinstance(name, str) else None
    return path is not None and path.suffix == ".doctree" and not path.is_absolute() and ".." not in path.parts


def read_note(doctrees: Path) -> dict:
    """The note, or {} (no trust) when it is missing or damaged."""
    try:
        note = json.loads((doctrees / NOTE).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return {}
    return note if isinstance(note, dict) else {}


def forget_note(doctrees: Path) -> None:
    """From now until it succeeds, the build of this language is not trusted."""
    publish.remove(doctrees / NOTE)


def write_note(doctrees: Path, note: dict) -> None:
    doctrees.mkdir(parents=True, exist_ok=True)
    write_atomically(doctrees / NOTE, json.dumps(note, indent=1) + "\n")


def report_nothing_read(doctrees: Path) -> None:
    """The executions report of a build that did not start Sphinx: it read and executed nothing."""
    path = doctrees / EXECUTIONS_FILE
    with suppress(OSError, ValueError):
        report = json.loads(path.read_text(encoding="utf8"))
        path.write_text(json.dumps({**report, "read": [], "executed": [], "seconds": {}}, indent=1) + "\n")
