"""What a page's source must be, each checked before or as the page is read.

- UTF-8 (else Sphinx stops the whole build without naming the file), without a byte-order
  mark (which Sphinx skips, but the book's other readers of a page would not);
- a MyST notebook whose front matter is valid YAML;
- code cells in Python (pages run in a Python kernel);
- no execution settings of its own (one timeout and one error policy for the book);
- a title (Sphinx reports a page without one from every toctree that lists it, once
  per page whose sidebar shows that toctree: six times in a small book);
- a program a code cell loads that is longer than a screen (:data:`FOLD_LINES`) is folded
  (``tags: [hide-input]``, a closed ``<details>`` that works without JavaScript), and the
  page shows the part its text discusses with a ``{literalinclude}`` of that program.
"""

from __future__ import annotations

import codecs
import os
import re
from pathlib import Path

from docutils import nodes
from myst_nb.core.read import is_myst_markdown_notebook
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

from ..execution import page_state
from ..myst_source import code_cells, not_utf8
from ..paths import RESERVED_FOLDER

logger = logging.getLogger(__name__)

# ```{code-cell} <language>: pages run in a Python kernel.
PYTHON_CELLS = {"", "ipython3", "ipython", "python3", "python"}


def refuse_other_languages(app: Sphinx, docname: str, source: list[str]) -> None:
    text = source[0]
    for number, cell in enumerate(code_cells(text), start=1):
        language = next(iter(cell.fence.argument.split()), "")
        if language not in PYTHON_CELLS:
            line = cell.line
            logger.warning(
                f"code cell {number} is marked {language!r}, but pages run in a Python kernel: "
                f"write {{code-cell}} ipython3, or a plain ```{language} block to show code without running it",
                location=(docname, line), type="book", subtype="cell_language")


# Front matter that would change how a page executes: jupyter-cache lets a notebook's
# "execution" metadata override the build's timeout, and myst-nb reads "mystnb" settings.
PAGE_EXECUTION_KEYS = ("execution", "mystnb")


def refuse_page_execution_settings(app: Sphinx, docname: str, source: list[str]) -> None:
    """One timeout and one error policy for the whole book: a page cannot set its own.

    Runs before the page is parsed (and executed), and drops the settings it refuses,
    so that the page never runs under them; the warning fails the build.
    """
    import yaml

    text = source[0]
    match = re.match(r"---\n(.*?\n)---\n", text, re.S)
    if not match:
        return
    try:
        front = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as error:
        # MyST says only "Malformed YAML"; this says what and where.
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 2 if mark else 1
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        logger.warning(f"the front matter is not valid YAML: {problem} (line {line})",
                       location=(docname, line), type="book", subtype="front_matter")
        page_state.of(app.env, docname).bad_front_matter = True  # not again as "not a MyST notebook"
        return
    refused = [key for key in PAGE_EXECUTION_KEYS if isinstance(front, dict) and key in front]
    if not refused:
        return
    line = next((n for n, text in enumerate(match.group(1).splitlines(), start=2)
                 if text.split(":")[0].strip() in refused), 1)
    logger.warning(
        f"front matter sets {', '.join(refused)}: a page cannot change how it executes or which outputs "
        "it shows (the build's settings hold for every page: its timeout, its error policy, every output "
        "shown); remove it", location=(docname, line), type="book", subtype="page_execution",
    )
    for key in refused:
        del front[key]
    source[0] = "---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False) + "---\n" + text[match.end():]


FOLD_LINES = 40  # about a screen of code, on a phone and on a laptop
OPTIONS_BLOCK = re.compile(r"---\n(.*?)^---[ \t]*$", re.S | re.M)
OPTION_LINE = re.compile(r":(\w[\w-]*):[ \t]*(.*)")
LITERALINCLUDE = re.compile(r"^[`~:]{3,}\{literalinclude\}[ \t]+(\S+)", re.M)


def cell_options(body: str) -> dict:
    """A code cell's options: its ``---`` YAML block, or its leading ``:name: value`` lines."""
    return cell_options_and_end(body)[0]


def cell_options_and_end(body: str) -> tuple[dict, int]:
    """A code cell's options, and where they end in ``body`` (0: it has none, or unreadable ones)."""
    import yaml

    if body.startswith("---\n"):
        match = OPTIONS_BLOCK.match(body)
        try:
            options = yaml.safe_load(match.group(1)) if match else None
        except yaml.YAMLError:
            return {}, 0  # myst-nb says what is wrong with it
        # The closing line's newline too: the code starts on the next line.
        end = match.end() + (body[match.end():match.end() + 1] == "\n")
        return (options, end) if isinstance(options, dict) else ({}, 0)
    options, end = {}, 0
    for line in body.splitlines(keepends=True):
        found = OPTION_LINE.fullmatch(line.strip())
        if not found:
            break
        try:
            options[found.group(1)] = yaml.safe_load(found.group(2)) if found.group(2) else None
        except yaml.YAMLError:
            return {}, 0
        end += len(line)
    return options, end


