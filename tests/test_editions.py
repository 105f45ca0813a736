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
from books import FIXTURES, ROOT, build_book, index_parts, require_tool
from pypdf import PdfReader

from book_extensions.commands.chromium import chromium_path
from book_extensions.editions.make_editions import (
    EQUIVALENT_IDEOGRAPHS,
    PdfError,
    cmap_mappings,
    epubcheck,
    ideograph,
    name_ideographs,
    retitle,
)
from book_extensions.execution.page_execution import EXECUTIONS_FILE

pytestmark = pytest.mark.fixture

DOCS = FIXTURES / "good" / "docs"
CJK = re.compile(r"[\u4e00-\u9fff]")
RADICAL = re.compile(r"[\u2e80-\u2fdf\u31c0-\u31ef]")  # CJK Radicals Supplement, Kangxi Radicals, CJK Strokes
# Debian's fonts-noto-cjk, the package the publish workflow installs, unpacked by .ci/tools
# (never installed: the other tests keep the machine's fonts).
NOTO_CJK = ROOT / ".tools" / "fonts-noto-cjk"


@pytest.fixture(scope="session")  # one worker builds it, once a run (conftest.py: FIXTURE_BOOKS)
def editions(tmp_path_factory):
    require_tool(os.path.exists(chromium_path()), "Chromium is missing: .ci/tools installs it")
    require_tool(shutil.which("java") is not None, "Java (for EPUBCheck) is missing: .ci/tools installs it")
    work = tmp_path_factory.mktemp("editions")
    first = build_book(DOCS, work)  # the web build first: the editions execute nothing after it
    assert first.returncode == 0, first.output
    executed = {}
    for kind in ("pdf", "epub"):
        run = subprocess.run(
            [sys.executable, "-m", "book_extensions", "editions", kind, "--docs", str(DOCS),
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
            if font.get("/Subtype") == "/Type3":  # glyphs drawn in the PDF itself (Noto Sans CJK's, for one)
                descriptor = font["/FontDescriptor"].get_object() if "/FontDescriptor" in font else {}
                name = descriptor.get("/FontName", f"Type3 {len(font.get('/CharProcs', {}))} glyphs")
                found[str(name)] = "/CharProcs" in font
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


def noto_sans_cjk() -> list[str]:
    """Noto Sans CJK's font files: .ci/tools' copy in .tools/, else the machine's."""
    found = sorted(str(path) for path in NOTO_CJK.glob("**/NotoSansCJK-*.ttc"))
    if not found and shutil.which("fc-list"):
        listed = subprocess.run(["fc-list", ":family=Noto Sans CJK SC", "file"], capture_output=True, text=True).stdout
        found = sorted({line.strip().rstrip(":") for line in listed.splitlines() if line.strip()})
    return found


def noto_only(folder, files: list[str]):
    """A private fontconfig file: the machine's fonts, but for Chinese only Noto Sans CJK
    (any other font that covers Chinese, WenQuanYi for one, is left out); its cache in
    ``folder``, listed first so that fontconfig writes there and the machine is untouched."""
    accepted = "".join(f"<acceptfont><pattern><patelt name='file'><string>{file}</string></patelt></pattern></acceptfont>"
                       for file in files)
    folders = "".join(f"<dir>{folder}</dir>" for folder in sorted({os.path.dirname(file) for file in files}))
    config = folder / "fonts.conf"
    config.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <cachedir>{folder / "cache"}</cachedir>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  {folders}
  <selectfont>
    <rejectfont><pattern><patelt name="lang"><string>zh-cn</string></patelt></pattern></rejectfont>
    {accepted}
  </selectfont>
  <alias binding="strong"><family>sans-serif</family><prefer><family>Noto Sans CJK SC</family></prefer></alias>
</fontconfig>
""")
    return config


@pytest.fixture(scope="session")  # one worker builds it, once a run (conftest.py: FIXTURE_BOOKS)
def noto_pdf(editions, tmp_path_factory):
    """The Chinese PDF printed where Noto Sans CJK is the only Chinese font, as on most
    Linux desktops; beside it, the printing command's output."""
    files = noto_sans_cjk()
    require_tool(bool(files), "Noto Sans CJK is missing: .ci/tools unpacks Debian's fonts-noto-cjk into .tools/")
    build, _ = editions
    work = tmp_path_factory.mktemp("noto")
    env = {**os.environ, "FONTCONFIG_FILE": str(noto_only(work, files))}
    run = subprocess.run(
        [sys.executable, "-m", "book_extensions", "editions", "pdf", "--language", "zh", "--docs", str(DOCS),
         "--out", str(work / "_build"), "--cache-root", str(build.cache)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    return work / "_build" / "cpu" / "offline" / "zh" / "cutting-the-graph-zh.pdf", run.stdout


def test_the_chinese_pdf_reads_as_its_pages_with_noto_sans_cjk(editions, noto_pdf):
    # Noto Sans CJK draws 一 and ⼀ (KANGXI RADICAL ONE) with one glyph, and Chromium names
    # it by the radical: the PDF read ⼀本⼩书 for 一本小书, to search, copy and screen readers.
    path, output = noto_pdf
    reader = PdfReader(path, strict=True)  # still a well-formed PDF after its text maps were rewritten
    used = fonts(reader)
    assert any("NotoSansCJK" in name for name in used) and all(used.values()), used
    assert not any(re.search("WenQuanYi|WQY|Droid", name) for name in used), used  # the private fontconfig held
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert not RADICAL.findall(text), sorted(set(RADICAL.findall(text)))
    assert "一本小书" in reader.pages[0].extract_text()
    # The same Chinese characters as the PDF printed with the machine's fonts, and only ones
    # the page holds (or its stylesheet: "⚠ 警告" is CSS's).
    build, _ = editions
    machine = "".join(page.extract_text() for page in PdfReader(edition(build, "zh", "pdf")).pages)
    assert set(CJK.findall(text)) == set(CJK.findall(machine))
    printed = build.out / "cpu" / "singlehtml" / "zh"
    page = "".join(path.read_text(encoding="utf8") for path in (printed / "index.html", printed / "_static" / "book.css"))
    assert set(CJK.findall(text)) <= set(CJK.findall(page))
    flat = re.sub(r"\s+", "", text)
    for heading in headings("zh"):
        assert re.sub(r"\s+", "", heading) in flat, heading
    corrected = re.search(r"(\d+) glyphs named by a CJK radical now read as their ideograph", output)
    assert corrected and int(corrected.group(1)) > 0, output


def cmap_font(writer, cmap: bytes, name: str = "/Noto"):
    """A page that shows codes 01 to 0A in a font whose ToUnicode map is ``cmap``."""
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    stream = DecodedStreamObject()
    stream.set_data(b"/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n1 begincodespacerange\n"
                    b"<00> <FF>\nendcodespacerange\n" + cmap + b"endcmap\nend\nend")
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject(name),
                             NameObject("/ToUnicode"): writer._add_object(stream)})
    page = writer.add_blank_page(200, 100)
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    content = DecodedStreamObject()
    content.set_data(b"BT /F1 12 Tf 10 50 Td <0102030405060708090A> Tj ET")
    page[NameObject("/Contents")] = writer._add_object(content)
    return stream


def read_back(writer) -> str:
    import io

    out = io.BytesIO()
    writer.write(out)
    return PdfReader(io.BytesIO(out.getvalue()), strict=True).pages[0].extract_text()


def test_radicals_in_a_text_map_read_as_their_ideographs_unless_the_page_shows_the_radical():
    from pypdf import PdfWriter

    writer = PdfWriter()
    stream = cmap_font(writer, (
        b"4 beginbfchar\n<01> <2F00>\n<02> <4E66>\n<03> <2E80>\n<04> <31D0>\nendbfchar\n"  # ⼀, 书, ⺀ (REPEAT), ㇐
        b"2 beginbfrange\n<05> <07> <2EC4>\n<08> <0A> [<2F29> <897F> <0041>]\nendbfrange\n"))  # ⻄ ⻅ ⻆; ⼩ 西 A
    assert read_back(writer) == "⼀书⺀㇐⻄⻅⻆⼩西A"  # what Chromium's PDF reads as, without the fix
    # The page shows ⻄ (U+2EC4), and 西 under another glyph: the font draws them apart, ⻄ stays.
    # It shows ⼀ and 一, which the font draws alike: the glyph reads as 一, the commoner.
    assert name_ideographs(writer, "一本小书 ⼀ ⻄ 西 A") == 5
    assert read_back(writer) == "一书⺀一⻄见角小西A"  # ⺀ stands for no ideograph
    data = stream.get_data()
    assert data.startswith(b"/CIDInit") and b"endcodespacerange\n10 beginbfchar\n" in data and data.endswith(b"end")
    assert name_ideographs(writer, "一本小书 ⼀ ⻄ 西 A") == 0  # nothing left to do

    # A radical the page shows, whose ideograph it does not: the glyph is the radical's.
    writer = PdfWriter()
    cmap_font(writer, b"1 beginbfchar\n<01> <2F00>\nendbfchar\n")
    assert name_ideographs(writer, "KANGXI RADICAL ONE: ⼀") == 0


def test_skias_ranges_count_code_points_and_an_unreadable_text_map_stops_the_pdf():
    from pypdf import PdfWriter

    assert cmap_mappings([(b"bfrange", b"<0001> <0003> <4EFF>\n<0010> <0011> <D841DE28>")]) == [
        ("0001", "\u4eff"), ("0002", "\u4f00"), ("0003", "\u4f01"), ("0010", "\U00020628"), ("0011", "\U00020629")]
    writer = PdfWriter()
    cmap_font(writer, b"1 beginbfrange\n<01> <03> [<2F00> <4E66>]\nendbfrange\n", name="/Broken")
    with pytest.raises(PdfError, match=r"^book.pdf: the text map of font /Broken cannot be read: a bfrange section: "
                                       r"<01> <03> with 2 texts$"):
        name_ideographs(writer, "", "book.pdf")


def test_the_radical_table_names_radicals_and_strokes_and_unified_ideographs():
    import unicodedata

    def unified(character):  # the CJK Unified Ideographs blocks (Python's Unicode may lack newer names)
        return "\u3400" <= character <= "\u9fff" or "\U00020000" <= character <= "\U0003134f"

    for code, target in EQUIVALENT_IDEOGRAPHS.items():
        assert unicodedata.name(chr(code)).startswith(("CJK RADICAL", "CJK STROKE")), hex(code)
        assert unified(target), (hex(code), target)
    for code in range(0x2F00, 0x2FD6):  # the Kangxi radicals, through NFKC
        assert unified(ideograph(chr(code))), hex(code)
    assert ideograph("A") is None and ideograph("\u2e80") is None and ideograph("\u4e00") is None


@pytest.mark.parametrize("code", ["en", "zh"])
def test_the_pdf_has_a_title_page_bookmarks_and_working_links(editions, code):
    from book_extensions.execution.cache_key import torch_version

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
    require_tool(shutil.which("java") is not None, "Java (for EPUBCheck) is missing: .ci/tools installs it")
    broken = tmp_path / "broken.epub"
    with zipfile.ZipFile(broken, "w") as epub:
        epub.writestr("mimetype", "application/epub+zip")
        epub.writestr("index.xhtml", "<html><p>no container, no package</html>")
    assert epubcheck(broken)


def test_bookmarks_that_do_not_match_the_headings_stop_the_pdf():
    import io

    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.add_outline_item(title="Only one", page_number=0)
    with pytest.raises(PdfError, match="^book.pdf: Chromium made 1 bookmarks for 2 printed headings$"):
        retitle(writer, "book.pdf", ["One", "Two"])
    retitle(writer, "book.pdf", ["Retitled"])
    out = io.BytesIO()
    writer.write(out)
    assert bookmarks(PdfReader(io.BytesIO(out.getvalue()))) == ["Retitled"]


@pytest.mark.unit
@pytest.mark.parametrize("changed", ["torch-releases.txt", ".autocorrectrc", "results/cpu.json", "examples/program.py",
                                     "docs/terms.en.toml", "docs/en/index.md", "conf.py",
                                     "docs/shared/part.md"])  # attack 9, case 3: what pages include from docs/shared/
def test_an_editions_stamp_changes_with_every_file_its_pages_read(tmp_path, changed):
    """The stamp digests what the html build digests (configuration/site_inputs.py): an edition
    stayed current after the release list changed, which every page reads."""
    from book_extensions.editions.offline_builders import sources_digest

    (tmp_path / "docs" / "en").mkdir(parents=True)
    (tmp_path / "docs" / "en" / "index.md").write_text("# A page\n", encoding="utf8")
    shutil.copy(ROOT / "conf.py", tmp_path)
    (tmp_path / "torch-releases.txt").write_text("2.15.0\n", encoding="utf8")
    before = sources_digest(tmp_path / "docs", "en", tmp_path, "cpu")
    path = tmp_path / changed
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text(encoding="utf8") if path.exists() else "") + "\n# edited\n", encoding="utf8")
    after = sources_digest(tmp_path / "docs", "en", tmp_path, "cpu")
    assert after != before
    # The other language's pages change nothing this edition prints.
    (tmp_path / "docs" / "zh").mkdir()
    (tmp_path / "docs" / "zh" / "index.md").write_text("# 一页\n", encoding="utf8")
    assert sources_digest(tmp_path / "docs", "en", tmp_path, "cpu") == after


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


