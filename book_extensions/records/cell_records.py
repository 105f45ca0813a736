"""Records of what every code cell printed, and their comparison (devices, releases, runs).
Their command line is :mod:`.device_records` (``python -m book_extensions records``).

A record (``results/<device>.json``) is small, reviewable text: for every code cell
of the book, in page order, a digest of its code (without its comments and docstrings,
:mod:`..execution.code_comments`: rewording a comment, or translating it, leaves a record current) and
what it printed (text, or ``Error: message``), and a digest of everything else it showed
(``media``: HTML, Markdown, LaTeX, JSON, SVG and raster images, each by a rendering that equal
outputs share, :func:`media_entry`); a kind no rendering is known for is refused, in one line
naming the page and the cell. Records are compared cell by cell at the same position of a page
(a page may hold the same code twice); the digest says whether the cell there is still
the same code, else it is missing or stale. A record written before the digests existed (no
``format``: :data:`FORMAT`) is still read: beside it, only the text is compared, and the
commands say so.
:func:`compare` normalises what is expected to differ between devices (device strings,
``torch.cuda.FloatTensor``, float noise within :data:`RTOL`/:data:`ATOL`, and, when the
two runs used different torch versions, the wording of messages) and reports the rest
as behaviour differences: an error on one device only, another exception type, other
flags, names or counts, values beyond tolerance.

The same comparison, with other rules, finds what changed between torch releases
(:mod:`.release_changes`) and between two runs (:mod:`..commands.determinism`); :mod:`..site.device_page` renders
the CPU/CUDA one on the book's "CPU vs CUDA" page.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path

from ..configuration.messages import ENGLISH, message
from ..configuration.settings import reference_language
from ..execution.code_comments import code_of
from ..paths import write_atomically

RTOL, ATOL = 1e-4, 2e-4  # printed tensors have four decimals

NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+|(?<![\w.])-?\d+(?![\w.])")
DEVICE_NOISE = [
    (re.compile(r",\s*device='cuda(?::\d+)?'"), ""),
    (re.compile(r"torch\.cuda\.(\w+Tensor)"), r"torch.\1"),
    (re.compile(r"\bcuda:\d+\b"), "<device>"),
    (re.compile(r"(?<![\w'])'?cuda'?(?![\w'])"), "<device>"),
    (re.compile(r"(?<![\w'])'?cpu'?(?![\w'])"), "<device>"),
]


GLUED = "application/papermill.record/text/plain"
GLUE_PREFIX = "application/papermill.record/"  # myst-nb's glue: what the page pastes, under its own kind
# 2: every cell's non-text outputs digested (``media``); records without ``format`` predate that.
FORMAT = 2


class UncomparableOutput(Exception):
    """An output of a kind that records cannot compare: one line naming the page, cell and kind."""


def source_digest(source: str) -> str:
    """What a record keeps of a cell's source: a digest of its code, comments and docstrings aside."""
    return hashlib.sha256(code_of(source).encode("utf8")).hexdigest()[:16]


def output_text(output) -> str:
    """One output as text, with object addresses blanked as on the pages."""
    from ..execution.cell_checks import ADDRESS, ADDRESS_PLACEHOLDER

    if output["output_type"] == "stream":
        text = output["text"]
    elif output["output_type"] == "error":
        text = f"{output['ename']}: {output['evalue']}"
    else:
        data = output.get("data", {})
        # A glued value (myst-nb's glue) is recorded by what it shows on the page.
        text = (data.get("text/plain") or data.get(GLUED)
                or "[" + ", ".join(sorted(data)) + "]")
    return ADDRESS.sub(ADDRESS_PLACEHOLDER, text)


# What a page shows besides text/plain, by kind, and how a record reduces each to a digest
# that equal outputs share and different ones do not.
TEXT_KINDS = ("text/html", "text/markdown", "text/latex", "application/javascript")
RASTER_KINDS = ("image/png", "image/jpeg", "image/gif", "image/webp")

SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
SVG_ID = re.compile(r'(?<=\bid=")[^"]+(?=")|(?<=url\(#)[^)]+(?=\))|(?<=href="#)[^"]+(?=")')


