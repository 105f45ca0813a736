"""The book's one command: ``python -m book_extensions <verb> [arguments]``.

    python -m book_extensions --help           # every verb, one line each
    python -m book_extensions build --help     # one verb's arguments, from its own parser
    python -m book_extensions build html --device cpu

Each verb is one tool of the package (:data:`VERBS`, the only list of them): the rest of the
command line goes to that tool's ``main(argv)``, whose exit status is the command's. A tool's
module is imported only when its verb runs, so ``toolchain`` and ``wheelhouse`` run on a Python
without Sphinx (the noxfile's, before any environment exists; the GPU machine's, in
``.ci/gpu-check``). Standard library only. The nox sessions call these verbs (``nox --list``).
"""

from __future__ import annotations

import difflib
import importlib
import sys
from typing import NamedTuple

COMMAND = "python -m book_extensions"


class Verb(NamedTuple):
    module: str  # imported when the verb runs; it has main(argv: list[str]) -> int
    summary: str  # one line, for --help


VERBS: dict[str, Verb] = {
    "build": Verb("book_extensions.commands.build",
                  "build every language with one Sphinx builder (html by default; doctest, linkcheck, ...)"),
    "serve": Verb("book_extensions.commands.serve", "live preview of one language: rebuild on save, reload the browser"),
    "editions": Verb("book_extensions.editions.make_editions",
                     "the whole book as one PDF or EPUB per language, from the execution cache"),
    "parity": Verb("book_extensions.checks.parity", "check that the languages have the same pages, code and structure"),
    "typography": Verb("book_extensions.checks.typography",
                       "list the Chinese pages' long sentences: a report for the editor, not a gate"),
    "determinism": Verb("book_extensions.commands.determinism",
                        "execute every page a second time; fail on any output that changed"),
    "records": Verb("book_extensions.records.device_records",
                    "record every cell's outputs per device (results/<device>.json), compare CPU with CUDA"),
    "releases": Verb("book_extensions.records.release_records",
                     "record the book under the installed torch; say what changed between releases"),
    "gpu-checks": Verb("book_extensions.commands.gpu_checks",
                       "judge what the book's checks found in a .ci/gpu-check run against the CPU's"),
    "wheelhouse": Verb("book_extensions.commands.wheelhouse",
                       "the wheels .ci/gpu-check needs and the GPU machine lacks (no Sphinx needed)"),
    "toolchain": Verb("book_extensions.commands.toolchain",
                      "make or update a torch release's shared environment, print its python (no Sphinx needed)"),
    "bench": Verb("book_extensions.commands.bench", "time cold, no-change, prose-edit and code-edit builds on a copy"),
    "weight": Verb("book_extensions.commands.weight",
                   "bytes, requests and first paint of every built page on a throttled phone"),
    "lighthouse": Verb("book_extensions.commands.lighthouse",
                       "Lighthouse's four scores of every built page, served like GitHub Pages"),
    "upstream": Verb("book_extensions.upstream",
                     "list every workaround that leans on another project, and what has moved"),
}


def usage() -> str:
    width = max(map(len, VERBS))
    return "\n".join([
        f"usage: {COMMAND} <verb> [arguments]",
        f"       {COMMAND} <verb> --help    (that verb's arguments)",
        "",
        "The book's tools in one command; the nox sessions call them (nox --list).",
        "",
        "verbs:",
        *(f"  {name:<{width}}  {verb.summary}" for name, verb in VERBS.items()),
    ])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(usage(), file=sys.stderr)
        return 2
    name, rest = args[0], args[1:]
    if name in ("-h", "--help"):
        print(usage())
        return 0
    if name not in VERBS:
        close = difflib.get_close_matches(name, VERBS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(f"error: unknown verb {name!r}{hint} ({COMMAND} --help lists them)", file=sys.stderr)
        return 2
    tool = importlib.import_module(VERBS[name].module)
    return tool.main(rest)


if __name__ == "__main__":
    sys.exit(main())
