"""Checks on every executed cell, and outputs cleaned for the page.

- a cell that should raise declares ``expect_error: {type: ..., message: ...}``; every
  other error, and every declared error that did not happen, is reported with its cell;
- a cell may show at most ``book_output_limit`` characters: the executor stops a page as
  soon as one of its cells shows more; a cached page is checked here again, in case the
  limit was lowered since it ran (control characters are the executor's alone to refuse);
- object addresses (``at 0x7f…``) are blanked, and a build machine's paths are refused.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# "<SigmoidBackward0 object at 0x7f...>": the address changes on every run. Only an
# address where a repr puts one ("at 0x…"): a printed hex(3735928559) stays as it is.
ADDRESS = re.compile(r"(?<=\bat )0x[0-9a-fA-F]{6,16}\b")
ADDRESS_PLACEHOLDER = "0x…"


def cell_line(notebook, index: int) -> int | None:
    source_map = notebook.metadata.get("source_map")
    return source_map[index] + 1 if source_map else None


def expectation(metadata: dict) -> tuple[str, str] | str:
    """(type, message) declared by a cell, or a one-line reason why it is malformed."""
    declared = metadata.get("expect_error")
    if not isinstance(declared, dict):
        return "expect_error must be a mapping with 'type' and 'message'"
    type_, fragment = declared.get("type"), declared.get("message")
    if not (isinstance(type_, str) and type_ and isinstance(fragment, str) and fragment):
        return "expect_error needs a non-empty 'type' and a non-empty 'message'"
    extra = sorted(set(declared) - {"type", "message"})
    if extra:
        return f"expect_error has unknown keys: {', '.join(extra)}"
    return type_, fragment


def output_size(cell) -> int:
    """Characters a cell's outputs put on the page (an image counts as its encoded data)."""
    size = 0
    for output in cell.get("outputs", []):
        size += len(output.get("text", "")) + len(output.get("evalue", ""))
        size += sum(map(len, output.get("traceback", [])))
        size += sum(len(v) if isinstance(v, str) else len(json.dumps(v))
                    for v in output.get("data", {}).values())
    return size


def too_much_output(where: str, size: int, limit: int) -> str:
    return (f"{where} shows {size:,} characters of output, more than the {limit:,} a cell may "
            "show; print a summary or a slice")


def check_cells(app: Sphinx, docname: str, notebook) -> int:
    """Warn about every cell whose errors differ from what it declares; count them."""
    problems = 0

    def warn(text: str, location, subtype: str) -> None:
        nonlocal problems
        problems += 1
        logger.warning(text, location=location, type="book", subtype=subtype)

    code_cells = [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    for number, (index, cell) in enumerate(code_cells, start=1):
        where = f"code cell {number}"
        location = (docname, cell_line(notebook, index))
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        raised = f"{errors[0].ename}: {errors[0].evalue}" if errors else None
        size, limit = output_size(cell), app.config.book_output_limit
        if size > limit:
            warn(too_much_output(where, size, limit), location, "output_size")
        if "raises-exception" in cell.metadata.get("tags", []):
            warn(f"{where}: the 'raises-exception' tag passes even when nothing is raised; "
                 "declare expect_error: {type: ..., message: ...} instead", location, "expect_error")
        if "expect_error" not in cell.metadata:
            if raised:
                warn(f"{where} raised {raised}", location, "cell_error")
            continue
        expected = expectation(cell.metadata)
        if isinstance(expected, str):
            warn(f"{where}: {expected}", location, "expect_error")
            continue
        type_, fragment = expected
        if not errors:
            warn(f"{where} was expected to raise {type_} ({fragment!r}) but raised nothing",
                 location, "expect_error")
        elif errors[0].ename != type_ or fragment not in errors[0].evalue:
            warn(f"{where} was expected to raise {type_} ({fragment!r}) but raised {raised}",
                 location, "expect_error")
    return problems


def build_machine_paths() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    candidates = {str(root), sys.prefix, sys.base_prefix, tempfile.gettempdir(),
                  os.path.expanduser("~")}
    # Longest first, so that a warning names the most specific path.
    return sorted((p for p in candidates if p and p != "/"), key=len, reverse=True) + ["site-packages", "ipykernel_"]


def clean_outputs(docname: str, doctree: nodes.document) -> int:
    """Replace object addresses in rendered outputs; warn on build-machine paths."""
    problems = 0
    paths = build_machine_paths()
    for container in doctree.findall(nodes.container):
        if container.get("nb_element") != "cell_code_output":
            continue
        for text in list(container.findall(nodes.Text)):
            cleaned = ADDRESS.sub(ADDRESS_PLACEHOLDER, str(text))
            if cleaned != str(text):
                parent = text.parent
                parent.replace(text, nodes.Text(cleaned))
                if isinstance(parent, nodes.FixedTextElement):
                    parent.rawsource = ADDRESS.sub(ADDRESS_PLACEHOLDER, parent.rawsource)
            leaked = next((p for p in paths if p in cleaned), None)
            if leaked:
                problems += 1
                logger.warning(
                    f"an output shows a path of the build machine ({leaked!r}); "
                    "print something that does not depend on where the book is built",
                    location=container, type="book", subtype="output_path",
                )
    return problems