def svg_rendering(text: str) -> str:
    """An SVG as equal drawings share it: matplotlib stamps its metadata with the date and, unless
    ``svg.hashsalt`` is set (:mod:`..kernel.figures` sets it), names its clip paths and markers
    from a random salt; the metadata goes and every id is numbered in order of first use."""
    text = SVG_METADATA.sub("", text)
    ids: dict[str, str] = {}
    for found in re.finditer(r'\bid="([^"]+)"', text):
        ids.setdefault(found.group(1), f"id{len(ids)}")
    return SVG_ID.sub(lambda found: ids.get(found.group(), found.group()), text)


def raster_rendering(encoded: str) -> bytes:
    """A raster image by its pixels, decoded (Pillow, which matplotlib requires): what a reader
    sees, whatever metadata or compression the file carries."""
    import base64
    import io

    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(encoded))) as image:
        frames = []
        for frame in range(getattr(image, "n_frames", 1)):
            image.seek(frame)
            pixels = image.convert("RGBA")
            frames.append(f"{pixels.size}".encode() + pixels.tobytes())
    return b"\0".join(frames)


def media_entry(kind: str, value) -> str | None:
    """``"<kind> <digest>"`` for one shown kind of an output, or None when records cannot compare it."""
    from ..execution.cell_checks import ADDRESS, ADDRESS_PLACEHOLDER

    if isinstance(value, list):  # nbformat may keep a text as its lines
        value = "".join(value)
    if kind in TEXT_KINDS:
        rendering = ADDRESS.sub(ADDRESS_PLACEHOLDER, value).encode("utf8")
    elif kind == "application/json":
        rendering = json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf8")
    elif kind == "image/svg+xml":
        rendering = svg_rendering(value).encode("utf8")
    elif kind in RASTER_KINDS:
        rendering = raster_rendering(value)
    else:
        return None
    return f"{kind} {hashlib.sha256(rendering).hexdigest()[:16]}"


def shown_kinds(output) -> list[tuple[str, object]]:
    """(kind, value) of everything an output shows besides its text (a glued output's kinds
    without glue's prefix), in a stable order."""
    if output["output_type"] not in ("display_data", "execute_result"):
        return []
    data = {(kind[len(GLUE_PREFIX):] if kind.startswith(GLUE_PREFIX) else kind): value
            for kind, value in output.get("data", {}).items()}
    return sorted(((kind, value) for kind, value in data.items() if kind != "text/plain"), key=lambda item: item[0])


def media(outputs: list, where: str | None = None) -> list[str]:
    """The digest entries of a cell's outputs; with ``where`` (how a message names the page and
    cell), a kind records cannot compare is refused, else it is left out."""
    entries = []
    for output in outputs:
        for kind, value in shown_kinds(output):
            entry = media_entry(kind, value)
            if entry is None and where is not None:
                raise UncomparableOutput(
                    f"{where} shows {kind}, which no record can compare (nor `nox -s determinism`): "
                    "show it as text, HTML, Markdown, LaTeX, JSON, SVG or a PNG, JPEG, GIF or WebP image")
            if entry is not None:
                entries.append(entry)
    return entries


def joined_streams(outputs: list) -> list:
    """Consecutive chunks of one stream as one output: chunking is a matter of timing."""
    joined = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (output["output_type"] == "stream" and previous is not None
                and previous["output_type"] == "stream" and previous["name"] == output["name"]):
            joined[-1] = {**previous, "text": previous["text"] + output["text"]}
        else:
            joined.append(output)
    return joined


def book_notebooks(docs: Path, language: str | None = None):
    """(page, notebook) for every page (of the reference language), read the way the build reads it."""
    from myst_nb.core.read import read_myst_markdown_notebook

    language = language or reference_language()
    for path in sorted((docs / language).rglob("*.md")):
        text = path.read_text(encoding="utf8")
        notebook = read_myst_markdown_notebook(text, path=str(path))
        yield path.relative_to(docs / language).with_suffix("").as_posix(), notebook


def page_source(docs: Path, page: str, language: str | None = None) -> str:
    """How messages name a page (of the reference language unless told): docs/en/detach.md."""
    return f"{docs.name}/{language or reference_language()}/{page}.md"


