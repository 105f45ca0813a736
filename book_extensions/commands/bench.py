"""Benchmark the build: how long it takes and how many pages it executes.

    python -m book_extensions bench

On a copy of docs/ and examples/ (with its own output and an empty execution cache, so your
cache and _build/ are untouched), builds both languages four times:

1. cold: nothing cached;
2. no change;
3. after a prose-only edit of one page (both languages);
4. after editing one code cell of that page (both languages, identically).

Prints wall time and the pages each language executed, then the no-change rebuild's
time as a share of the cold build's. The targets: the second language executes nothing,
a no-change rebuild takes at most a tenth of a cold build (the driver does not start
Sphinx when nothing changed), a prose edit executes nothing and a code edit executes
exactly one page.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..execution.cache_key import EXECUTIONS_FILE
from ..myst_source import code_cells
from ..paths import ROOT
from .build import book_languages

NO_CHANGE_TARGET = 0.10  # issue 21: a no-change rebuild of both languages, as a share of a cold build


def build(work: Path) -> tuple[float, dict[str, list[str]], int]:
    command = [sys.executable, "-m", "book_extensions", "build", "html", "-q",
               "--docs", str(work / "docs"), "--out", str(work / "_build"),
               "--cache-root", str(work / "cache")]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - started
    executed = {}
    for language in book_languages(ROOT):
        report = work / "_build" / "cpu" / "doctrees" / language.code / EXECUTIONS_FILE
        executed[language.code] = json.loads(report.read_text())["executed"] if report.exists() else ["?"]
    if result.returncode:
        print(result.stderr[-1500:], file=sys.stderr)
    return took, executed, result.returncode


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
        shutil.copytree(ROOT / "docs", work / "docs")
        shutil.copytree(ROOT / "examples", work / "examples")  # pages :load: programs from here
        page = page_with_code(work / "docs", languages[0])
        steps = [
            ("cold build (empty cache)", lambda: None),
            ("rebuild, no change", lambda: None),
            (f"rebuild after a prose edit of {page}", lambda: [edit_prose(work / "docs" / lang / page) for lang in languages]),
            (f"rebuild after a code edit of {page}", lambda: [edit_code(work / "docs" / lang / page) for lang in languages]),
        ]
        print(f"{'step':<52} {'seconds':>8}  " + "  ".join(f"executed ({lang})" for lang in languages))
        failed = False
        times = []
        for name, change in steps:
            change()
            took, executed, rc = build(work)
            times.append(took)
            failed |= rc != 0
            counts = "  ".join(f"{len(executed[lang]):>{len(f'executed ({lang})')}}" for lang in languages)
            print(f"{name:<52} {took:>8.1f}  {counts}" + ("   (build FAILED)" if rc else ""), flush=True)
    print(f"no-change rebuild / cold build: {times[1] / times[0]:.3f}x (target: at most {NO_CHANGE_TARGET:.2f}x)")
    return 1 if failed else 0
