"""No published file shows where the book was built.

:mod:`..execution.cell_checks` refuses a build machine's path in a page's text, but a path reaches
readers through files that check never sees: a figure's SVG (its metadata, or text the
cell drew), a downloadable notebook's outputs and metadata, the search index, the
offline editions. So after every build that publishes (the site's html, and the
singlehtml and epub builds the offline editions are made from), every text file of
the output, and every text file inside an EPUB, is searched for the build machine's
folders: the repository, the sources, the configuration, the execution cache, the
output, the toolchain and the Python it was made from, the user's home and the temp
folder, each as written, URL-quoted (also inside ``file://`` addresses, and with every
slash quoted), HTML-escaped, JSON-escaped, with backslashes for slashes and in capitals.
Each file that holds one is one warning, which fails the build. Every file's bytes are
searched if it is text (and again with its character references read: ``&#47;tmp``), and the
text a binary file holds: an image's metadata (a PNG's text chunks, compressed or not, a JPEG's
comment and EXIF/XMP segments, a WebP's), also in a notebook's images. An image's pixels are not (their
compressed bytes hold any short run by chance), nor the PDF's compressed streams: it is
printed from the singlehtml build checked here.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import re
import struct
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from urllib.parse import quote

from sphinx.application import Sphinx
from sphinx.util import logging

from ..paths import ROOT
from .clean_files import known_clean

logger = logging.getLogger(__name__)

# A folder's name ends where a path's name characters end: "/tmp" is in "/tmp/x" and
# "/tmp." (the end of a sentence), not in "/tmpfs" or "/tmp.d".
NAME_GOES_ON = rb"(?![\w-]|\.\w)"


def machine_paths(app: Sphinx) -> list[tuple[str, str]]:
    """(absolute path, what it is) for every folder of this build machine."""
    outdir, doctreedir = Path(app.outdir).resolve(), Path(app.doctreedir).resolve()
    folders = [
        (ROOT, "the repository root"),
        (Path(app.confdir), "the configuration folder"),
        (Path(app.srcdir).parent, "the sources folder"),
        (Path(app.config.book_cache_root), "the execution cache"),
        # <out>/<device>: what the site's and the doctrees' folders have in common.
        (Path(os.path.commonpath([outdir, doctreedir])), "the output folder"),
        (Path(sys.prefix), "the toolchain"),
        (Path(sys.base_prefix), "the Python installation"),
        (Path.home(), "the user's home"),
        (Path(tempfile.gettempdir()), "the temp folder"),
    ]
    found: dict[str, str] = {}
    for folder, kind in folders:
        for form in (str(folder), os.path.realpath(folder)):
            if form != os.sep and form not in found:
                found[form] = kind
    return list(found.items())


def leak_pattern(paths: list[tuple[str, str]]) -> tuple[re.Pattern[bytes], dict[bytes, str]]:
    """One pattern for every way a file writes the paths, and what each written form is."""
    forms: dict[bytes, str] = {}
    for path, kind in paths:
        encoded = quote(path, safe="")  # every slash too: %2Fhome%2F…
        backslashed = path.replace("/", "\\")  # as a Windows path, or a string's escapes
        for form in (path, quote(path), encoded, re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), encoded),
                     html.escape(path), json.dumps(path)[1:-1], backslashed, json.dumps(backslashed)[1:-1],
                     path.upper()):
            forms.setdefault(form.encode(), kind)
    # Longest first: a path inside the home (the toolchain) is named for what it is.
    alternatives = sorted(forms, key=len, reverse=True)
    pattern = re.compile(b"(?:" + b"|".join(map(re.escape, alternatives)) + b")" + NAME_GOES_ON)
    return pattern, forms


# :mod:`..site.readable_layout` lets a long output wrap between a path's folders: "/<wbr>home/<wbr>…"
# (XHTML: "<wbr/>").
LINE_BREAK_CHANCES = (b"<wbr>", b"<wbr/>")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_START = b"\xff\xd8"
GIF_SIGNATURE = b"GIF8"
# A notebook's outputs held as text, which the notebook's own text already shows.
TEXT_MIME_TYPES = ("image/svg+xml", "application/json", "application/javascript")


def published_files(outdir: Path) -> Iterator[tuple[str, bytes]]:
    """Every file of ``outdir``: its name relative to it, and its bytes."""
    for path in sorted(outdir.rglob("*")):
        if path.is_file():
            yield path.relative_to(outdir).as_posix(), path.read_bytes()


def texts(rel: str, raw: bytes) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) for a UTF-8 file and every one inside an EPUB,
    the text of an (X)HTML file as a reader sees it, without its line-break chances; and
    the text a binary file holds: a PNG's text chunks (compressed ones inflated), also those
    of a notebook's images (base64). An image's pixels are not read: compressed, they hold
    any short run of bytes by chance."""
    if rel.endswith(".epub"):
        with zipfile.ZipFile(io.BytesIO(raw)) as epub:
            members = [(f"{rel}:{member}", epub.read(member)) for member in epub.namelist()]
    else:
        members = [(rel, raw)]
    for name, data in members:
        if is_text(data):
            for chance in LINE_BREAK_CHANCES:
                data = data.replace(chance, b"")
            yield name, data
            if b"&" in data:  # character references: &#47;tmp&#47; is /tmp/ to a reader
                yield name, html.unescape(data.decode("utf8")).encode()
        for inner in held(name, data):
            yield name, inner


