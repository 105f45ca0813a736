"""Live preview of one language: rebuild on save, reload the browser.

    python -m book_extensions serve [en|zh] [--device cpu] [--port 8000]

Runs sphinx-autobuild with the same Sphinx options as the real build, so what
you preview is what ``nox -s docs`` publishes (warnings show, but don't stop it).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..paths import ROOT
from .build import book_languages, sphinx_command
from .build import parse_args as build_args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("language", nargs="?", help="a language of conf.py (default: the first)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--port", default="8000")
    args = parser.parse_args(argv)
    languages = {lang.code: lang for lang in book_languages(ROOT)}
    args.language = args.language or next(iter(languages))
    if args.language not in languages:
        print(f"error: unknown language {args.language!r} (known: {', '.join(languages)})", file=sys.stderr)
        return 2
    command = sphinx_command(build_args(["html", "--device", args.device]), languages[args.language],
                             ROOT / "docs", ROOT / "_build")
    sphinx_options = [a for a in command[3:] if a != "-W"]  # drop "python -m sphinx"
    autobuild = [
        sys.executable, "-m", "sphinx_autobuild", *sphinx_options,
        "--port", args.port, "--watch", str(ROOT / "book_extensions"),
        "--watch", str(ROOT / "examples"),
        "--ignore", "*.jupyter_cache*", "--ignore", "*/jupyter_execute/*",
    ]
    os.execv(sys.executable, autobuild)