def invalid_cell_metadata(options: dict) -> tuple[str, str] | None:
    """(the option, why) where nbformat's schema refuses a code cell's options as its metadata
    (``tags`` not a list of strings, ``name`` not a string…), which myst-nb gives it whole:
    its validation error would stop Sphinx with a traceback naming no page (attack 7, case 17)."""
    import json

    import nbformat

    for key, value in options.items():
        # YAML reads dates and sets, which no notebook (JSON) holds: nbformat's writer raised.
        try:
            faithful = json.loads(json.dumps(value)) == value
        except (TypeError, ValueError):
            faithful = False
        if not faithful:
            return str(key), f"a {type(value).__name__}, which a notebook cannot hold"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("")])
    notebook.cells[0].metadata = options
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as error:
        path = list(getattr(error, "absolute_path", []))
        key = str(path[3]) if len(path) > 3 else next(iter(options), "?")
        return key, str(error.message).splitlines()[0]
    return None


def refuse_malformed_cell_metadata(app: Sphinx, docname: str, source: list[str]) -> None:
    """Before the page is parsed: each code cell option the notebook format refuses is reported
    and dropped, so that myst-nb reads the page; the warning fails the build."""
    import yaml

    text = source[0]
    for number, cell in reversed(list(enumerate(code_cells(text), start=1))):
        options, end = cell_options_and_end(text[cell.body_start:cell.body_end])
        dropped = []
        while options and (found := invalid_cell_metadata(options)) is not None and found[0] in options:
            key, why = found
            logger.warning(f"code cell {number}: its option {key!r} is not what a notebook allows ({why})",
                           location=(docname, cell.line), type="book", subtype="cell_metadata")
            dropped.append(options.pop(key))
        if dropped:
            block = "---\n" + yaml.safe_dump(options, allow_unicode=True, sort_keys=False) + "---\n" if options else ""
            text = text[:cell.body_start] + block + text[cell.body_start + end:]
    source[0] = text


def loaded_programs(text: str, page: Path) -> list[Path]:
    """The file each code cell of ``page`` (its ``text``) loads (``load: <file>``, beside the
    page), as myst-nb resolves it; whether it exists is myst-nb's to say."""
    loads = (cell_options(text[cell.body_start:cell.body_end]).get("load") for cell in code_cells(text))
    return [Path(os.path.normpath(page.parent / load)) for load in loads if isinstance(load, str) and load]


def unfolded_programs(text: str, page: Path) -> list[tuple[int, str]]:
    """(line, problem) for each code cell that loads a program longer than FOLD_LINES
    without folding it, or without the page showing a part of it."""
    shown = {os.path.normpath(page.parent / target) for target in LITERALINCLUDE.findall(text)}
    problems = []
    for number, cell in enumerate(code_cells(text), start=1):
        options = cell_options(text[cell.body_start:cell.body_end])
        load = options.get("load")
        if not isinstance(load, str):
            continue
        try:
            count = len((page.parent / load).read_text(encoding="utf8").splitlines())
        except (OSError, UnicodeDecodeError):
            continue  # myst-nb says the program cannot be loaded
        if count <= FOLD_LINES:
            continue
        tags = options.get("tags") if isinstance(options.get("tags"), list) else []
        missing = [what for what, ok in (("fold it (tags: [hide-input])", "hide-input" in tags),
                                         (f"show the part the text discusses ({{literalinclude}} {load}, "
                                          ":pyobject: one function)", os.path.normpath(page.parent / load) in shown))
                   if not ok]
        if missing:
            problems.append((cell.line, f"code cell {number} loads {load}, {count} lines, longer than a screen "
                                        f"({FOLD_LINES}): {' and '.join(missing)}"))
    return problems


def refuse_unfolded_programs(app: Sphinx, docname: str, source: list[str]) -> None:
    for line, problem in unfolded_programs(source[0], Path(app.env.doc2path(docname))):
        logger.warning(problem, location=(docname, line), type="book", subtype="unfolded_program")


def refuse_undecodable_pages(app: Sphinx, env, docnames: list[str]) -> None:
    """A page that is not UTF-8 is reported and left unread; Sphinx would stop the whole build.

    One that starts with a byte-order mark is read (Sphinx and myst-nb skip the mark) and
    refused: the book's other readers of a page (parity, records, typography) take the mark
    as text, so they would see no front matter, or a page that differs from its twin.
    """
    for docname in list(docnames):
        data = Path(env.doc2path(docname)).read_bytes()
        if data.startswith(codecs.BOM_UTF8):
            logger.warning("starts with a byte-order mark: save the page as UTF-8 without BOM",
                           location=(docname, 1), type="book", subtype="encoding")
        problem = not_utf8(data)
        if problem:
            line, byte = problem
            logger.warning(f"not valid UTF-8 (byte 0x{byte} at line {line}): save the page as UTF-8",
                           location=(docname, line), type="book", subtype="encoding")
            docnames.remove(docname)
            env.project.docnames.discard(docname)  # else Sphinx looks for its doctree later