def is_text(data: bytes) -> bool:
    try:
        data.decode("utf8")
    except UnicodeDecodeError:
        return False
    return True


def held(name: str, data: bytes) -> Iterator[bytes]:
    """The text a file holds in another encoding than its bytes: a PNG's text chunks,
    inflated, also those of a notebook's PNG images."""
    if data.startswith((PNG_SIGNATURE, JPEG_START, b"RIFF", GIF_SIGNATURE)):
        yield from image_text(data)
    elif name.endswith(".ipynb"):
        try:
            cells = json.loads(data).get("cells", [])
        except (ValueError, AttributeError):
            return
        for cell in cells if isinstance(cells, list) else []:
            for output in cell.get("outputs", []) if isinstance(cell, dict) else []:
                for mime_type, payload in (output.get("data") or {}).items() if isinstance(output, dict) else []:
                    if not isinstance(payload, str) or mime_type in TEXT_MIME_TYPES or mime_type.startswith("text/"):
                        continue  # read as the notebook's own text
                    try:
                        decoded = base64.b64decode(payload, validate=True)
                    except ValueError:
                        continue
                    if mime_type.startswith("image/"):
                        yield from image_text(decoded)
                    elif mime_type == "application/pdf":
                        yield from pdf_text(decoded)
                    else:  # any other binary output: its bytes as they are (attack 6, case 20)
                        yield decoded


def image_text(data: bytes) -> Iterator[bytes]:
    """The text an image file carries besides its pixels: a PNG's text chunks, a JPEG's comment
    and application segments (EXIF, XMP, IPTC), a WebP's EXIF and XMP chunks, a GIF's comment,
    text and application extensions."""
    if data.startswith(PNG_SIGNATURE):
        yield from png_text(data)
    elif data.startswith(GIF_SIGNATURE):
        yield from gif_text(data)
    elif data.startswith(JPEG_START):
        at = 2
        while at + 4 <= len(data) and data[at] == 0xFF:
            marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
            if marker == 0xDA:  # start of scan: the pixels follow
                break
            if marker == 0xFE or 0xE0 <= marker <= 0xEF:
                yield data[at + 4:at + 2 + length]
            at += 2 + length
    elif data[8:12] == b"WEBP":
        at = 12
        while at + 8 <= len(data):
            kind, length = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
            if kind in (b"EXIF", b"XMP "):
                yield data[at + 8:at + 8 + length]
            at += 8 + length + (length & 1)


def gif_text(data: bytes) -> Iterator[bytes]:
    """A GIF's extensions other than graphic control (comment, plain text, application: XMP),
    its blocks walked by their lengths, the pixels' sub-blocks skipped unread."""
    def sub_blocks(at: int) -> tuple[bytes, int]:
        body = b""
        while at < len(data) and data[at]:
            body += data[at + 1:at + 1 + data[at]]
            at += 1 + data[at]
        return body, at + 1

    if len(data) < 13:
        return
    flags = data[10]
    at = 13 + (3 * 2 ** ((flags & 7) + 1) if flags & 0x80 else 0)  # the global colour table
    while at < len(data):
        if data[at] == 0x21 and at + 1 < len(data):  # an extension
            label = data[at + 1]
            body, at = sub_blocks(at + 2)
            if label != 0xF9:
                yield body
        elif data[at] == 0x2C and at + 10 <= len(data):  # an image: its descriptor, colours, pixels
            flags = data[at + 9]
            at += 10 + (3 * 2 ** ((flags & 7) + 1) if flags & 0x80 else 0) + 1  # and the LZW code size
            _, at = sub_blocks(at)
        else:  # the trailer, or what no GIF holds
            return


