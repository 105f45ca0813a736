"""Record the book under the installed torch release, and say what changed between releases.

    python -m book_extensions releases record     # in a release's environment (nox -s versions)
    python -m book_extensions releases changes    # every consecutive pair of recorded releases
    python -m book_extensions releases changes --from 2.15.0 --to 2.16.0   # fails on any change
    python -m book_extensions releases check      # the whole book on this torch (nox -s newest-torch)

``record`` executes every page the cache of this release's environment
(:mod:`..commands.toolchain`) does not hold yet, as the build does, and writes
``results/cpu-torch-<release>.json``. What the records mean, and how the book shows
them, is :mod:`book_extensions.records.release_changes`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..commands.toolchain import ToolchainError, environment_held
from ..configuration.settings import read, reference_language
from ..paths import BUILD, ROOT, add_folder_options
from . import cell_records
from .release_changes import changes, current_release, excerpt, record_path, recorded
from .release_list import RELEASES_FILE, ReleasesError, listed


def execute_missing(docs: Path, cache_dir: Path, timeout: int, pages=None) -> list[str]:
    """Execute the pages that the cache does not hold yet, as the build does; their names.

    ``pages``: (page, notebook, path of its source) to execute; default every page of the
    reference language."""
    from ..execution.cache_key import KernelMismatch, check_kernel
    from ..execution.page_execution import prepare_kernels

    try:
        check_kernel()
    except KernelMismatch as error:
        raise ReleasesError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="book-kernel-") as staging:
        return _execute_with(prepare_kernels("cpu", Path(staging)), docs, cache_dir, timeout, pages)


def _execute_with(kernel_environment, docs: Path, cache_dir: Path, timeout: int, pages) -> list[str]:
    """execute_missing, with the kernels' environment made."""
    from jupyter_cache import get_cache

    from ..execution import runner

    cache = get_cache(str(cache_dir))
    # Outside a build: nothing watched, no output limit.
    page_runner = runner.PageRunner(kernel_environment=kernel_environment)
    executed = []
    if pages is None:
        pages = [(page, notebook, docs / reference_language() / f"{page}.md")
                 for page, notebook in cell_records.book_notebooks(docs)]
    for page, notebook, path in pages:
        if not any(cell.cell_type == "code" for cell in notebook.cells):
            continue
        with runner.cache_lock(str(cache_dir)):
            record, _, _ = runner.cached_notebook(cache, notebook)
        if record is not None:
            continue
        result = page_runner.execute(notebook, timeout)
        if result.error is not None:
            raise ReleasesError(f"{docs.name}/{path.relative_to(docs).as_posix()}: execution stopped with {result.error}"
                                + (f" ({result.detail})" if result.detail else ""))
        try:
            runner.store(str(cache_dir), notebook, str(path), result.seconds, result.reads)
        except runner.CacheWriteError as error:
            raise ReleasesError(str(error)) from None
        executed.append(page)
    return executed


def record(results: Path, docs: Path, cache_root: Path) -> Path:
    """Execute (what is not cached) and record the book under the installed torch."""
    from ..execution.cache_key import cache_dir

    folder = cache_dir(cache_root, "cpu")
    executed = execute_missing(docs, folder, read(ROOT).nb_execution_timeout)
    data = cell_records.record("cpu", folder, docs)
    target = record_path(results, current_release())
    results.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf8")
    cells = sum(map(len, data["pages"].values()))
    print(f"torch {data['torch']}: executed {len(executed)} pages, recorded {cells} cells in {target.name}")
    return target


def report_changes(results: Path, docs: Path, pairs: list[tuple[str, str]]) -> int:
    """Print what changed in each pair of recorded releases; the number of changed cells."""
    digests = cell_records.current_digests(docs)
    total = 0
    for old, new in pairs:
        pair = [cell_records.load(record_path(results, r)) for r in (old, new)]
        missing = [r for r, data in zip((old, new), pair) if data is None]
        if missing:
            raise ReleasesError(f"no record of torch {missing[0]} in {results}: run `nox -s versions`")
        found = [d for d in changes(*pair, digests) if d.kind != "stale"]
        compared = sum(len(cells) for cells in pair[0]["pages"].values())
        print(f"torch {old} -> {new}: {compared} cells compared, {len(found)} changed")
        unread = cell_records.media_unread(*pair, (f"torch {old}", f"torch {new}"))
        if unread:
            print(f"  note: {unread}")
        for d in found:
            first, second = excerpt(d.first, d.second) if d.kind == "behaviour" else (d.first, d.second)
            print(f"  {cell_records.page_source(docs, d.page)} code cell {d.cell}: {first!r} -> {second!r}")
        total += len(found)
    return total


def check(results: Path, docs: Path, cache_root: Path, pinned: str) -> int:
    """The whole book on the installed torch: gates, doctests, and every cell that changed.

    What a maintainer reads before moving the pin: run by ``nox -s newest-torch``.
    """
    release = current_release()
    out = BUILD / f"torch-{release}"

    def build(builder: str) -> int:
        return subprocess.run([sys.executable, "-m", "book_extensions", "build", builder, "-q", "--docs", str(docs),
                               "--out", str(out), "--cache-root", str(cache_root)]).returncode

    steps = {"html build (every gate)": build("html"), "doctests": build("doctest")}
    record(results, docs, cache_root)
    changed = report_changes(results, docs, [(pinned, release)])
    print(f"torch {release} against the pinned {pinned}:")
    for step, code in steps.items():
        print(f"  {step}: {'passed' if code == 0 else 'FAILED'}")
    print(f"  outputs: {changed} cells print something else (listed above)")
    return 1 if changed or any(steps.values()) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions releases", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="execute the book under the installed torch and record it")
    add_folder_options(rec, "--cache-root")
    chg = commands.add_parser("changes", help="what changed between recorded releases")
    chg.add_argument("--from", dest="old", help="compare only this release ...")
    chg.add_argument("--to", dest="new", help="... with this one, and fail on any change")
    chk = commands.add_parser("check", help="build, doctest and record the installed torch; "
                                            "fail on anything that differs from the pinned release")
    add_folder_options(chk, "--cache-root")
    for command in (rec, chg, chk):
        add_folder_options(command, "--docs", "--results")
        command.add_argument("--releases", type=Path, default=RELEASES_FILE)
    args = parser.parse_args(argv)
    try:
        if args.command == "record":
            with environment_held():
                record(args.results, args.docs, args.cache_root)
            return 0
        if args.command == "check":
            from ..commands.toolchain import pinned_torch

            return check(args.results, args.docs, args.cache_root, pinned_torch())
        if bool(args.old) != bool(args.new):
            raise ReleasesError("--from and --to go together")
        if args.old:
            pairs = [(args.old, args.new)]
        else:
            releases = list(recorded(args.results, listed(args.releases)))
            pairs = list(zip(releases, releases[1:]))
        total = report_changes(args.results, args.docs, pairs)
    except (ReleasesError, cell_records.RecordError, cell_records.UncomparableOutput, ToolchainError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    # Comparing two named releases is the check before a torch upgrade: any change fails it.
    return 1 if args.old and total else 0
