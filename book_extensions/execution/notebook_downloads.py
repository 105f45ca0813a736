"""Each page as an executed notebook in its own language, to download or open in Colab.

The same notebook is what the build's record is made from (``build html --record``,
:func:`..records.cell_records.published_record`): the outputs the page shows, and the day they
were produced (:data:`OUTPUTS_DATE` in its metadata)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from docutils import nodes
from sphinx.application import Sphinx

from ..configuration.languages import current_language
from ..configuration.messages import message
from .cell_checks import ADDRESS, ADDRESS_PLACEHOLDER

NOTEBOOKS = "_notebooks"
# In a published notebook's metadata: {"book": {"outputs_date": "2026-12-05"}}, the day (UTC)
# its outputs were produced, as the page's provenance line says it.
OUTPUTS_DATE = "outputs_date"


def write_notebook(app: Sphinx, docname: str, notebook, date: str) -> None:
    """The page as an executed notebook in its own language, for readers to download (and for
    the build's record); ``date``: the day its outputs were produced."""
    import nbformat

    blank = lambda text: ADDRESS.sub(ADDRESS_PLACEHOLDER, text)  # noqa: E731
    for number, cell in enumerate(notebook.cells, 1):
        # A cell's id is random where the notebook is made from the page: numbered, the same
        # page gives the same file in every build.
        cell["id"] = f"cell-{number}"
        for output in cell.get("outputs", []):
            # Every kind of output: streams, errors (message and traceback), rich data.
            if "text" in output:
                output["text"] = blank(output["text"])
            if "evalue" in output:
                output["evalue"] = blank(output["evalue"])
            if "traceback" in output:
                output["traceback"] = [blank(line) for line in output["traceback"]]
            data = output.get("data", {})
            for kind, value in data.items():
                if isinstance(value, str) and (kind.startswith("text/") or kind.startswith("application/papermill")):
                    data[kind] = blank(value)
    notebook.metadata.pop("source_map", None)
    notebook.metadata["book"] = {OUTPUTS_DATE: date}
    target = Path(app.outdir, NOTEBOOKS, f"{docname}.ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(notebook), encoding="utf8")


def download_link(app: Sphinx, docname: str) -> list[nodes.Node]:
    """Links to the page's executed notebook: to download, and on Colab."""
    text = message(app.config, "download_notebook")
    # Percent-encoded, as Sphinx writes its own links: page names may hold spaces, or be Chinese.
    uri = "../" * docname.count("/") + quote(f"{NOTEBOOKS}/{docname}.ipynb")
    space = nodes.Text(current_language(app.config).sentence_separator)
    full_stop = nodes.Text(message(app.config, "full_stop"))
    links = [space.deepcopy(), nodes.reference(text, text, refuri=uri, classes=["book-notebook"]), full_stop.deepcopy()]
    if app.config.book_repository:
        code = Path(app.srcdir).name
        colab = (f"https://colab.research.google.com/github/{app.config.book_repository}"
                 f"/blob/notebooks/{quote(f'{code}/{docname}.ipynb')}")
        text = message(app.config, "open_in_colab")
        links += [space.deepcopy(), nodes.reference(text, text, refuri=colab, classes=["book-colab"]), full_stop.deepcopy()]
    return links
