"""The book's device: its name as pages state it, and the "CPU vs CUDA" page (the
``{device-comparison}`` directive).

It compares the recorded CPU and CUDA runs (:mod:`..records.cell_records`), says which GPU and torch
produced the CUDA record, and which cells changed since (stale), in the page's language.
Until a CUDA run is recorded, the page (``book_device_page``) has nothing to show a
reader: it is left out of the tables of contents, so out of the navigation and the
offline editions, and stays reachable by its address.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from .. import build_state
from ..configuration.messages import message
from ..execution import page_state
from ..records.cell_records import compare, cpu_record_for, current_digests, load
from .readable_layout import table


@cache
def device_name(device: str) -> str:
    """The device as a page states it; stops the build if it is not available (asked once)."""
    if device == "cpu":
        return "CPU"
    import torch
    from sphinx.errors import ConfigError

    if not torch.cuda.is_available():
        raise ConfigError(f"book_device is 'cuda', but torch {torch.__version__} sees no CUDA device here")
    return torch.cuda.get_device_name(0)


class DeviceComparison(SphinxDirective):
    """Renders the comparison of the recorded CPU and CUDA runs, in the page's language."""

    def run(self) -> list[nodes.Node]:
        results = Path(self.env.app.confdir, self.config.book_results_dir)
        docs = Path(self.env.srcdir).parent
        # Re-read when a record or any page's code changes. Sphinx counts a missing
        # file as changed on every build; records_appeared() covers those instead.
        reference = self.config.book_languages[0].code
        for path in sorted(results.glob("*.json")):
            self.env.note_dependency(str(path))
        page_state.note_every_page_code(self.env)
        # Computed here, as the page is read: nothing to declare to page_state.declare_write_inputs.
        page_state.of(self.env).computed.add("device-comparison")
        cuda = load(results / "cuda.json")
        cpu = cpu_record_for(results, cuda)
        say = lambda key, **values: nodes.paragraph("", message(self.config, key).format(**values))  # noqa: E731
        if cpu is None or cuda is None:
            return [say("devices_no_record" if cuda is None else "devices_no_cpu")]
        found = compare(cpu, cuda, current_digests(docs, reference))
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
            header = [message(self.config, f"devices_col_{c}") for c in ("cell", "kind", "detail")]
            cell = lambda text: nodes.literal(text, text)  # noqa: E731
            rows = [[cell(f"{d.page} #{d.cell}"), message(self.config, f"devices_kind_{d.kind}"),
                     d.described(self.config)] for d in found]
            out.append(table(header, rows))
        return out


def cuda_recorded(app: Sphinx) -> bool:
    return Path(app.confdir, app.config.book_results_dir, "cuda.json").exists()


def leave_out_until_recorded(app: Sphinx, doctree: nodes.document) -> None:
    """No CUDA record yet: the device page leaves every table of contents, as an orphan.

    Runs before Sphinx collects the tables of contents (priority 500)."""
    page = app.config.book_device_page
    if not page or cuda_recorded(app):
        return
    if app.env.docname == page:
        app.env.metadata[page]["orphan"] = True
    for toctree in doctree.findall(addnodes.toctree):
        toctree["entries"] = [(title, ref) for title, ref in toctree["entries"] if ref != page]
        toctree["includefiles"] = [ref for ref in toctree["includefiles"] if ref != page]


def records_appeared(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Pages with the comparison, when a record file appeared or went since the last build;
    every page when the CUDA record did (the navigation of each lists the device page or not)."""
    results = Path(app.confdir, app.config.book_results_dir)
    present = sorted(p.name for p in results.glob("*.json"))
    state = build_state.site(env)
    before, state.records_present = state.records_present, present
    if before == present:  # None (not yet saved) counts as changed, as in configuration/languages.py
        return []
    if before is None or ("cuda.json" in before) != ("cuda.json" in present):
        return sorted(env.found_docs)
    return page_state.computing(env, "device-comparison")


def setup(app: Sphinx) -> None:
    app.add_directive("device-comparison", DeviceComparison)
    app.connect("doctree-read", leave_out_until_recorded, priority=400)
    app.connect("env-get-outdated", records_appeared)
