"""What the book's checks found in a run of ``.ci/gpu-check``, judged against the CPU's on the same torch.

    python -m book_extensions gpu-checks --log build.log --doctest output.txt \
        --write checks.txt [--torch 2.11.0+cu130]

The pages' expected errors and doctests are written for the pinned torch: on another release
some of them fail on every device (a message that changed wording, a behaviour that changed).
So a run on the GPU machine's torch is judged like its outputs, against the CPU on the same
release: each finding becomes one line that names no device and no line number (the page, the
code cell or the doctest example, the kind), and the set must equal
``results/cpu-torch-<release>-checks.txt``, written by the CPU rehearsal of that release
(``.ci/gpu-check --device cpu``, CONTRIBUTING.md, "The GPU job"). On the pinned release it must be empty.
Exit 0 when it agrees, 1 with the differences, 2 when there is nothing to compare with.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..paths import add_folder_options
from .toolchain import pinned_torch

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "/…/docs/en/detach.md:23: WARNING: code cell 1 was expected … [book.expect_error]"
WARNING = re.compile(r"(?:^|/)docs/(?P<page>[^:\s]+\.md):\d+: WARNING: (?P<cell>code cell \d+)?.*\[(?P<kind>[\w.]+)\]\s*$")
FAILED = re.compile(r'^File "(?P<page>[^"]+\.md)", line \d+, in \S+\nFailed example:\n(?P<example>(?:    .*\n?)+)', re.M)


def findings(log: str, doctest_output: str) -> list[str]:
    """One line per finding: ``<page>: <code cell N|doctest> <kind or example>``, sorted."""
    found = set()
    for line in ANSI.sub("", log).splitlines():
        match = WARNING.search(line)
        if match:
            found.add(f"{match['page']}: {match['cell'] or 'page'} [{match['kind']}]")
    for match in FAILED.finditer(doctest_output):
        example = " ".join(part.strip() for part in match["example"].splitlines() if part.strip())
        found.add(f"{match['page']}: doctest failed: {example}")
    return sorted(found)


def release(version: str) -> str:
    return version.split("+")[0]


def expected_path(results: Path, version: str) -> Path:
    return results / f"cpu-torch-{release(version)}-checks.txt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions gpu-checks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", type=Path, required=True, help="the build's output")
    parser.add_argument("--doctest", type=Path, required=True, help="the doctest builder's output.txt")
    parser.add_argument("--write", type=Path, required=True, help="where the findings go, one a line")
    add_folder_options(parser, "--results")
    parser.add_argument("--torch", help="the run's torch version (default: the installed torch's)")
    args = parser.parse_args(argv)
    version = args.torch
    if version is None:
        import torch

        version = torch.__version__
    read = [path.read_text(encoding="utf8", errors="replace") if path.is_file() else "" for path in (args.log, args.doctest)]
    if not read[1]:
        print(f"error: {args.doctest} is missing: the doctest build did not finish", file=sys.stderr)
        return 2
    found = findings(*read)
    args.write.write_text("".join(f"{line}\n" for line in found), encoding="utf8")
    if release(version) == pinned_torch():
        wanted, source = [], f"the pinned torch {release(version)} (none expected)"
    else:
        path = expected_path(args.results, version)
        if not path.is_file():
            print(f"error: no CPU findings for torch {release(version)} to compare with ({path.name}): "
                  f"run the rehearsal (.ci/gpu-check --device cpu) and commit its checks.txt as "
                  f"results/{path.name}", file=sys.stderr)
            return 2
        wanted = [line for line in path.read_text(encoding="utf8").splitlines() if line.strip()]
        source = f"results/{path.name}"
    missing, extra = sorted(set(wanted) - set(found)), sorted(set(found) - set(wanted))
    print(f"{len(found)} findings of the book's checks on torch {version}; compared with {source}: "
          + ("the same" if not (missing or extra) else f"{len(extra)} more, {len(missing)} fewer"))
    for line in extra:
        print(f"  only here: {line}")
    for line in missing:
        print(f"  only on the CPU: {line}")
    return 1 if missing or extra else 0