def pdf_text(data: bytes) -> Iterator[bytes]:
    """A PDF's bytes, with each of its compressed (FlateDecode) streams inflated."""
    yield data
    for stream in re.finditer(rb"stream\r?\n(.*?)endstream", data, re.S):
        with suppress(zlib.error):
            yield zlib.decompressobj().decompress(stream.group(1))


def png_text(data: bytes) -> Iterator[bytes]:
    """The text of a PNG's tEXt, zTXt and iTXt chunks (keyword and value; compressed ones inflated)."""
    if not data.startswith(PNG_SIGNATURE):
        return
    at = len(PNG_SIGNATURE)
    while at + 12 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        at += 12 + length
        with suppress(zlib.error, ValueError):
            if kind == b"tEXt":
                yield body
            elif kind == b"zTXt":
                keyword, _, rest = body.partition(b"\0")
                yield keyword + b"\0" + zlib.decompress(rest[1:])
            elif kind == b"iTXt":
                keyword, _, rest = body.partition(b"\0")
                compressed, rest = rest[:1], rest[2:]
                language, _, rest = rest.partition(b"\0")
                translated, _, text = rest.partition(b"\0")
                yield b"\0".join((keyword, language, translated,
                                   zlib.decompress(text) if compressed == b"\1" else text))


def excerpt(data: bytes, start: int, end: int, around: int = 40) -> str:
    text = data[max(0, start - around): end + around].decode("utf8", errors="ignore")
    return re.sub(r"\s+", " ", text).strip()


def leaks(outdir: Path, paths: list[tuple[str, str]], known_clean: dict[str, str] | None = None,
          ) -> list[tuple[str, str, str]]:
    """(file relative to outdir, what the path is, the text around it): the first in each text.

    ``known_clean`` maps files found clean before to the digest of their bytes; those are
    skipped while unchanged, and the map is updated in place (a rebuild writes a few pages)."""
    pattern, forms = leak_pattern(paths)
    known_clean = {} if known_clean is None else known_clean
    found = []
    for rel, raw in published_files(outdir):
        stamp = hashlib.sha256(raw).hexdigest()
        if known_clean.get(rel) == stamp:
            continue
        known_clean.pop(rel, None)
        before = len(found)
        for name, data in texts(rel, raw):
            # bytes.find is much faster than the pattern: most files hold no path at all.
            if not any(form in data for form in forms):
                continue
            match = pattern.search(data)
            if match:
                found.append((name, forms[match.group()], excerpt(data, match.start(), match.end())))
        if len(found) == before:
            known_clean[rel] = stamp
    return found


def pages_showing(app: Sphinx, outdir: Path, rel: str) -> str:
    """The pages whose HTML refers to ``rel`` (a file of the output, such as an image of
    _images/, named by a digest), by their source files: read from the pages as written."""
    pages = []
    for page in sorted(outdir.rglob("*.html")):
        if rel in page.read_text(encoding="utf8", errors="replace"):
            docname = page.relative_to(outdir).with_suffix("").as_posix()
            pages.append(str(app.env.doc2path(docname, False)) if docname in app.env.found_docs
                         else page.relative_to(outdir).as_posix())
    return ", ".join(sorted(pages))


def check_build(app: Sphinx) -> None:
    # html, singlehtml and epub publish (post_build runs it after every HTML builder)
    outdir = Path(app.outdir)
    paths = machine_paths(app)
    # Files found clean by an earlier build are skipped while their bytes are the same, for
    # the same paths and rules (this module's digest): scanning every file took half a second.
    rules = hashlib.sha256(Path(__file__).read_bytes() + json.dumps(paths).encode()).hexdigest()
    with known_clean(Path(app.doctreedir) / "book-leaks-clean.json", rules) as clean:
        found = leaks(outdir, paths, clean)
    for rel, kind, around in found:
        # A figure's file (_images/, where every html builder copies images) is named by a
        # digest: the pages that show it say which it is.
        shown_on = pages_showing(app, outdir, rel) if rel.startswith("_images/") else ""
        where = f" (shown on {shown_on})" if shown_on else ""
        logger.warning(
            f"{outdir.name}/{rel}{where} holds a build-machine path ({kind}): …{around}…; "
            "publish nothing that depends on where the book is built",
            type="book", subtype="build_path",
        )
