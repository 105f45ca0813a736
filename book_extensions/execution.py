"""Execution of the book's pages: device, cache, cell checks, clean outputs, provenance.

myst-nb executes each page in a fresh kernel through a jupyter-cache. This module

- points every kernel at :mod:`.kernel_startup` (device, short tracebacks, warnings
  without paths) and keeps one cache per device, torch version and kernel inputs
  (startup file, figures.py, the versions of numpy, IPython, ipykernel, matplotlib, networkx);
- lets every cell run to the end (``nb_execution_allow_errors``) and then decides
  itself, cell by cell, whether an error was expected: a cell that should raise
  declares ``expect_error: {type: ..., message: ...}`` in its metadata;
- replaces object addresses in outputs and refuses build-machine paths;
- states on each page which torch, device and date produced its outputs;
- writes ``book-executions.json`` beside the doctrees: which pages this build
  read and which of them it had to execute (the benchmark counts these).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from docutils import nodes
from jupyter_cache import get_cache
from myst_nb.core.read import create_nb_reader, is_myst_markdown_notebook
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.util import logging

from . import executor, page_state, releases
from .languages import current_language
from .messages import message

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda")
KERNEL_STARTUP = Path(__file__).with_name("kernel_startup.py")
EXECUTIONS_FILE = "book-executions.json"

# "<SigmoidBackward0 object at 0x7f...>": the address changes on every run. Only an
# address where a repr puts one ("at 0x…"): a printed hex(3735928559) stays as it is.
ADDRESS = re.compile(r"(?<=\bat )0x[0-9a-fA-F]{6,16}\b")
ADDRESS_PLACEHOLDER = "0x…"

def torch_version() -> str:
    return importlib.metadata.version("torch")


@cache
def device_name(device: str) -> str:
    """The device as a page states it; stops the build if it is not available."""
    if device == "cpu":
        return "CPU"
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"book_device is 'cuda', but torch {torch.__version__} sees no CUDA device here"
        )
    return torch.cuda.get_device_name(0)


# What a page's outputs depend on besides its code: the kernel's startup file, the book's
# code that pages import, how pages are executed, and the packages that compute or print
# what a cell shows.
KERNEL_FILES = (KERNEL_STARTUP, Path(__file__).with_name("figures.py"), Path(__file__).with_name("executor.py"))
KERNEL_PACKAGES = ("numpy", "ipython", "ipykernel", "matplotlib", "networkx")


def kernel_inputs_digest() -> str:
    digest = hashlib.sha256()
    for path in KERNEL_FILES:
        digest.update(path.read_bytes())
    for package in KERNEL_PACKAGES:
        digest.update(f"{package}=={importlib.metadata.version(package)}\n".encode())
    return digest.hexdigest()[:8]


def cache_dir(cache_root: Path, device: str) -> Path:
    """One execution cache per device, torch version and everything else outputs depend on."""
    return Path(cache_root) / f"{device}-torch{torch_version()}-inputs{kernel_inputs_digest()}"


def cache_path(config: Config) -> Path:
    return cache_dir(Path(config.book_cache_root), config.book_device)


def configure_execution(app: Sphinx, config: Config) -> None:
    device = config.book_device
    if device not in DEVICES:
        raise ConfigError(f"book_device must be one of {', '.join(DEVICES)}, not {device!r}")
    device_name(device)
    if not Path(config.book_cache_root).is_absolute():
        config.book_cache_root = str(Path(app.confdir, config.book_cache_root))
    config.nb_execution_cache_path = str(cache_path(config))
    # Create the cache's database now: parallel readers that each find it missing
    # race to create its tables, and all but one crash.
    try:
        get_cache(config.nb_execution_cache_path).list_cache_records()
    except Exception as error:  # sqlalchemy's errors for a corrupt or foreign database file
        cause = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ConfigError(f"the execution cache {config.nb_execution_cache_path} cannot be read "
                          f"({cause}): remove it with `make clean-cache` and build again") from None
    # Errors never stop a page: check_cells() below judges every cell afterwards,
    # so one build reports every unexpected (or missing) error of every page.
    config.nb_execution_allow_errors = True
    config.nb_execution_raise_on_error = False
    prepare_kernels(device)
    root = Path(app.confdir)
    executor.sources_root = root
    executor.watched_sources = [root / "conf.py", root / "book_extensions", root / "examples",
                                Path(app.srcdir).parent]
    # Prose names the torch that built the page as {{ torch_version }}, never as a literal.
    config.myst_substitutions = {**config.myst_substitutions, "torch_version": torch_version()}
    if device != "cpu":
        config.doctest_global_setup = (
            f"import torch\ntorch.set_default_device({device!r})\n"
            + (config.doctest_global_setup or "")
        )


def prepare_kernels(device: str) -> None:
    """Kernels inherit the environment of the process that starts them.

    The startup file sets the device and output style; the repository on their path
    lets pages draw figures with book_extensions.figures.
    """
    os.environ["PYTHONSTARTUP"] = str(KERNEL_STARTUP)
    os.environ["BOOK_DEVICE"] = device
    root = str(Path(__file__).resolve().parent.parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *[p for p in paths if p != root]])


# Pages whose front matter is not YAML (reported once, not again as "not a MyST notebook").
bad_front_matter: set[str] = set()

# ```{code-cell} <language>: pages run in a Python kernel.
CODE_CELL = re.compile(r"^(?:`{3,}|~{3,})\{code-cell\}[ \t]*(\S*)", re.M)
PYTHON_CELLS = {"", "ipython3", "ipython", "python3", "python"}


def refuse_other_languages(app: Sphinx, docname: str, source: list[str]) -> None:
    text = source[0]
    for number, match in enumerate(CODE_CELL.finditer(text), start=1):
        language = match.group(1)
        if language not in PYTHON_CELLS:
            line = text.count("\n", 0, match.start()) + 1
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
        bad_front_matter.add(docname)
        return
    refused = [key for key in PAGE_EXECUTION_KEYS if isinstance(front, dict) and key in front]
    if not refused:
        return
    line = next((n for n, text in enumerate(match.group(1).splitlines(), start=2)
                 if text.split(":")[0].strip() in refused), 1)
    logger.warning(
        f"front matter sets {', '.join(refused)}: a page cannot change how it executes "
        f"(the build's nb_execution_timeout is {app.config.nb_execution_timeout} s for every page); "
        "remove it", location=(docname, line), type="book", subtype="page_execution",
    )
    for key in refused:
        del front[key]
    source[0] = "---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False) + "---\n" + text[match.end():]


def keep_build_files_out_of_the_site(app: Sphinx) -> None:
    """Runs after myst-nb's own builder-inited handler.

    myst-nb writes each page's notebook and output files to ``<site>/jupyter_execute``,
    one folder for every language, inside what gets published. Per-language files
    belong beside the doctrees. Failure reports of an earlier build go too.
    """
    folder = Path(app.doctreedir) / "jupyter_execute"
    app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(folder))
    shutil.rmtree(Path(app.outdir) / "reports", ignore_errors=True)


def source_notebook(app: Sphinx, docname: str):
    """The page as myst-nb reads it: a notebook without outputs."""
    env = app.env
    path = Path(env.doc2path(docname))
    text = path.read_text(encoding="utf8")
    return create_nb_reader(str(path), env.myst_config, env.mystnb_config, text).read(text)


def executed_notebook(app: Sphinx, docname: str):
    """The page's notebook with its outputs, as the execution client left it."""
    return executor.executed_notebooks.pop(str(Path(app.env.doc2path(docname))))


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
            warn(f"{where} shows {size:,} characters of output, more than the {limit:,} a cell may "
                 "show; print a summary or a slice", location, "output_size")
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


