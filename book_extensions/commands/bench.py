"""Benchmark the build: how long it takes and how many pages it executes.

    python -m book_extensions bench

On a copy of docs/ and examples/ (with its own output and an empty execution cache, so your
cache and _build/ are untouched), builds both languages four times:

1. cold: nothing cached;
2. no change;
3. after a prose-only edit of one page (both languages);
4. after editing one code cell of that page (both languages, identically).

Prints wall time and the pages each language executed, then each timed target and whether
the run met it:

- a no-change rebuild takes at most a tenth of a cold build (the driver does not start
  Sphinx when nothing changed; issue 21);
- a rebuild after a prose edit takes at most 3 s (issue 30);
- a rebuild after a code edit takes at most 3 s more than the edited page's cells ran (issue 30;
  the build's executions report says how long they ran).

Beside them, by the page counts: the second language executes nothing, a prose edit executes
nothing and a code edit executes exactly one page. A missed target is printed, not an exit
status: times move with the machine's load (run it on a quiet one); a failed build is one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..configuration.settings import book_languages
from ..execution.cache_key import EXECUTIONS_FILE
from ..myst_source import code_cells
from ..paths import DOCS, ROOT

NO_CHANGE_TARGET = 0.10  # issue 21: a no-change rebuild of both languages, as a share of a cold build
PROSE_EDIT_TARGET = 3.0  # issue 30: seconds, a rebuild of both languages after a prose-only edit of one page
CODE_EDIT_MARGIN = 3.0  # issue 30: seconds a rebuild after a code edit may take beyond its page's execution


@dataclass(frozen=True)
class Run:
    """One build of both languages."""

    seconds: float  # wall time
    executed: dict[str, list[str]]  # language: the pages it executed ("?" when it wrote no report)
    execution_seconds: float | None  # how long those pages' cells ran, all together (None: unknown)
    returncode: int


def build(work: Path) -> Run:
    command = [sys.executable, "-m", "book_extensions", "build", "html", "-q",
               "--docs", str(work / "docs"), "--out", str(work / "_build"),
               "--cache-root", str(work / "cache")]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - started
    executed, ran = {}, []
    for language in book_languages(ROOT):
        report = work / "_build" / "cpu" / "doctrees" / language.code / EXECUTIONS_FILE
        found = json.loads(report.read_text()) if report.exists() else {"executed": ["?"]}
        executed[language.code] = found["executed"]
        seconds = found.get("seconds", {})
        ran += [seconds.get(page) for page in found["executed"]]
    if result.returncode:
        print(result.stderr[-1500:], file=sys.stderr)
    execution_seconds = None if None in ran else sum(ran)
    return Run(took, executed, execution_seconds, result.returncode)


def verdicts(cold: Run, no_change: Run, prose_edit: Run, code_edit: Run) -> list[str]:
    """One line per timed target: the time, the target, and whether it was met."""
    def met(ok: bool | None) -> str:
        return "unknown" if ok is None else "met" if ok else "NOT met"

    share = no_change.seconds / cold.seconds
    lines = [f"no-change rebuild / cold build: {share:.3f}x (target: at most {NO_CHANGE_TARGET:.2f}x): "
             f"{met(share <= NO_CHANGE_TARGET)}",
             f"prose-edit rebuild: {prose_edit.seconds:.1f} s (target: at most {PROSE_EDIT_TARGET:.1f} s): "
             f"{met(prose_edit.seconds <= PROSE_EDIT_TARGET)}"]
    ran = code_edit.execution_seconds
    if ran is None:
        lines.append(f"code-edit rebuild: {code_edit.seconds:.1f} s (target: at most {CODE_EDIT_MARGIN:.1f} s "
                     f"over the edited page's execution, which no report gave): {met(None)}")
    else:
        target = ran + CODE_EDIT_MARGIN
        lines.append(f"code-edit rebuild: {code_edit.seconds:.1f} s (target: at most {target:.1f} s, "
                     f"the {ran:.1f} s its execution took + {CODE_EDIT_MARGIN:.1f} s): "
                     f"{met(code_edit.seconds <= target)}")
    return lines


def page_with_code(docs: Path, language: str) -> Path:
    for page in sorted((docs / language).rglob("*.md")):
        if code_cells(page.read_text(encoding="utf8")):
            return page.relative_to(docs / language)
    raise SystemExit("no page with a code cell to edit")


def edit_prose(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf8") + "\nOne more sentence of prose.\n", encoding="utf8")


def edit_code(path: Path) -> None:
    text = path.read_text(encoding="utf8")
    cell_end = code_cells(text)[0].body_end
    path.write_text(text[:cell_end] + "_bench_edit = 1\n" + text[cell_end:], encoding="utf8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    languages = [lang.code for lang in book_languages(ROOT)]
    with tempfile.TemporaryDirectory(prefix="book-bench-") as tmp:
        work = Path(tmp)
        shutil.copytree(DOCS, work / "docs")
        shutil.copytree(ROOT / "examples", work / "examples")  # pages :load: programs from here
        page = page_with_code(work / "docs", languages[0])
        steps = [
            ("cold build (empty cache)", lambda: None),
            ("rebuild, no change", lambda: None),
            (f"rebuild after a prose edit of {page}", lambda: [edit_prose(work / "docs" / lang / page) for lang in languages]),
            (f"rebuild after a code edit of {page}", lambda: [edit_code(work / "docs" / lang / page) for lang in languages]),
        ]
        print(f"{'step':<52} {'seconds':>8}  " + "  ".join(f"executed ({lang})" for lang in languages))
        runs = []
        for name, change in steps:
            change()
            run = build(work)
            runs.append(run)
            counts = "  ".join(f"{len(run.executed[lang]):>{len(f'executed ({lang})')}}" for lang in languages)
            print(f"{name:<52} {run.seconds:>8.1f}  {counts}" + ("   (build FAILED)" if run.returncode else ""),
                  flush=True)
    for line in verdicts(*runs):
        print(line)
    return 1 if any(run.returncode for run in runs) else 0
