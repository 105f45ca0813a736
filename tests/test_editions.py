"""The offline editions: a small book's PDF and EPUB, in both languages, from the HTML
build's cache; what a reader of each needs (text, fonts, bookmarks, links, the title
page's provenance), EPUBCheck, and the links from every web page."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest
from books import FIXTURES, ROOT, build_book, index_parts
from pypdf import PdfReader

from book_extensions.execution import EXECUTIONS_FILE
from book_extensions.tools.editions import PdfError, epubcheck, retitle_bookmarks
from book_extensions.tools.weight import chromium_path

DOCS = FIXTURES / "good" / "docs"
CJK = re.compile(r"[\u4e00-\u9fff]")


def needs(ok: bool, what: str) -> None:
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is missing: .ci/run installs it")
        pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="module")
def editions(tmp_path_factory):
    needs(os.path.exists(chromium_path()), "Chromium")
    needs(shutil.which("java") is not None, "Java (for EPUBCheck)")
    work = tmp_path_factory.mktemp("editions")
    first = build_book(DOCS, work)  # the web build first: the editions execute nothing after it
    assert first.returncode == 0, first.output
    executed = {}
    for kind in ("pdf", "epub"):
        run = subprocess.run(
            [sys.executable, "-m", "book_extensions.tools.editions", kind, "--docs", str(DOCS),
             "--out", str(first.out), "--cache-root", str(first.cache)],
            cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
        executed[kind] = {code: json.loads((first.out / "cpu" / "doctrees" / code / EXECUTIONS_FILE).read_text())["executed"]
                          for code in ("en", "zh")}
    again = build_book(DOCS, work)  # now every page links the editions
    assert again.returncode == 0, again.output
    return again, executed


def edition(build, code: str, kind: str):
    return build.out / "cpu" / "offline" / code / f"cutting-the-graph-{code}.{kind}"


def headings(code: str) -> list[str]:
    return [line.lstrip("#").strip() for page in sorted((DOCS / code).glob("*.md"))
            for line in page.read_text(encoding="utf8").splitlines() if re.match(r"#{1,6} ", line)]


def bookmarks(reader: PdfReader) -> list[str]:
    titles = []

    def walk(items):
        for item in items:
            walk(item) if isinstance(item, list) else titles.append(item.title)
    walk(reader.outline)
    return titles


def fonts(reader: PdfReader) -> dict[str, bool]:
    """Every font the pages use: its name, and whether its program is embedded."""
    found = {}
    for page in reader.pages:
        for font in (page.get("/Resources") or {}).get("/Font", {}).values():
            font = font.get_object()
            if font.get("/Subtype") == "/Type3":  # glyphs drawn in the PDF itself
                found[f"Type3 {len(font.get('/CharProcs', {}))} glyphs"] = "/CharProcs" in font
                continue
            described = font["/DescendantFonts"][0].get_object() if "/DescendantFonts" in font else font
            descriptor = described.get("/FontDescriptor")
            descriptor = descriptor.get_object() if descriptor is not None else {}
            found[str(font.get("/BaseFont"))] = any(key in descriptor for key in ("/FontFile", "/FontFile2", "/FontFile3"))
    return found


def test_the_editions_execute_nothing(editions):
    _, executed = editions
    # Both builds read every page from the cache the web build filled.
    assert executed == {"pdf": {"en": [], "zh": []}, "epub": {"en": [], "zh": []}}


@pytest.mark.parametrize("code", ["en", "zh"])
def test_the_pdf_holds_every_heading_in_real_glyphs_with_its_fonts_embedded(editions, code):
    build, _ = editions
    reader = PdfReader(edition(build, code, "pdf"))
    text = "\n".join(page.extract_text() for page in reader.pages)
    flat = re.sub(r"\s+", "", text)
    for heading in headings(code):
        assert re.sub(r"\s+", "", heading) in flat, heading
    assert "\ufffd" not in text and "\x00" not in text
    used = fonts(reader)
    assert used and all(used.values()), used  # every font embedded
    if code == "zh":
        assert len(CJK.findall(text)) > 50
        assert any(re.search(r"CJK|WenQuanYi|WQY|Han|Droid|Noto ?Sans ?SC", name, re.I) for name in used), used


@pytest.mark.parametrize("code", ["en", "zh"])
def test_the_pdf_has_a_title_page_bookmarks_and_working_links(editions, code):
    from book_extensions.execution import torch_version

    build, _ = editions
    reader = PdfReader(edition(build, code, "pdf"))
    title = reader.pages[0].extract_text()
    assert ("A small book" if code == "en" else "一本小书") in title
    assert torch_version() in title and "CPU" in title
    marks = bookmarks(reader)
    assert marks[0] == headings(code)[0] and sorted(marks) == sorted(headings(code)), marks  # one per heading
    internal = [annot for page in reader.pages for annot in (page.get("/Annots") or [])
                if "/Dest" in annot.get_object() or annot.get_object().get("/A", {}).get("/S") == "/GoTo"]
    assert internal, "no cross-reference became a link inside the PDF"


@pytest.mark.parametrize("code", ["en", "zh"])
def test_the_epub_passes_epubcheck(editions, code):
    build, _ = editions
    path = edition(build, code, "epub")
    assert epubcheck(path) == []
    with zipfile.ZipFile(path) as epub:
        opf = epub.read(next(name for name in epub.namelist() if name.endswith(".opf"))).decode()
    assert f"<dc:language>{'zh-CN' if code == 'zh' else 'en'}</dc:language>" in opf


def test_epubcheck_finds_a_broken_epub(tmp_path):
    needs(shutil.which("java") is not None, "Java (for EPUBCheck)")
    broken = tmp_path / "broken.epub"
    with zipfile.ZipFile(broken, "w") as epub:
        epub.writestr("mimetype", "application/epub+zip")
        epub.writestr("index.xhtml", "<html><p>no container, no package</html>")
    assert epubcheck(broken)


def test_bookmarks_that_do_not_match_the_headings_stop_the_pdf(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.add_outline_item(title="Only one", page_number=0)
    pdf = tmp_path / "book.pdf"
    with pdf.open("wb") as out:
        writer.write(out)
    with pytest.raises(PdfError, match="1 bookmarks for 2 printed headings"):
        retitle_bookmarks(pdf, ["One", "Two"])
    retitle_bookmarks(pdf, ["Retitled"])
    assert bookmarks(PdfReader(pdf)) == ["Retitled"]


@pytest.mark.parametrize("code", ["en", "zh"])
def test_every_page_links_the_editions_of_its_language(editions, code):
    build, _ = editions
    site = build.site() / code
    for page in ("index.html", "second.html"):
        html = (site / page).read_text(encoding="utf8")
        for kind in ("pdf", "epub"):
            assert f'href="offline/cutting-the-graph-{code}.{kind}"' in html, (page, kind)
    assert sorted(p.name for p in (site / "offline").iterdir()) == [
        f"cutting-the-graph-{code}.epub", f"cutting-the-graph-{code}.pdf"]


@pytest.mark.book
def test_the_real_books_editions_build_and_pass_their_checks(book):
    # Each command checks its own output: bookmarks against the printed headings (PDF),
    # EPUBCheck (EPUB); here, also every chapter's title in the PDF's text.
    needs(os.path.exists(chromium_path()), "Chromium")
    needs(shutil.which("java") is not None, "Java (for EPUBCheck)")
    for kind in ("pdf", "epub"):
        run = subprocess.run(
            [sys.executable, "-m", "book_extensions.tools.editions", kind, "--out", str(book.out),
             "--cache-root", str(book.cache)], cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stdout + run.stderr
    for code in ("en", "zh"):
        reader = PdfReader(edition(book, code, "pdf"))
        marks = bookmarks(reader)
        text = re.sub(r"\s+", "", "".join(page.extract_text() for page in reader.pages))

        def title_of(name: str, code: str = code) -> str:
            page = ROOT / "docs" / code / f"{name}.md"
            return re.sub(r"[`*]", "", next(line for line in page.read_text(encoding="utf8").splitlines()
                                            if line.startswith("# "))[2:].strip())

        # Every page is in the book: the index and each page its tables of contents list
        # (all pages but the device page, which waits for a CUDA record).
        listed = ["index", *(name for part in index_parts(code) for name in part)]
        unlisted = {page.stem for page in (ROOT / "docs" / code).glob("*.md")} - set(listed)
        assert unlisted <= {"cpu-vs-cuda"}, unlisted
        assert not {title_of(name) for name in unlisted} & set(marks)
        chapters = [title_of(name) for name in listed]
        for title in chapters:
            assert title in marks, (code, title)
            assert re.sub(r"\s+", "", title) in text, (code, title)
        assert "\ufffd" not in text
        uris = [str(annot.get_object()["/A"].get("/URI")) for page in reader.pages for annot in (page.get("/Annots") or [])
                if "/A" in annot.get_object()]
        assert not [uri for uri in uris if uri.startswith("file:")], "a link into the build machine"
        assert "top bar" not in text and "顶栏" not in text  # the web page's language switch