def report_failed_execution(app: Sphinx, docname: str, exec_data: dict) -> None:
    """A page whose execution did not finish: the page, the cell and the cause, in one line."""
    error, detail = exec_data.get("error"), exec_data.get("book_detail") or ""
    where, location = "", docname
    index = exec_data.get("book_cell")
    notebook = source_notebook(app, docname)
    if index is not None and index < len(notebook.cells):
        number = sum(1 for cell in notebook.cells[: index + 1] if cell.cell_type == "code")
        where = f" in code cell {number}"
        location = (docname, cell_line(notebook, index))
    if error == "CellTimeoutError":
        reason = f"a cell ran longer than the {app.config.nb_execution_timeout} s timeout{where}"
    elif error == "DeadKernelError":
        reason = f"the kernel died{where} ({detail})"
    elif error == "SourcesChanged":
        reason = (f"the book's sources changed while this page executed: {detail}; if a cell "
                  "wrote there, restore them (git checkout) and let the page write only in its "
                  "working folder; if you edited them, build again")
    else:
        reason = f"execution stopped with {error}{where}" + (f": {detail}" if detail else "")
    logger.warning(
        f"{reason}; nothing from this page was cached",
        location=location, type="book", subtype="execution",
    )


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


def provenance_note(app: Sphinx, exec_data: dict) -> nodes.paragraph:
    date = datetime.fromtimestamp(exec_data["mtime"], tz=UTC).strftime("%Y-%m-%d")
    text = message("provenance").format(
        torch=torch_version(), device=device_name(app.config.book_device), date=date
    )
    return nodes.paragraph(text, text, classes=["book-provenance"])


NOTEBOOKS = "_notebooks"