def current_digests(docs: Path, language: str | None = None) -> dict[str, list[str]]:
    """Per page, the digest of each code cell as the page is now (of ``language``, default the reference)."""
    return {page: [source_digest(c.source) for c in nb.cells if c.cell_type == "code"]
            for page, nb in book_notebooks(docs, language)}


class RecordError(Exception):
    """Why a record cannot be made, in one line (a page the cache has not executed)."""


def record(device: str, cache_dir: Path, docs: Path, language: str | None = None, notebooks=None) -> dict:
    """Every code cell's outputs, from the device's execution cache, for the pages of
    ``language`` (default the reference one: every language is one execution), or for
    ``notebooks``, (page, notebook) pairs."""
    from jupyter_cache import get_cache

    from ..execution.runner import cache_lock, cached_notebook

    executed = []
    cache = get_cache(str(cache_dir)) if cache_dir.is_dir() else None
    for page, notebook in notebooks if notebooks is not None else book_notebooks(docs, language):
        cells = [c for c in notebook.cells if c.cell_type == "code"]
        if not cells:
            continue
        found = None
        if cache is not None:
            # cached_notebook drops a damaged record: a change to the database, as a build makes.
            with cache_lock(str(cache_dir)):
                found, notebook_with_outputs, _ = cached_notebook(cache, notebook)
        if found is None:
            raise RecordError(f"{page_source(docs, page, language)} has no {device} execution in {cache_dir}; "
                              "build first")
        executed.append((page, notebook_with_outputs, found.created.strftime("%Y-%m-%d")))
    return record_of(device, executed, docs, language)


def published_record(device: str, site: Path, docs: Path, language: str | None = None) -> dict:
    """Every code cell's outputs as the site ``site`` (``<out>/<device>/html``) published them:
    from the executed notebook beside each page of ``language`` (default the reference one),
    the one the page itself was rendered from, so the record cannot disagree with the page.
    A page of ``docs`` whose published notebook is missing or holds other code is refused."""
    import nbformat

    from ..execution.notebook_downloads import NOTEBOOKS, OUTPUTS_DATE

    language = language or reference_language()
    executed = []
    for page, notebook in book_notebooks(docs, language):
        code = [source_digest(c.source) for c in notebook.cells if c.cell_type == "code"]
        if not code:
            continue
        where = page_source(docs, page, language)
        path = site / language / NOTEBOOKS / f"{page}.ipynb"
        try:
            published = nbformat.reads(path.read_text(encoding="utf8"), as_version=nbformat.NO_CONVERT)
        except (OSError, UnicodeDecodeError, ValueError, nbformat.ValidationError) as error:
            why = "missing" if isinstance(error, FileNotFoundError) else f"unreadable ({type(error).__name__})"
            raise RecordError(f"{where}: its published notebook {path} is {why}; build html "
                              f"(--language {language}) first") from None
        date = (published.metadata.get("book") or {}).get(OUTPUTS_DATE)
        if [source_digest(c.source) for c in published.cells if c.cell_type == "code"] != code or not isinstance(date, str):
            raise RecordError(f"{where}: its published notebook {path} was not built from this page; build html "
                              f"(--language {language}) first")
        executed.append((page, published, date))
    return record_of(device, executed, docs, language)


def record_of(device: str, executed: list, docs: Path, language: str | None) -> dict:
    """The record of ``executed``: (page, notebook with its outputs, the day they were produced)."""
    import torch

    pages = {}
    for page, notebook, _ in executed:
        code = [c for c in notebook.cells if c.cell_type == "code"]
        pages[page] = [recorded_cell(cell, f"{page_source(docs, page, language)}: code cell {number}")
                       for number, cell in enumerate(code, start=1)]
    return {
        "format": FORMAT,
        "device": device,
        "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "CPU",
        "torch": torch.__version__,
        "cuda": torch.version.cuda if device == "cuda" else None,
        "python": platform.python_version(),
        # When the newest of these outputs was produced, so rebuilding from the
        # cache rewrites the record unchanged.
        "date": max(date for _, _, date in executed) if executed else None,
        "pages": pages,
    }


