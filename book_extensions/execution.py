"""Execution of the book's pages: device, cache, cell checks, clean outputs, provenance.

myst-nb executes each page in a fresh kernel through a jupyter-cache. This module

- points every kernel at :mod:`.kernel_startup` (device, short tracebacks, warnings
  without paths) and keeps one cache per device, torch version and startup file;
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
import sys
import re
import tempfile
import time
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from jupyter_cache import get_cache
from myst_nb.core.read import create_nb_reader
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.util import logging

from .messages import message

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda")
KERNEL_STARTUP = Path(__file__).with_name("kernel_startup.py")
EXECUTIONS_FILE = "book-executions.json"

# "<SigmoidBackward0 object at 0x7f...>": the address changes on every run.
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")
ADDRESS_PLACEHOLDER = "0x…"

# Set when the configuration is read, before parallel readers fork: a page whose
# execution record is newer than this was executed by this build.
_build_started = time.time()


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


def cache_path(config: Config) -> Path:
    startup = hashlib.sha256(KERNEL_STARTUP.read_bytes()).hexdigest()[:8]
    name = f"{config.book_device}-torch{torch_version()}-startup{startup}"
    return Path(config.book_cache_root) / name


def configure_execution(app: Sphinx, config: Config) -> None:
    global _build_started
    _build_started = time.time()
    device = config.book_device
    if device not in DEVICES:
        raise ConfigError(f"book_device must be one of {', '.join(DEVICES)}, not {device!r}")
    device_name(device)
    if not Path(config.book_cache_root).is_absolute():
        config.book_cache_root = str(Path(app.confdir, config.book_cache_root))
    config.nb_execution_cache_path = str(cache_path(config))
    # Errors never stop a page: check_cells() below judges every cell afterwards,
    # so one build reports every unexpected (or missing) error of every page.
    config.nb_execution_allow_errors = True
    config.nb_execution_raise_on_error = False
    # Kernels inherit the environment of the process that starts them.
    os.environ["PYTHONSTARTUP"] = str(KERNEL_STARTUP)
    os.environ["BOOK_DEVICE"] = device
    if device != "cpu":
        config.doctest_global_setup = (
            f"import torch\ntorch.set_default_device({device!r})\n"
            + (config.doctest_global_setup or "")
        )


def executed_notebook(app: Sphinx, docname: str):
    """The page's notebook with the outputs that the cache holds for it."""
    env = app.env
    path = Path(env.doc2path(docname))
    text = path.read_text(encoding="utf8")
    reader = create_nb_reader(str(path), env.myst_config, env.mystnb_config, text)
    notebook = reader.read(text)
    cache_ = get_cache(app.config.nb_execution_cache_path)
    _, merged = cache_.merge_match_into_notebook(notebook)
    return merged


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