# A page's name becomes its URL, its notebook's download name and the names of the build's
# files (a partial file of a page is ".<name>.html.<random>.partial"): file names hold 255 bytes.
PAGE_NAME_LIMIT = 100


def refuse_long_names(app: Sphinx, env, docnames: list[str]) -> None:
    """A page whose name is longer than :data:`PAGE_NAME_LIMIT` bytes is reported and left unread."""
    for docname in list(docnames):
        size = len(docname.rpartition("/")[2].encode())
        if size > PAGE_NAME_LIMIT:
            logger.warning(f"the page's name is {size} bytes long, more than the {PAGE_NAME_LIMIT} a page's name "
                           "may have (it names its URL and the build's files): give it a shorter one",
                           location=(docname, 1), type="book", subtype="page_name")
            docnames.remove(docname)
            env.project.docnames.discard(docname)


# The pages Sphinx's HTML builder writes itself, in each language's folder: a page of the book
# with one of these names was silently replaced by Sphinx's (attack 8, cases 15 and 25a).
SPHINX_PAGES = re.compile(r"(search|genindex|[a-z]+-modindex)")


def page_name_problem(docname: str) -> str | None:
    if SPHINX_PAGES.fullmatch(docname):
        return f"a page may not be named {docname}: Sphinx writes its own {docname}.html in its place; give it another name"
    if RESERVED_FOLDER.fullmatch(docname):
        return (f"a page may not be in the folder {docname.rsplit('/', 1)[0]}/: offline/ holds the offline editions, and "
                "a folder whose name starts with _ is Sphinx's or the book's own; move it")
    return None


def refuse_sphinx_page_names(app: Sphinx, env, docnames: list[str]) -> None:
    """A page named as a page Sphinx writes itself, or in a folder the site keeps for other files,
    is reported and left unread (so it is found again, and reported again, by the next build)."""
    for docname in list(docnames):
        problem = page_name_problem(docname)
        if problem:
            logger.warning(problem, location=(docname, 1), type="book", subtype="page_name")
            docnames.remove(docname)
            env.project.docnames.discard(docname)


def refuse_other_formats(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    source = Path(env.doc2path(env.docname))
    state = page_state.of(env)
    if source.suffix != ".md":
        # A Jupyter notebook (.ipynb) would bring its own outputs and metadata, which the
        # book's checks of a page's source do not read.
        state.problems = 1
        logger.warning(f"a page of the book is a MyST notebook (.md), not a {source.suffix} file: convert it "
                       "(jupytext --to myst)", location=env.docname, type="book", subtype="not_notebook")
        return
    # As Sphinx read it: without a byte-order mark (refused above, once).
    if is_myst_markdown_notebook(source.read_text(encoding="utf-8-sig")):
        return
    state.problems = 1
    if state.bad_front_matter:
        return  # said already, as what is wrong with it
    logger.warning("not a MyST notebook: every page starts with front matter that has "
                   "'file_format: mystnb' and a kernelspec", location=env.docname,
                   type="book", subtype="not_notebook")


def quiet_repeated_warning(app: Sphinx, config: Config) -> None:
    config.suppress_warnings = [*config.suppress_warnings, "toc.no_title"]


def refuse_untitled_page(app: Sphinx, doctree: nodes.document) -> None:
    if next(doctree.findall(nodes.title), None) is None:
        logger.warning("the page has no title: start it with a '# ' heading",
                       location=app.env.docname, type="book", subtype="no_title")


def refuse_another_pages_doctree(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """``doctree-resolved``: the doctree Sphinx kept of a page is that page's. Two doctrees
    swapped in a damaged or restored build folder published one page's body under the other's
    title, with exit 0 (attack 12, case 19). A failed build leaves no note: the next one
    reads every page again (commands/build.py)."""
    source = doctree.get("source")
    if source and os.path.normpath(source) != os.path.normpath(app.env.doc2path(docname)):
        logger.warning(f"the build folder's doctree of this page is another page's ({source}): the "
                       "build folder is damaged; build again (every page is read again)",
                       location=docname, type="book", subtype="damaged_doctree")


def setup(app: Sphinx) -> None:
    app.connect("config-inited", quiet_repeated_warning)
    app.connect("doctree-resolved", refuse_another_pages_doctree, priority=100)
    app.connect("env-before-read-docs", refuse_undecodable_pages, priority=400)
    app.connect("env-before-read-docs", refuse_long_names, priority=400)
    app.connect("env-before-read-docs", refuse_sphinx_page_names, priority=400)
    # Before myst-nb's own source-read handling, which executes the page.
    app.connect("source-read", refuse_page_execution_settings, priority=100)
    app.connect("source-read", refuse_other_languages, priority=100)
    app.connect("source-read", refuse_unfolded_programs, priority=100)
    app.connect("source-read", refuse_malformed_cell_metadata, priority=100)
    app.connect("doctree-read", refuse_other_formats)
    app.connect("doctree-read", refuse_untitled_page)
