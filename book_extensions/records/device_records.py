"""The ``records`` verb: record every cell's outputs per device, compare CPU with CUDA.

    python -m book_extensions records record --device cuda   # after a CUDA build (or a doctest one)
    python -m book_extensions build html --record            # what nox -s docs runs: builds, then records
    python -m book_extensions records compare                # results/cuda.json vs the CPU record of its torch release

The records and their comparison are :mod:`.cell_records`; this is their command line
(command-line layer: no extension imports it), as :mod:`.release_records` is the releases'.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..paths import add_folder_options
from .cell_records import (
    SAME_RELEASE_RULES,
    RecordError,
    UncomparableOutput,
    cache_dir_for,
    compare,
    compares_media,
    cpu_record_for,
    cpu_record_name,
    current_digests,
    load,
    media_unread,
    page_source,
    release_of,
    without_media,
    write_record,
)


def compare_cpu_runs(run: dict, results: Path, docs: Path, path: Path) -> int:
    """A CPU record (the GPU job rehearsed on a CPU) against the CPU record of its torch
    release: identical but for its date, or every cell that differs. 0 when identical."""
    name = f"cpu-torch-{release_of(run)}.json"
    recorded = load(results / name)
    if recorded is None:
        print(f"error: {results / name} is missing: record torch {release_of(run)} first "
              f"(`nox -s versions -- {release_of(run)}`)", file=sys.stderr)
        return 2
    shown = f"{results.name}/{name}"
    unread = media_unread(recorded, run, (name, "this run"))
    if unread:  # an older record: compare what it holds, and say (after the verdict) what is not compared
        run = without_media(run) if compares_media(run) else run

    def note() -> None:
        if unread:
            print(f"note: {unread}")

    if {**run, "date": None} == {**recorded, "date": None}:
        dates = "" if run["date"] == recorded["date"] else f" (its outputs from {run['date']}, the record's from {recorded['date']})"
        print(f"record identical to {shown}{dates}")
        note()
        return 0
    fields = sorted(key for key in set(run) | set(recorded)
                    if key not in ("date", "pages") and run.get(key) != recorded.get(key))
    for key in fields:
        print(f"  {key}: {recorded.get(key)!r} recorded, {run.get(key)!r} in {path.name}")
    differences = compare(recorded, run, current_digests(docs), SAME_RELEASE_RULES)
    same_pages = run["pages"] == recorded["pages"]
    for d in differences:
        print(f"  {d.kind:<9} {page_source(docs, d.page)} code cell {d.cell}: {d.detail}")
    if same_pages:
        print(f"outputs identical to {shown}; the record differs in {', '.join(fields)}")
    else:
        unexplained = "" if differences else " (in what was recorded; the comparison explains none)"
        print(f"record differs from {shown}: {len(differences)} cells{unexplained}")
    note()
    return 1


def record_command(args: argparse.Namespace) -> int:
    """``records record``: from a cache no build is writing (the driver's lock on its root)."""
    from filelock import FileLock, Timeout

    args.cache_root.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(args.cache_root / "book-build.lock"), timeout=0):  # the build driver's flock
            write_record(args.device, cache_dir_for(args.device, args.cache_root), args.docs, args.results)
    except Timeout:
        print(f"error: a build is using the execution cache {args.cache_root}: record when it has finished "
              "(`build html --record` records what it built)", file=sys.stderr)
        return 2
    except (RecordError, UncomparableOutput) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions records", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="write results/<device>.json from the execution cache")
    rec.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    add_folder_options(rec, "--cache-root", "--docs", "--results")
    cmp_ = commands.add_parser("compare", help="compare results/cuda.json with the CPU record of its torch release "
                                  "(cpu-torch-<release>.json when recorded, else cpu.json)")
    add_folder_options(cmp_, "--results", "--docs")
    cmp_.add_argument("--record", type=Path, help="the record to compare (default: cuda.json in --results); "
                      "a CPU record must equal the CPU record of its torch release in --results")
    args = parser.parse_args(argv)

    if args.command == "record":
        return record_command(args)

    if args.record is not None:
        if not args.record.exists():
            print(f"error: {args.record} does not exist", file=sys.stderr)
            return 2
        if load(args.record)["device"] == "cpu":
            return compare_cpu_runs(load(args.record), args.results, args.docs, args.record)
    cuda = load(args.record or args.results / "cuda.json")
    cpu = cpu_record_for(args.results, cuda)
    if cpu is None:
        print(f"error: {args.results / 'cpu.json'} is missing: run `nox -s docs` first", file=sys.stderr)
        return 2
    if cuda is None:
        print("No CUDA run is recorded yet (results/cuda.json): nothing to compare.")
        return 0
    differences = compare(cpu, cuda, current_digests(args.docs))
    print(f"CPU ({cpu['torch']}, {cpu_record_name(args.results, cuda)}) against CUDA ({cuda['torch']}, {cuda['device_name']}, "
          f"CUDA {cuda['cuda']}, {cuda['date']})")
    unread = media_unread(cpu, cuda, (cpu_record_name(args.results, cuda), "cuda.json"))
    if unread:
        print(f"  note: {unread}")
    for d in differences:
        print(f"  {d.kind:<9} {page_source(args.docs, d.page)} code cell {d.cell}: {d.detail}")
    failing = [d for d in differences if d.fails]
    print(f"{len(failing)} behaviour differences, "
          f"{len([d for d in differences if not d.fails])} stale or missing cells")
    return 1 if failing else 0
