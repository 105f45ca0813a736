"""Build the book: every language, one after the other, with one Sphinx builder.

    python -m book_extensions.tools.build html --device cpu
    python -m book_extensions.tools.build doctest

Output goes to ``<out>/<device>/<builder>/<language>/`` (doctrees beside it), so a
CUDA build never mixes with a CPU one. Languages are built one after the other
because two builds writing one jupyter-cache at the same time can corrupt it; each
build reads its pages in parallel. A failing language does not stop the next one:
the run reports every problem, then exits non-zero.
"""

from __future__ import annotations

import argparse
import runpy
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

from ..cache_key import cache_dir, unreadable_cache

ROOT = Path(__file__).resolve().parents[2]


@cache
def book_config(confdir: Path = ROOT) -> dict:
    """conf.py's settings, read once."""
    return runpy.run_path(str(confdir / "conf.py"))


def book_languages(confdir: Path = ROOT) -> list[dict]:
    """The book's languages, as conf.py declares them (the one list everything reads)."""
    return book_config(confdir)["book_languages"]


def reference_language(confdir: Path = ROOT) -> str:
    """The first declared language: the one others are compared with, and records are read from."""
    return book_languages(confdir)[0]["code"]


def cuda_problem() -> str | None:
    """Why a CUDA build cannot run here, or None; asked in a child so it stays cheap."""
    probe = "import torch; print(torch.cuda.is_available(), torch.__version__)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if result.returncode != 0:
        return f"cannot import torch: {result.stderr.strip().splitlines()[-1]}"
    available, version = result.stdout.split()
    if available != "True":
        return f"--device cuda asked for, but torch {version} sees no CUDA device here"
    return None


def sphinx_command(args, language: dict, docs: Path, out: Path) -> list[str]:
    code = language["code"]
    device_dir = out / args.device
    return [
        sys.executable, "-m", "sphinx",
        "-b", args.builder,
        "-c", str(args.confdir),
        "-d", str(device_dir / "doctrees" / code),
        "-D", f"language={language['sphinx']}",
        "-D", f"book_device={args.device}",
        "-D", f"book_cache_root={args.cache_root}",
        "-W", "-j", args.jobs, *(["-q"] if args.quiet else []),
        str(docs / code),
        str(device_dir / args.builder / code),
        *args.sphinx_args,
    ]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m book_extensions.tools.build", description=__doc__.split("\n")[0])
    parser.add_argument("builder", nargs="?", default="html", help="Sphinx builder (html, doctest, ...)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--language", action="append", dest="languages", metavar="CODE",
                        help="build only this language (repeatable); default: all")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="folder with one sub-folder per language")
    parser.add_argument("--out", type=Path, default=ROOT / "_build")
    parser.add_argument("--cache-root", type=Path, default=ROOT / ".jupyter_cache")
    parser.add_argument("--confdir", type=Path, default=ROOT)
    parser.add_argument("-j", "--jobs", default="auto")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    parser.epilog = "Arguments after -- go to sphinx-build, for example: -- -D nb_execution_timeout=30"
    own, extra = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(own)
    args.sphinx_args = extra
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.device == "cuda":
        problem = cuda_problem()
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    languages = book_languages(args.confdir)
    if args.languages:
        unknown = set(args.languages) - {lang["code"] for lang in languages}
        if unknown:
            print(f"error: unknown language {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        languages = [lang for lang in languages if lang["code"] in args.languages]
    # Two builds writing one jupyter-cache (or one output folder) at once can corrupt it.
    from filelock import FileLock, Timeout

    args.cache_root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(args.cache_root / "book-build.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"error: another build is using the execution cache {args.cache_root}: "
              "wait for it to finish, or give this one its own --cache-root", file=sys.stderr)
        return 2
    try:
        problem = unreadable_cache(cache_dir(args.cache_root, args.device))
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        return build_languages(args, languages)
    except KeyboardInterrupt:
        # Sphinx has already said "Interrupted!"; pages executed so far stay cached.
        print("error: the build was interrupted; run it again to finish", file=sys.stderr)
        return 130
    finally:
        lock.release()


def build_languages(args: argparse.Namespace, languages: list[dict]) -> int:
    failed = []
    for language in languages:
        started = time.perf_counter()
        result = subprocess.run(sphinx_command(args, language, args.docs, args.out))
        took = time.perf_counter() - started
        status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
        print(f"[{language['code']}] {args.builder} {status} in {took:.1f} s", flush=True)
        if result.returncode:
            failed.append(language["code"])
    if failed:
        print(f"error: the {args.builder} build failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    if args.builder == "html":
        from .. import site_root

        site = args.out / args.device / "html"
        problem = site_root.write(site, args.out / args.device / "doctrees", book_languages(args.confdir), args.docs)
        if problem:
            print(f"The site root (language chooser, 404, robots.txt) is not written: {problem}")
        print(f"The book is built. Open {(site / 'index.html').resolve().as_uri()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