def check_cells(app: Sphinx, docname: str, notebook) -> None:
    """Warn about every cell whose errors differ from what it declares."""
    code_cells = [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    for number, (index, cell) in enumerate(code_cells, start=1):
        where = f"code cell {number}"
        location = (docname, cell_line(notebook, index))
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        raised = f"{errors[0].ename}: {errors[0].evalue}" if errors else None
        if "raises-exception" in cell.metadata.get("tags", []):
            logger.warning(
                f"{where}: the 'raises-exception' tag passes even when nothing is raised; "
                "declare expect_error: {type: ..., message: ...} instead",
                location=location, type="book", subtype="expect_error",
            )
        if "expect_error" not in cell.metadata:
            if raised:
                logger.warning(
                    f"{where} raised {raised}",
                    location=location, type="book", subtype="cell_error",
                )
            continue
        expected = expectation(cell.metadata)
        if isinstance(expected, str):
            logger.warning(
                f"{where}: {expected}",
                location=location, type="book", subtype="expect_error",
            )
            continue
        type_, fragment = expected
        if not errors:
            logger.warning(
                f"{where} was expected to raise {type_} ({fragment!r}) but raised nothing",
                location=location, type="book", subtype="expect_error",
            )
        elif errors[0].ename != type_ or fragment not in errors[0].evalue:
            logger.warning(
                f"{where} was expected to raise {type_} ({fragment!r}) but raised {raised}",
                location=location, type="book", subtype="expect_error",
            )


def report_failed_execution(docname: str, exec_data: dict, timeout: int) -> None:
    """myst-nb already warns; this says it in the reader's terms, with the cell."""
    error = exec_data.get("error")
    cell = ""
    # nbclient quotes the start of the cell that timed out in its message.
    preview = re.search(r"preview of the cell contents:\n-+\n(.*)", exec_data.get("traceback") or "")
    if preview:
        cell = f" in the cell starting {preview.group(1).strip()[:80]}"
    if error == "CellTimeoutError":
        reason = f"a cell ran longer than the {timeout} s timeout{cell}"
    elif error == "DeadKernelError":
        reason = f"the kernel died{cell}"
    else:
        reason = f"execution stopped with {error}{cell}"
    logger.warning(
        f"{reason}; nothing from this page was cached",
        location=docname, type="book", subtype="execution",
    )


def build_machine_paths() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    candidates = {str(root), sys.prefix, sys.base_prefix, tempfile.gettempdir(),
                  os.path.expanduser("~")}
    return sorted(p for p in candidates if p and p != "/") + ["site-packages", "ipykernel_"]


def clean_outputs(docname: str, doctree: nodes.document) -> None:
    """Replace object addresses in rendered outputs; warn on build-machine paths."""
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
                logger.warning(
                    f"an output shows a path of the build machine ({leaked!r}); "
                    "print something that does not depend on where the book is built",
                    location=container, type="book", subtype="output_path",
                )


def provenance_note(app: Sphinx, exec_data: dict) -> nodes.paragraph:
    language = app.config.language
    date = datetime.fromtimestamp(exec_data["mtime"], tz=timezone.utc).strftime("%Y-%m-%d")
    text = message(language, "provenance").format(
        torch=torch_version(), device=device_name(app.config.book_device), date=date
    )
    return nodes.paragraph(text, text, classes=["book-provenance"])


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    docname = env.docname
    exec_data = NbMetadataCollector.get_exec_data(env, docname)
    if not exec_data:
        return  # not a notebook, or nothing to execute
    if not hasattr(env, "book_executions"):
        env.book_executions = {}
    env.book_executions[docname] = exec_data["mtime"] >= _build_started
    if not exec_data["succeeded"]:
        report_failed_execution(docname, exec_data, app.config.nb_execution_timeout)
        return
    check_cells(app, docname, executed_notebook(app, docname))
    clean_outputs(docname, doctree)
    doctree.append(provenance_note(app, exec_data))


def on_env_before_read_docs(app: Sphinx, env, docnames: list[str]) -> None:
    env.book_read_now = sorted(docnames)
    for docname in docnames:
        getattr(env, "book_executions", {}).pop(docname, None)


def on_env_merge_info(app: Sphinx, env, docnames, other) -> None:
    env.book_executions = {**getattr(env, "book_executions", {}),
                           **getattr(other, "book_executions", {})}


def write_executions(app: Sphinx, exception: Exception | None) -> None:
    env = app.env
    read = getattr(env, "book_read_now", [])
    executions = getattr(env, "book_executions", {})
    report = {
        "read": read,
        "executed": sorted(d for d in read if executions.get(d)),
        "cache": app.config.nb_execution_cache_path,
    }
    Path(app.doctreedir).mkdir(parents=True, exist_ok=True)
    Path(app.doctreedir, EXECUTIONS_FILE).write_text(json.dumps(report, indent=1) + "\n")


def setup(app: Sphinx) -> None:
    app.add_config_value("book_device", os.environ.get("BOOK_DEVICE", "cpu"), "env", str)
    app.add_config_value("book_cache_root", ".jupyter_cache", "", str)
    app.connect("config-inited", configure_execution)
    app.connect("env-before-read-docs", on_env_before_read_docs)
    app.connect("doctree-read", on_doctree_read)
    app.connect("env-merge-info", on_env_merge_info)
    app.connect("build-finished", write_executions)