def recorded_cell(cell, where: str) -> dict:
    """A code cell as a record holds it: its code's digest, its text, and (when it shows any)
    the digests of its other kinds; ``where`` names it in the refusal of a kind none can compare."""
    outputs = cell.get("outputs", [])
    entry = {"source": source_digest(cell.source), "outputs": [output_text(o) for o in joined_streams(outputs)]}
    shown = media(outputs, where)
    return {**entry, "media": shown} if shown else entry


def compares_media(record: dict) -> bool:
    """Whether a record digests what its cells show besides text (records made before did not)."""
    return record.get("format", 1) >= FORMAT


def without_media(record: dict) -> dict:
    """A record as one made before the digests would be: to compare it with such a record."""
    pages = {page: [{k: v for k, v in cell.items() if k != "media"} for cell in cells]
             for page, cells in record["pages"].items()}
    return {**{k: v for k, v in record.items() if k != "format"}, "pages": pages}


def media_unread(first: dict, second: dict, names: tuple[str, str]) -> str | None:
    """The line that says a comparison saw only text, because a record predates the digests."""
    old = [name for name, data in zip(names, (first, second)) if not compares_media(data)]
    if not old:
        return None
    return (f"only text compared: the record of {' and '.join(old)} predates the digests of images, HTML "
            "and the other kinds a page shows; record it again to compare them")


# Where torch's own C++ source raised a warning: the line moves between releases.
SOURCE_REFERENCE = re.compile(r"\(Triggered internally at [^)]*\)")


def normalise(text: str, loose_wording: bool, devices: bool = True) -> str:
    text = SOURCE_REFERENCE.sub("(Triggered internally at …)", text)
    if devices:
        for pattern, replacement in DEVICE_NOISE:
            text = pattern.sub(replacement, text)
    if loose_wording:
        # Another torch may word a message differently: keep the exception or warning type.
        text = re.sub(r"^(\w+(?:Error|Warning|Exception)): .*$", r"\1: …", text, flags=re.M)
    return text


def numbers_close(a: str, b: str) -> bool:
    x, y = float(a), float(b)
    return abs(x - y) <= ATOL + RTOL * max(abs(x), abs(y))


@dataclass
class Difference:
    page: str
    cell: int
    kind: str  # "behaviour", "value", "stale", "missing"
    detail: str
    first: str = ""  # what differs, as each side printed it (one line or one value)
    second: str = ""
    template: str = ""  # the detail as a message key and its values, to say it in any language
    values: dict = field(default_factory=dict)

    def described(self, config=None) -> str:
        """The detail in the language ``config`` (a Sphinx application's) builds; English without one."""
        return message(config, self.template).format(**self.values) if self.template else self.detail

    @property
    def fails(self) -> bool:
        return self.kind in ("behaviour", "value")


@dataclass(frozen=True)
class Rules:
    """How two records are compared: what each side is called and what counts as noise."""

    names: tuple[str, str] = ("CPU", "CUDA")
    devices: bool = True  # device strings and torch.cuda.* type names are noise
    wording: bool | None = None  # compare message wording; None: only when torch versions match


DEVICE_RULES = Rules()


def compare_outputs(first: list[str], second: list[str], loose_wording: bool,
                    rules: Rules = DEVICE_RULES) -> tuple[str, str, str, str] | None:
    """(kind, detail, first side, second side) of the first difference normalising does not explain."""
    one, two = rules.names

    def errors(outputs):
        return [o.split(":")[0] for o in outputs if re.match(r"^\w+(Error|Exception): ", o)]

    first_errors, second_errors = errors(first), errors(second)
    if bool(first_errors) != bool(second_errors):
        raised = first_errors or second_errors
        return difference_fields("behaviour", "difference_raised_only", last_line(first), last_line(second),
                     error=raised[0], side=one if first_errors else two)
    if first_errors != second_errors:
        return difference_fields("behaviour", "difference_raised_other", first_errors[0], second_errors[0], one=one, two=two)
    a = normalise("\n".join(first), loose_wording, rules.devices)
    b = normalise("\n".join(second), loose_wording, rules.devices)
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        # The first line that differs; only blank lines, if the lines themselves all agree.
        line_a, line_b = next(((x, y) for x, y in zip_longest(a.split("\n"), b.split("\n"), fillvalue="")
                               if x != y), (repr(a[-40:]), repr(b[-40:])))
        return difference_fields("behaviour", "difference_printed", line_a.strip(), line_b.strip(), one=one, two=two,
                     quoted_first=repr(line_a.strip()), quoted_second=repr(line_b.strip()))
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        if not numbers_close(x, y):
            return difference_fields("value", "difference_value", x, y, one=one, two=two)
    return None


