"""CPU against CUDA: record each device's executed outputs, and compare them.

    python -m book_extensions.devices record --device cuda   # after a CUDA build
    python -m book_extensions.devices compare                # results/cpu.json vs results/cuda.json

A record (``results/<device>.json``) is small, reviewable text: for every code cell
of the book, a digest of its source and what it printed (text, or ``Error: message``).
:func:`compare` normalises what is expected to differ between devices (device strings,
``torch.cuda.FloatTensor``, float noise within :data:`RTOL`/:data:`ATOL`, and, when the
two runs used different torch versions, the wording of messages) and reports the rest
as behaviour differences: an error on one device only, another exception type, other
flags, names or counts, values beyond tolerance.

The ``{device-comparison}`` directive renders the comparison on the book's
"CPU vs CUDA" page, says which GPU and torch produced the CUDA record, and which cells
changed since (stale).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RTOL, ATOL = 1e-4, 2e-4  # printed tensors have four decimals

NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+|(?<![\w.])-?\d+(?![\w.])")
DEVICE_NOISE = [
    (re.compile(r",\s*device='cuda(?::\d+)?'"), ""),
    (re.compile(r"torch\.cuda\.(\w+Tensor)"), r"torch.\1"),
    (re.compile(r"\bcuda:\d+\b"), "<device>"),
    (re.compile(r"(?<![\w'])'?cuda'?(?![\w'])"), "<device>"),
    (re.compile(r"(?<![\w'])'?cpu'?(?![\w'])"), "<device>"),
]


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf8")).hexdigest()[:16]


def output_text(output) -> str:
    """One output as text, with object addresses blanked as on the pages."""
    from .execution import ADDRESS, ADDRESS_PLACEHOLDER

    if output["output_type"] == "stream":
        text = output["text"]
    elif output["output_type"] == "error":
        text = f"{output['ename']}: {output['evalue']}"
    else:
        data = output.get("data", {})
        text = data.get("text/plain") or "[" + ", ".join(sorted(data)) + "]"
    return ADDRESS.sub(ADDRESS_PLACEHOLDER, text)


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


def book_notebooks(docs: Path, language: str = "en"):
    """(page, notebook) for every page, read the way the build reads it."""
    from myst_nb.core.read import read_myst_markdown_notebook

    for path in sorted((docs / language).rglob("*.md")):
        text = path.read_text(encoding="utf8")
        notebook = read_myst_markdown_notebook(text, path=str(path))
        yield path.relative_to(docs / language).with_suffix("").as_posix(), notebook


def current_digests(docs: Path) -> dict[str, list[str]]:
    return {page: [source_digest(c.source) for c in nb.cells if c.cell_type == "code"]
            for page, nb in book_notebooks(docs)}


def record(device: str, cache_dir: Path, docs: Path) -> dict:
    """Every code cell's outputs, from the device's execution cache."""
    from jupyter_cache import get_cache

    import torch

    cache = get_cache(str(cache_dir))
    pages = {}
    executed_at = []
    for page, notebook in book_notebooks(docs):
        cells = [c for c in notebook.cells if c.cell_type == "code"]
        if not cells:
            continue
        try:
            executed_at.append(cache.match_cache_notebook(notebook).created)
            _, executed = cache.merge_match_into_notebook(notebook)
        except KeyError:
            raise SystemExit(f"error: docs/en/{page}.md has no {device} execution in {cache_dir}; build first")
        code = [c for c in executed.cells if c.cell_type == "code"]
        pages[page] = [
            {"source": source_digest(cell.source),
             "outputs": [output_text(o) for o in joined_streams(cell.get("outputs", []))]}
            for cell in code
        ]
    return {
        "device": device,
        "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "CPU",
        "torch": torch.__version__,
        "cuda": torch.version.cuda if device == "cuda" else None,
        "python": platform.python_version(),
        # When the newest of these outputs was produced, so rebuilding from the
        # cache rewrites the record unchanged.
        "date": max(executed_at).strftime("%Y-%m-%d") if executed_at else None,
        "pages": pages,
    }


def normalise(text: str, loose_wording: bool) -> str:
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

    @property
    def fails(self) -> bool:
        return self.kind in ("behaviour", "value")


def compare_outputs(cpu: list[str], cuda: list[str], loose_wording: bool) -> tuple[str, str] | None:
    """(kind, detail) of the first difference that normalising does not explain."""
    def errors(outputs):
        return [o.split(":")[0] for o in outputs if re.match(r"^\w+(Error|Exception): ", o)]

    cpu_errors, cuda_errors = errors(cpu), errors(cuda)
    if bool(cpu_errors) != bool(cuda_errors):
        raised = cpu_errors or cuda_errors
        return "behaviour", f"{raised[0]} only on {'CPU' if cpu_errors else 'CUDA'}"
    if cpu_errors != cuda_errors:
        return "behaviour", f"CPU raised {cpu_errors[0]}, CUDA raised {cuda_errors[0]}"
    a = normalise("\n".join(cpu), loose_wording)
    b = normalise("\n".join(cuda), loose_wording)
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        line_a, line_b = next((x, y) for x, y in zip(a.splitlines() + [""], b.splitlines() + [""]) if x != y)
        return "behaviour", f"CPU printed {line_a.strip()!r}, CUDA printed {line_b.strip()!r}"
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        if not numbers_close(x, y):
            return "value", f"CPU {x} against CUDA {y}"
    return None


def compare(cpu: dict, cuda: dict, digests: dict[str, list[str]] | None = None) -> list[Difference]:
    """Every difference between two records; ``digests`` (the current code) marks stale cells."""
    loose = cpu["torch"].split("+")[0] != cuda["torch"].split("+")[0]
    found = []
    for page, cells in sorted(cpu["pages"].items()):
        by_source = {cell["source"]: cell for cell in cuda["pages"].get(page, [])}
        for number, cell in enumerate(cells, start=1):
            other = by_source.get(cell["source"])
            if other is None:
                found.append(Difference(page, number, "missing", "not in the CUDA record (code changed since)"))
                continue
            result = compare_outputs(cell["outputs"], other["outputs"], loose)
            if result:
                found.append(Difference(page, number, *result))
    if digests is not None:
        for page, cells in sorted(cuda["pages"].items()):
            current = set(digests.get(page, []))
            for number, cell in enumerate(cells, start=1):
                if cell["source"] not in current:
                    found.append(Difference(page, number, "stale", "this cell's code has changed since the CUDA run"))
    return found


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf8"))
    except FileNotFoundError:
        return None


def cache_dir_for(device: str, cache_root: Path) -> Path:
    from .execution import cache_dir

    return cache_dir(cache_root, device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions.devices")
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="write results/<device>.json from the execution cache")
    rec.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    rec.add_argument("--cache-root", type=Path, default=ROOT / ".jupyter_cache")
    rec.add_argument("--docs", type=Path, default=ROOT / "docs")
    rec.add_argument("--results", type=Path, default=ROOT / "results")
    cmp_ = commands.add_parser("compare", help="compare results/cpu.json and results/cuda.json")
    cmp_.add_argument("--results", type=Path, default=ROOT / "results")
    cmp_.add_argument("--docs", type=Path, default=ROOT / "docs")
    args = parser.parse_args(argv)

    if args.command == "record":
        data = record(args.device, cache_dir_for(args.device, args.cache_root), args.docs)
        args.results.mkdir(parents=True, exist_ok=True)
        target = args.results / f"{args.device}.json"
        target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf8")
        print(f"wrote {target} ({sum(map(len, data['pages'].values()))} cells)")
        return 0

    cpu, cuda = load(args.results / "cpu.json"), load(args.results / "cuda.json")
    if cpu is None:
        print(f"error: {args.results / 'cpu.json'} is missing: run `nox -s record` first", file=sys.stderr)
        return 2
    if cuda is None:
        print("No CUDA run is recorded yet (results/cuda.json): nothing to compare.")
        return 0
    differences = compare(cpu, cuda, current_digests(args.docs))
    print(f"CPU ({cpu['torch']}) against CUDA ({cuda['torch']}, {cuda['device_name']}, "
          f"CUDA {cuda['cuda']}, {cuda['date']})")
    for d in differences:
        print(f"  {d.kind:<9} docs/en/{d.page}.md code cell {d.cell}: {d.detail}")
    failing = [d for d in differences if d.fails]
    print(f"{len(failing)} behaviour differences, "
          f"{len([d for d in differences if not d.fails])} stale or missing cells")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())


# --- the "CPU vs CUDA" page -------------------------------------------------

from docutils import nodes  # noqa: E402
from sphinx.application import Sphinx  # noqa: E402
from sphinx.util.docutils import SphinxDirective  # noqa: E402

from .messages import message  # noqa: E402


def table(rows: list[list[str]], header: list[str]) -> nodes.table:
    group = nodes.tgroup(cols=len(header))
    group += [nodes.colspec(colwidth=1) for _ in header]

    def row(cells, literal=()):
        result = nodes.row()
        for index, text in enumerate(cells):
            entry = nodes.entry()
            entry += nodes.paragraph("", "", nodes.literal(text, text) if index in literal else nodes.Text(text))
            result += entry
        return result

    group += nodes.thead("", row(header))
    group += nodes.tbody("", *(row(cells, literal=(0,)) for cells in rows))
    return nodes.table("", group)


class DeviceComparison(SphinxDirective):
    """Renders the comparison of the recorded CPU and CUDA runs, in the page's language."""

    def run(self) -> list[nodes.Node]:
        language = self.config.language
        results = Path(self.env.app.confdir, self.config.book_results_dir)
        docs = Path(self.env.srcdir).parent
        # Re-read when a record or any page's code changes. Sphinx counts a missing
        # file as changed on every build; records_appeared() covers those instead.
        for path in [results / "cpu.json", results / "cuda.json", *sorted((docs / "en").rglob("*.md"))]:
            if path.exists():
                self.env.note_dependency(str(path))
        if not hasattr(self.env, "book_comparison_docs"):
            self.env.book_comparison_docs = set()
        self.env.book_comparison_docs.add(self.env.docname)
        cpu, cuda = load(results / "cpu.json"), load(results / "cuda.json")
        say = lambda key, **values: nodes.paragraph("", message(language, key).format(**values))  # noqa: E731
        if cpu is None or cuda is None:
            return [say("devices_no_record" if cuda is None else "devices_no_cpu")]
        found = compare(cpu, cuda, current_digests(docs))
        compared = sum(len(cells) for cells in cpu["pages"].values())
        failing = [d for d in found if d.fails]
        stale = [d for d in found if not d.fails]
        out = [
            say("devices_runs", gpu=cuda["device_name"], torch=cuda["torch"], cuda=cuda["cuda"],
                date=cuda["date"], cpu_torch=cpu["torch"], cpu_date=cpu["date"]),
            say("devices_summary", compared=compared, failing=len(failing)),
        ]
        if stale:
            out.append(say("devices_stale", stale=len(stale)))
        if found:
            header = [message(language, f"devices_col_{c}") for c in ("cell", "kind", "detail")]
            rows = [[f"{d.page} #{d.cell}", message(language, f"devices_kind_{d.kind}"), d.detail] for d in found]
            out.append(table(rows, header))
        return out


def records_appeared(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Pages with the comparison, when a record file appeared or went since the last build."""
    results = Path(app.confdir, app.config.book_results_dir)
    present = sorted(p.name for p in results.glob("*.json"))
    before = getattr(env, "book_records_present", None)
    env.book_records_present = present
    if before == present:  # None (not yet saved) counts as changed, as in languages.py
        return []
    return sorted(getattr(env, "book_comparison_docs", set()))


def merge_comparison_docs(app: Sphinx, env, docnames, other) -> None:
    env.book_comparison_docs = getattr(env, "book_comparison_docs", set()) | getattr(
        other, "book_comparison_docs", set())


def setup(app: Sphinx) -> None:
    app.add_config_value("book_results_dir", "results", "env", str)
    app.add_directive("device-comparison", DeviceComparison)
    app.connect("env-get-outdated", records_appeared)
    app.connect("env-merge-info", merge_comparison_docs)
