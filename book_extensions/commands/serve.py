"""Live preview of one language: rebuild on save, reload the browser.

    python -m book_extensions serve [en|zh] [--device cpu] [--port 8000] [-- SPHINX_ARGS]

Runs sphinx-autobuild with the same Sphinx options as the real build, so what
you preview is what ``nox -s docs`` publishes (warnings show, but don't stop it).
It writes folders of its own (``_build/preview/<device>/``: the doctrees and the pages it
serves), so that nothing it leaves there, nor a preview killed while its Sphinx runs on, is
taken by a build for its own (attack 8, cases 13 and 30: a build then said "unchanged" for
good, or collided with it). It shares the build's execution cache, so it holds the build's
locks for as long as it runs: a build started meanwhile is refused in one line naming the
preview, and the preview does not start while a build runs (``--cache-root`` gives it a cache
of its own). It holds its
toolchain shared too, as a build does (:func:`.build_locks.hold_build_locks`). Before it starts,
it makes the driver's checks (:func:`.build.start_problems`: settings, folders, locale, every
input file), one line each, and compiles the catalogs, as a build does.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from ..configuration.settings import book_languages
from ..execution.processes import PREVIEW_LOCKS, PREVIEW_PID
from ..paths import BUILD, ROOT, add_folder_options, shown
from .build import compile_sphinx_catalogs, sphinx_command, start_problems
from .build import parse_args as build_args
from .build_locks import PROCESSES_LOCK, hold_build_locks

# Not the build's folders (paths.BUILD): see the module's docstring.
PREVIEW_OUT = BUILD / "preview"


def port_number(text: str) -> str:
    """A port as sphinx-autobuild takes it, checked here in one line (attack 6, case 22d)."""
    if text.isdigit() and 1 <= int(text) <= 65535:
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a port (1-65535)")


def port_in_use(port: str) -> str | None:
    """Why sphinx-autobuild could not serve on ``port`` once it had built everything, or None."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", int(port)))
        except OSError as error:
            return f"port {port} cannot be served on ({error.strerror}): choose another with --port"
    return None


def builds_folder(build: argparse.Namespace) -> str | None:
    """Why the preview may not write ``--out``: a build's own output is there (its notes would be
    rewritten, and the next build said "unchanged" with old text published: attack 9, case 2)."""
    from .last_build import PUBLISHED
    from .publish import SITE, WORK

    folder = build.out / build.device
    if any((folder / name).exists() for name in (PUBLISHED, SITE, WORK)):
        return (f"{folder} holds a build's output: give the preview a folder of its own with --out "
                f"(its default is {shown(PREVIEW_OUT)})")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("language", nargs="?", help="a language of conf.py (default: the first)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--port", type=port_number, default="8000", help="the port to serve on (1-65535)")
    add_folder_options(parser, "--docs", "--cache-root")
    parser.add_argument("--out", type=Path, default=PREVIEW_OUT,
                        help=f"where the preview writes, one folder per device (default: {shown(PREVIEW_OUT)})")
    parser.epilog = "Arguments after -- go to sphinx-build, as with build: -- -D nb_execution_timeout=30"
    argv = sys.argv[1:] if argv is None else argv
    own, sphinx_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(own)
    languages = {lang.code: lang for lang in book_languages(ROOT)}
    args.language = args.language or next(iter(languages))
    if args.language not in languages:
        print(f"error: unknown language {args.language!r} (known: {', '.join(languages)})", file=sys.stderr)
        return 2
    build = build_args(["html", "--device", args.device, "--docs", str(args.docs), "--out", str(args.out),
                        "--cache-root", str(args.cache_root), "--language", args.language, "--", *sphinx_args])
    # The driver's checks, before sphinx-autobuild: what it would otherwise show as a traceback.
    problems = start_problems(build) or [problem for problem in [port_in_use(args.port), builds_folder(build)] if problem]
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    command = sphinx_command(build, languages[args.language], build.docs, build.out)
    sphinx_options = [a for a in command[3:] if a != "-W"]  # drop "python -m sphinx"
    autobuild = [
        sys.executable, "-m", "sphinx_autobuild", *sphinx_options,
        "--port", args.port, "--watch", str(ROOT / "book_extensions"),
        "--watch", str(ROOT / "examples"),
        "--ignore", "*.jupyter_cache*", "--ignore", "*/jupyter_execute/*",
    ]
    # The pid stays the same through exec: the preview named here is the one that runs.
    locks, problem = hold_build_locks(build, holder=f"the live preview (`nox -s serve`, pid {os.getpid()})")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    compile_sphinx_catalogs()  # under the locks, as a build does: Sphinx would write a .mo in place
    # sphinx-autobuild starts each Sphinx run with no file of its own: the locks a build passes
    # its Sphinx are taken by each run itself (processes.hold_preview_locks), and held until it
    # ends, even if the preview is killed meanwhile. The preview's own stay held through exec
    # until it ends: no build takes the others without them.
    for lock in locks.passed:
        os.close(lock)
    os.environ[PREVIEW_LOCKS] = os.pathsep.join(str(folder / PROCESSES_LOCK)
                                                for folder in (build.cache_root, build.out / build.device))
    os.environ[PREVIEW_PID] = str(os.getpid())  # the same through exec
    for lock in locks.kept:
        os.set_inheritable(lock, True)
    os.execv(sys.executable, autobuild)
