"""Two executions of the book print the same: finds cells whose output changes from run to run.

    python -m book_extensions.tools.determinism [--docs docs] [--cache-root .jupyter_cache]

A page served from the cache hides a cell that prints the time, an unseeded random
number or a set's order: its output was right once, and the next cold build differs.
This executes every page once more, into a scratch cache, and compares each code
cell's outputs with what the build's cache holds (build first: ``nox -s docs``).
Object addresses are blanked on both sides, as on the pages.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .. import records, releases
from ..cache_key import cache_dir
from ..config import read, reference_language
from .releases import execute_missing

ROOT = Path(__file__).resolve().parents[2]


def shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def differences(first: dict, second: dict, docs: Path) -> list[str]:
    """One line per code cell whose outputs differ between two records of the same book."""
    found = []
    for page, cells in first["pages"].items():
        for number, (a, b) in enumerate(zip(cells, second["pages"].get(page, [])), start=1):
            if a["outputs"] != b["outputs"]:
                left, right = releases.excerpt(" | ".join(a["outputs"]), " | ".join(b["outputs"]))
                found.append(f"{shown(docs / reference_language() / f'{page}.md')}: code cell {number} printed differently in two "
                             f"executions: {left!r} then {right!r}; seed it, sort it, or print less")
    return found


def check(docs: Path, cache_root: Path, timeout: int) -> tuple[int, list[str]]:
    """How many code cells were executed again, and the lines about those that differ."""
    first = records.record("cpu", cache_dir(cache_root, "cpu"), docs)
    with tempfile.TemporaryDirectory(prefix="book-determinism-") as scratch:
        execute_missing(docs, Path(scratch), timeout)
        second = records.record("cpu", Path(scratch), docs)
    return sum(map(len, first["pages"].values())), differences(first, second, docs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions.tools.determinism",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    parser.add_argument("--cache-root", type=Path, default=ROOT / ".jupyter_cache")
    args = parser.parse_args(argv)
    timeout = read(ROOT).nb_execution_timeout
    try:
        cells, found = check(args.docs, args.cache_root, timeout)
    except releases.ReleasesError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    print(f"{cells} code cells executed twice: {len(found)} printed differently")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