@pytest.mark.scheduled
def test_the_real_books_editions_build_and_pass_their_checks(book):
    # Each command checks its own output: bookmarks against the printed headings (PDF),
    # EPUBCheck (EPUB); here, also every chapter's title in the PDF's text.
    require_tool(os.path.exists(chromium_path()), "Chromium is missing: .ci/tools installs it")
    require_tool(shutil.which("java") is not None, "Java (for EPUBCheck) is missing: .ci/tools installs it")
    for kind in ("pdf", "epub"):
        run = subprocess.run(
            [sys.executable, "-m", "book_extensions", "editions", kind, "--out", str(book.out),
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


@pytest.mark.unit
def test_the_epub_is_checked_and_copied_while_the_build_holds_its_locks(tmp_path, monkeypatch):
    # Attack 8, case 19: EPUBCheck, the copy and the stamp ran after the build had freed its
    # locks, so a second build could rewrite the EPUB they read. They run as the build's `after`
    # (the build's own test shows that runs under its locks: test_locks.py).
    from book_extensions.editions import make_editions

    args = make_editions.parse_args(["epub", "--language", "en", "--out", str(tmp_path / "out"),
                                     "--cache-root", str(tmp_path / "cache")])
    built = tmp_path / "out" / "cpu" / "epub" / "en" / make_editions.target(args, "en", "epub").name
    inside, checked = [], []

    def build_then(argv, after):
        built.parent.mkdir(parents=True)
        built.write_bytes(b"an epub")
        inside.append(True)
        try:
            return after(None)
        finally:
            inside.pop()

    monkeypatch.setattr(make_editions.build, "build_then", build_then)
    monkeypatch.setattr(make_editions, "epubcheck", lambda path: checked.append(bool(inside)) or [])
    monkeypatch.setattr(make_editions, "write_stamp", lambda path, digest: checked.append(bool(inside)))
    assert make_editions.make_epub(args) == 0
    assert checked == [True, True]
    assert make_editions.target(args, "en", "epub").read_bytes() == b"an epub"


@pytest.mark.unit
def test_bad_folders_and_a_chromium_that_cannot_start_are_one_line_each(tmp_path, monkeypatch, capsys):
    # Attack 9, cases 16, 4 and 13: a missing --docs, a file where the edition's folder goes, and a
    # Chromium that exists but cannot start were tracebacks.
    from book_extensions.editions import make_editions

    assert make_editions.main(["epub", "--docs", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("error: ") and str(tmp_path / "missing") in said[0], said

    args = make_editions.parse_args(["epub", "--language", "en", "--out", str(tmp_path / "out"),
                                     "--cache-root", str(tmp_path / "cache")])
    path = make_editions.target(args, "en", "epub")
    path.parent.parent.mkdir(parents=True)
    path.parent.write_text("a file where the folder goes")
    built = tmp_path / "out" / "cpu" / "epub" / "en" / path.name
    built.parent.mkdir(parents=True)
    built.write_bytes(b"an epub")
    monkeypatch.setattr(make_editions, "epubcheck", lambda path: [])
    assert make_editions.check_and_copy_epubs(args, {"en": "digest"}) == 1
    assert capsys.readouterr().err.strip() == f"error: [en] cannot write {path}: {path.parent} cannot be a folder (File exists)"

    monkeypatch.setenv("CHROMIUM", "/bin/true")
    with pytest.raises(make_editions.PdfError, match=r"^Chromium \(/bin/true\) did not start: "):
        make_editions.print_pdf(tmp_path / "page.html", tmp_path / "book.pdf")