def compare_media(first: list[str], second: list[str], rules: Rules = DEVICE_RULES) -> tuple | None:
    """(kind, detail, first side, second side, ...) when two cells show other images, HTML or
    JSON (or a different number of them): digests, compared exactly."""
    if first == second:
        return None
    one, two = rules.names
    pairs = list(zip_longest(first, second, fillvalue=""))
    a, b = next((x, y) for x, y in pairs if x != y)
    shown = (a or b).split(" ")[0]
    return difference_fields("behaviour", "difference_shown", a or "-", b or "-", one=one, two=two, shown=shown)


def difference_fields(kind: str, template: str, first: str = "", second: str = "", **values: str) -> tuple:
    """Difference's fields after page and cell: the detail in English (for the command line),
    and as a message with its values, to say it in the language of a page."""
    values = {"first": first, "second": second, **values}
    return kind, ENGLISH[template].format(**values), first, second, template, values


def last_line(outputs: list[str]) -> str:
    lines = "\n".join(outputs).strip().splitlines()
    return lines[-1] if lines else ""


def release_of(record: dict) -> str:
    """The torch release of a record, without a local build label such as +cpu."""
    return record["torch"].split("+")[0]


def cell_at(cells: list[dict], number: int, source: str) -> dict | None:
    """Code cell ``number`` (from 1) of a record's page if it still has this source digest, else None.

    Cells are matched by position, the digest only checks it: a page may hold the same
    code twice, and each of the two may print something else."""
    cell = cells[number - 1] if number <= len(cells) else None
    return cell if cell is not None and cell["source"] == source else None


def compare(first: dict, second: dict, digests: dict[str, list[str]] | None = None,
            rules: Rules = DEVICE_RULES) -> list[Difference]:
    """Every difference between two records, cell by cell in page order; ``digests`` (the
    current code) marks the second record's cells whose code has changed since as stale."""
    loose = (release_of(first) != release_of(second)) if rules.wording is None else not rules.wording
    both_media = compares_media(first) and compares_media(second)  # else only text: media_unread says so
    found = []
    for page, cells in sorted(first["pages"].items()):
        others = second["pages"].get(page, [])
        for number, cell in enumerate(cells, start=1):
            other = cell_at(others, number, cell["source"])
            if other is None:
                found.append(Difference(page, number, *difference_fields("missing", "difference_missing",
                                                                         two=rules.names[1])))
                continue
            result = compare_outputs(cell["outputs"], other["outputs"], loose, rules)
            if result is None and both_media:
                result = compare_media(cell.get("media", []), other.get("media", []), rules)
            if result:
                found.append(Difference(page, number, *result))
    if digests is not None:
        for page, cells in sorted(second["pages"].items()):
            current = digests.get(page, [])
            for number, cell in enumerate(cells, start=1):
                if number > len(current) or cell["source"] != current[number - 1]:
                    found.append(Difference(page, number, *difference_fields("stale", "difference_stale",
                                                                             two=rules.names[1])))
    return found


RECORD_FIELDS = {  # what the book reads of a record: each key, and what its value must be
    "device": (lambda v: isinstance(v, str) and v.strip(), "a device such as 'cpu'"),
    "device_name": (lambda v: isinstance(v, str) and v.strip(), "a non-empty string"),
    "torch": (lambda v: isinstance(v, str) and re.fullmatch(r"\d+\.\d+\.\d+(\+[\w.]+)?", v), "a torch version such as '2.15.0+cpu'"),
    "cuda": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "python": (lambda v: isinstance(v, str) and re.fullmatch(r"\d+(\.\d+)*\S*", v), "a Python version such as '3.11.7'"),
    "date": (lambda v: v is None or isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v), "a date such as '2026-12-01', or null"),
}