def write_notebook(app: Sphinx, docname: str, notebook) -> None:
    """The page as an executed notebook in its own language, for readers to download."""
    import nbformat

    blank = lambda text: ADDRESS.sub(ADDRESS_PLACEHOLDER, text)  # noqa: E731
    for cell in notebook.cells:
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
    target = Path(app.outdir, NOTEBOOKS, f"{docname}.ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(notebook), encoding="utf8")


def download_link(app: Sphinx, docname: str) -> list[nodes.Node]:
    """Links to the page's executed notebook: to download, and on Colab."""
    text = message("download_notebook")
    uri = "../" * docname.count("/") + f"{NOTEBOOKS}/{docname}.ipynb"
    space = nodes.Text(current_language(app.config)["sentence_separator"])
    links = [space.deepcopy(), nodes.reference(text, text, refuri=uri, classes=["book-notebook"])]
    if app.config.book_repository:
        code = Path(app.srcdir).name
        colab = (f"https://colab.research.google.com/github/{app.config.book_repository}"
                 f"/blob/notebooks/{code}/{docname}.ipynb")
        text = message("open_in_colab")
        links += [space.deepcopy(), nodes.reference(text, text, refuri=colab, classes=["book-colab"])]
    return links


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    docname = env.docname
    source = Path(env.doc2path(docname))
    if source.suffix == ".md" and not is_myst_markdown_notebook(source.read_text(encoding="utf8")):
        page_state.of(env).problems = 1
        if docname in bad_front_matter:
            return
        logger.warning("not a MyST notebook: every page starts with front matter that has "
                       "'file_format: mystnb' and a kernelspec", location=docname,
                       type="book", subtype="not_notebook")
        return
    exec_data = NbMetadataCollector.get_exec_data(env, docname)
    if not exec_data:
        return  # nothing to execute
    state = page_state.of(env)
    state.executed = exec_data.get("book_executed", False)
    if not exec_data["succeeded"]:
        report_failed_execution(app, docname, exec_data)
        state.problems = 1
        return
    notebook = executed_notebook(app, docname)
    state.problems += check_cells(app, docname, notebook)
    state.problems += clean_outputs(docname, doctree)
    note = provenance_note(app, exec_data)
    note += releases.annotate(app, docname, doctree, notebook)
    if app.builder.format == "html":
        write_notebook(app, docname, notebook)
        note += download_link(app, docname)
    doctree.append(note)


def reread_pages_with_problems(app: Sphinx, env, added, changed, removed) -> list[str]:
    # Sphinx re-reads only changed pages, so a page whose cells failed would pass
    # the next build unread. Reading it again is cheap: its outputs are cached.
    return [d for d, state in page_state.every(env).items() if state.problems and d not in removed]


def refuse_undecodable_pages(app: Sphinx, env, docnames: list[str]) -> None:
    """A page that is not UTF-8 is reported and left unread; Sphinx would stop the whole build."""
    for docname in list(docnames):
        data = Path(env.doc2path(docname)).read_bytes()
        try:
            data.decode("utf8")
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            byte = data[error.start: error.start + 1].hex()
            logger.warning(f"not valid UTF-8 (byte 0x{byte} at line {line}): save the page as UTF-8",
                           location=(docname, line), type="book", subtype="encoding")
            docnames.remove(docname)
            env.project.docnames.discard(docname)  # else Sphinx looks for its doctree later


def on_env_before_read_docs(app: Sphinx, env, docnames: list[str]) -> None:
    refuse_undecodable_pages(app, env, docnames)
    env.book_read_now = sorted(docnames)


def write_executions(app: Sphinx, exception: Exception | None) -> None:
    env = app.env
    read = getattr(env, "book_read_now", [])
    report = {
        "read": read,
        "executed": sorted(d for d in read if page_state.of(env, d).executed),
        "cache": app.config.nb_execution_cache_path,
    }
    Path(app.doctreedir).mkdir(parents=True, exist_ok=True)
    Path(app.doctreedir, EXECUTIONS_FILE).write_text(json.dumps(report, indent=1) + "\n")


def setup(app: Sphinx) -> None:
    executor.install()
    app.add_config_value("book_device", os.environ.get("BOOK_DEVICE", "cpu"), "env", str)
    app.add_config_value("book_cache_root", ".jupyter_cache", "", str)
    app.add_config_value("book_repository", "", "env", str)
    # Per code cell: the largest output of the book is about 15,000 characters (a figure).
    app.add_config_value("book_output_limit", 100_000, "env", int)
    app.connect("config-inited", configure_execution)
    app.connect("builder-inited", keep_build_files_out_of_the_site, priority=600)
    app.connect("env-before-read-docs", on_env_before_read_docs)
    # Before myst-nb's own source-read handling, which executes the page.
    app.connect("source-read", refuse_page_execution_settings, priority=100)
    app.connect("source-read", refuse_other_languages, priority=100)
    app.connect("doctree-read", on_doctree_read)
    app.connect("env-get-outdated", reread_pages_with_problems)
    app.connect("build-finished", write_executions)
