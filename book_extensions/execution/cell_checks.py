"""Checks on every executed cell, and outputs cleaned for the page.

- a cell that should raise declares ``expect_error: {type: ..., message: ...}``; every
  other error, and every declared error that did not happen, is reported with its cell;
- a cell may show at most ``book_output_limit`` characters: the executor stops a page as
  soon as one of its cells shows more; a cached page is checked here again, in case the
  limit was lowered since it ran (control characters are the executor's alone to refuse);
- object addresses (``at 0x7f…``) are blanked, and a build machine's paths are refused;
- in a CJK edition other than the first language, a comment or docstring line of a code
  cell (or of the program it loads) still written in English is reported with its line;
- an output that shows a comment or docstring of its page, in any language, is refused:
  one execution serves every language, so the other language would show it in the words
  of the one that ran (:mod:`.code_comments`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from contextlib import suppress
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from ..configuration.settings import Language
from ..paths import ROOT
from .code_comments import english_lines, prose_in, prose_readers

logger = logging.getLogger(__name__)

# "<SigmoidBackward0 object at 0x7f...>": the address changes on every run. Only an
# address where a repr puts one ("at 0x…"): a printed hex(3735928559) stays as it is.
# What jupyter_client writes on the kernel's stderr when a cell printed a lone surrogate.
UNENCODABLE = "codec can't encode character '\\ud"

# myst-nb reads any of its settings from a cell's metadata (under "mystnb", or the older
# "render"): a cell may set only those that draw an output another way, never ones that hide it.
# Not "image" or "figure": their classes and sizes hide a figure (d-none, 1 px) that the
# record keeps (attack 7, case 19).
CELL_SETTINGS_KEYS = ("mystnb", "render")
DRAWING_SETTINGS = ("text_lexer", "error_lexer", "markdown_format", "number_source_lines",
                    "code_prompt_show", "code_prompt_hide", "scroll_outputs")


def shown_outputs(cell) -> list:
    """The cell's outputs a page shows: not those glued with display=False, which only a
    glue role or directive elsewhere shows."""
    from myst_nb.ext.glue import GLUE_PREFIX

    return [output for output in cell.get("outputs", [])
            if not (output.get("data") and all(mime.startswith(GLUE_PREFIX) for mime in output["data"]))]


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
        if any(UNENCODABLE in text for text in output_texts(cell)):
            # The kernel could not send what the cell printed; its own traceback came instead,
            # and with it the toolchain's paths (attack 6, case 18a).
            warn(f"{where} printed a character that cannot be encoded as UTF-8 (a lone surrogate), so the "
                 "kernel sent its own error instead: print the text's repr(), or encode it with "
                 "errors='replace'", location, "unencodable_output")
        tags = cell.metadata.get("tags", [])
        hidden = [tag for tag in ("remove-output", "remove-stdout", "remove-stderr") if tag in tags]
        if "remove-cell" in tags and shown_outputs(cell):
            hidden.append("remove-cell")
        if hidden:
            warn(f"{where}: the '{hidden[0]}' tag hides what the cell printed, which the book's record keeps; "
                 "show the output, or print less", location, "hidden_output")
        for key in (key for key in CELL_SETTINGS_KEYS if key in cell.metadata):
            settings = cell.metadata[key]
            other = sorted(set(settings) - set(DRAWING_SETTINGS)) if isinstance(settings, dict) else [repr(settings)]
            if other:
                warn(f"{where}: its {key} metadata sets {other[0]}, which could hide what the cell printed, which "
                     f"the book's record keeps; a cell may set only {', '.join(DRAWING_SETTINGS)}",
                     location, "hidden_output")
        if "skip-execution" in tags:
            warn(f"{where}: the 'skip-execution' tag would publish a cell that never ran; every cell of "
                 "the book runs: remove the tag, or show the code in a code block instead", location, "skip_execution")
        if "raises-exception" in tags:
            warn(f"{where}: the 'raises-exception' tag passes even when nothing is raised; "
                 "declare expect_error: {type: ..., message: ...} instead", location, "expect_error")
        if "expect_error" not in cell.metadata:
            if raised:
                # Most likely the kernel's sandbox (kernel/sandbox.py) refused a write.
                hint = ("; a page's kernel may write only in its working folder and its temporary files, "
                        "and signal only the processes it started"
                        if errors[0].ename == "PermissionError" else "")
                warn(f"{where} raised {raised}{hint}", location, "cell_error")
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
    problems += check_prose(app, docname, notebook)
    return problems


def language_of(app: Sphinx) -> tuple[Language, bool]:
    """The language being built, and whether it is the first (reference) one."""
    from ..configuration.languages import current_language

    language = current_language(app.config)
    return language, language == app.config.book_languages[0]


def first_code_line(text: str, fence: int, source: str) -> int | None:
    """The line of a page's ``text`` where the code of the code cell whose opening fence is
    on line ``fence`` (as myst-nb's ``source_map`` has it) starts, after its options; None
    if no such cell holds ``source``. myst-nb joins the fence's last lines, those after its
    options, into the cell's source: the source is the tail of the fence's content."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    parser = create_md_parser(MdParserConfig(enable_extensions={"colon_fence", "deflist"}), RendererHTML)
    for token in parser.parse(text + "\n"):
        if token.type == "fence" and token.map and token.map[0] + 1 == fence and token.info.startswith("{code-cell}"):
            at = token.content.rfind(source)
            return token.map[0] + 2 + token.content.count("\n", 0, at) if at >= 0 else None
    return None


def prose_location(app: Sphinx, docname: str, notebook, index: int, row: int) -> tuple[int | None, str]:
    """Where line ``row`` of code cell ``index`` is: its line in the page, and what a message
    adds to name it (the line of a loaded program, which is not in the page)."""
    cell = notebook.cells[index]
    source_map = notebook.metadata.get("source_map")
    loaded = cell.metadata.get("load")
    if loaded:
        return cell_line(notebook, index), f", line {row} of {loaded}"
    first = None
    if source_map:
        with suppress(OSError):
            first = first_code_line(Path(app.env.doc2path(docname)).read_text(encoding="utf8"), source_map[index],
                                    cell.source)
    return (first + row - 1, "") if first else (cell_line(notebook, index), f", its line {row}")


def page_sources(app: Sphinx, docname: str, notebook) -> list[str]:
    """The code cells' sources of this page in every language: what its outputs must not show."""
    from myst_nb.core.read import read_myst_markdown_notebook

    sources = [c.source for c in notebook.cells if c.cell_type == "code"]
    srcdir = Path(app.srcdir)
    own = Path(app.env.doc2path(docname))
    for language in app.config.book_languages:
        path = srcdir.parent / language.code / own.relative_to(srcdir)
        if path == own or not path.is_file():
            continue
        try:
            other = read_myst_markdown_notebook(path.read_text(encoding="utf8"), path=str(path))
        except Exception:  # noqa: BLE001 - parity reports a page that does not read
            continue
        sources += [c.source for c in other.cells if c.cell_type == "code"]
    return sources


def output_texts(cell) -> list[str]:
    """Every text a cell's outputs put on the page."""
    texts = []
    for output in cell.get("outputs", []):
        texts += [output.get("text", ""), output.get("evalue", ""), *output.get("traceback", [])]
        texts += [v if isinstance(v, str) else "\n".join(v) for k, v in output.get("data", {}).items()
                  if k.startswith("text/") and isinstance(v, (str, list))]
    return [t for t in texts if t]


def check_prose(app: Sphinx, docname: str, notebook) -> int:
    """Warn about comments and docstrings in English in a CJK edition, and about outputs
    that show a comment or docstring; count them."""
    problems = 0
    language, reference = language_of(app)
    code_cells = [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    if language.typography == "cjk" and not reference:
        for number, (index, cell) in enumerate(code_cells, start=1):
            for row, text in english_lines(cell.source):
                line, named = prose_location(app, docname, notebook, index, row)
                problems += 1
                logger.warning(
                    f"code cell {number}{named}: a comment or docstring in English ({text[:80]!r}); "
                    f"this edition's readers read its code too: write it in {language.name}",
                    location=(docname, line), type="book", subtype="code_comment_language")
    for number, (index, cell) in enumerate(code_cells, start=1):
        for row, what in prose_readers(cell.source):
            line, named = prose_location(app, docname, notebook, index, row)
            problems += 1
            logger.warning(
                f"code cell {number}{named} reads the code's own prose ({what}): every language is served "
                "from one execution, so whatever it prints of it is the first language's; show something "
                "that is not a comment or docstring", location=(docname, line), type="book",
                subtype="code_prose_reader")
    sources = None
    for number, (index, cell) in enumerate(code_cells, start=1):
        texts = output_texts(cell)
        if not texts:
            continue
        sources = sources if sources is not None else page_sources(app, docname, notebook)
        shown = next((found for t in texts if (found := prose_in(t, sources))), None)
        if shown:
            problems += 1
            logger.warning(
                f"code cell {number} shows a comment or docstring of the page in its output ({shown[:80]!r}): "
                "every language is served from one execution, so the other language would show it in "
                "the words of the one that ran; show something that is not the code's prose",
                location=(docname, cell_line(notebook, index)), type="book", subtype="code_comment_output")
    return problems


def build_machine_paths() -> list[str]:
    candidates = {str(ROOT), sys.prefix, sys.base_prefix, tempfile.gettempdir(),
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