def record_problems(path: Path, name: str, release: str | None = None) -> list[str]:
    """What makes ``path`` not a record the book can read, one line each (the file called
    ``name``); ``release``: the torch release its file name says it holds. [] when it is one.
    The build driver asks before Sphinx starts, where a bad record was a crash report."""
    try:
        data = json.loads(path.read_text(encoding="utf8"))
    except UnicodeDecodeError as error:
        return [f"{name}: not UTF-8 (byte {error.object[error.start]:#04x} at offset {error.start})"]
    except ValueError as error:  # JSONDecodeError: a truncated or hand-edited file
        return [f"{name}: not valid JSON ({error}): record it again"]
    except OSError as error:
        return [f"{name}: cannot be read ({error.strerror or error})"]
    if not isinstance(data, dict):
        return [f"{name}: must be a record (a JSON object with {', '.join(RECORD_FIELDS)} and pages), "
                f"not {type(data).__name__}"]
    found = [f"{name}: {key!r} is missing" if key not in data else f"{name}: {key!r} must be {what}, not {data[key]!r}"
             for key, (valid, what) in RECORD_FIELDS.items() if key not in data or not valid(data[key])]
    pages = data.get("pages")
    if not isinstance(pages, dict) or not pages:
        found.append(f"{name}: 'pages' must map each page to its code cells, not {pages!r}"
                     if "pages" in data else f"{name}: 'pages' is missing")
    else:
        found += [f"{name}: {problem}" for problem in [pages_problem(pages)] if problem]
    if release is not None and not found:
        if release_of(data) != release:  # the book would show it as that release's outputs
            found.append(f"{name}: holds a record of torch {data['torch']}, not of torch {release} as its name says")
    return found


def pages_problem(pages: dict) -> str | None:
    """The first cell of a record's pages that is not {"source": digest, "outputs": [text, ...]}."""
    for page, cells in pages.items():
        if not isinstance(cells, list):
            return f"pages[{page!r}] must be a list of code cells, not {type(cells).__name__}"
        for number, cell in enumerate(cells, start=1):
            if not (isinstance(cell, dict) and isinstance(cell.get("source"), str)
                    and isinstance(cell.get("outputs"), list) and all(isinstance(o, str) for o in cell["outputs"])):
                return (f"pages[{page!r}] code cell {number} must be "
                        f'{{"source": <digest>, "outputs": [<text>, ...]}}, not {json.dumps(cell)[:60]}')
    return None


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf8"))
    except FileNotFoundError:
        return None


def cpu_record_for(results: Path, cuda: dict | None) -> dict | None:
    """The CPU record to hold a CUDA record against: of the same torch release when one
    was recorded (``nox -s versions``), so that only the device differs; else cpu.json."""
    if cuda is not None:
        same = load(results / f"cpu-torch-{release_of(cuda)}.json")
        if same is not None:
            return same
    return load(results / "cpu.json")


def cpu_record_name(results: Path, cuda: dict) -> str:
    """Which file :func:`cpu_record_for` took."""
    same = results / f"cpu-torch-{release_of(cuda)}.json"
    return same.name if same.exists() else "cpu.json"


# Two CPU runs of one torch release: nothing is noise, wording included.
SAME_RELEASE_RULES = Rules(names=("recorded", "this run"), devices=False, wording=True)


def cache_dir_for(device: str, cache_root: Path) -> Path:
    from ..execution.cache_key import cache_dir

    return cache_dir(cache_root, device)


def write_record(device: str, cache_dir: Path, docs: Path, results: Path, language: str | None = None) -> Path:
    """Record the pages of ``docs`` from ``cache_dir`` into ``results/<device>.json`` (whole or
    not at all): ``records record``, from a cache no build is writing."""
    return save_record(record(device, cache_dir, docs, language), results)


def write_published_record(device: str, site: Path, docs: Path, results: Path, language: str | None = None) -> Path:
    """Record the pages of ``docs`` as the site ``site`` published them (:func:`published_record`)
    into ``results/<device>.json``: what ``build html --record`` writes once it has published."""
    return save_record(published_record(device, site, docs, language), results)


def save_record(data: dict, results: Path) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    target = results / f"{data['device']}.json"
    write_atomically(target, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {target} ({sum(map(len, data['pages'].values()))} cells)")
    return target
