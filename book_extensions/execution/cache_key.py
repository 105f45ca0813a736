"""Which execution cache a build uses, whether it can be read, and whether the pages'
kernel runs the toolchain's Python and torch.

One cache per device, torch version, Python version and the other kernel inputs that are
keyed (:mod:`.kernel_inputs` lists what a page's outputs depend on). The versions
named are those of the toolchain (this environment); :func:`check_kernel` refuses a
kernel that imports another torch (a stub on PYTHONPATH, a kernel spec naming another
environment) or runs another Python, so they are also what the pages' kernel ran.

Standard library only (and jupyter_client, to read the kernel spec; jupyter-cache, to
read a cache's database where there is one): the build driver asks all this before it
starts Sphinx, and importing the extensions would add a second to every build.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..paths import shown
from . import kernel_inputs

# The report each language's build leaves beside its doctrees (page_execution.py writes it;
# the build driver and bench read it): here, where importing it loads no Sphinx.
EXECUTIONS_FILE = "book-executions.json"
# Beside the doctrees too (changed_pages.py writes it when a build ends well; the driver reads
# it): every file a page depends on outside the docs folder, with its digest as the pages were
# read from it, which the driver's no-change check compares with the file now.
DEPENDENCIES_FILE = "book-dependencies.json"


@dataclass(frozen=True)
class Interpreter:
    """A Python as pages see it: its version, and which torch ``import torch`` gives it."""

    python: str  # "3.11.7"
    executable: str
    torch: str  # the torch distribution's version, as pip names it: "2.15.0"
    torch_folder: str  # where that torch package lies


@cache
def toolchain() -> Interpreter:
    """This environment's Python and the torch installed in it (not whatever is on PYTHONPATH)."""
    torch = importlib.metadata.distribution("torch")
    folder = Path(torch.locate_file("torch")).resolve()
    return Interpreter(platform.python_version(), sys.executable, torch.version, str(folder))


def torch_version() -> str:
    """The torch the pages' kernel imports (the toolchain's, which a build checks)."""
    return toolchain().torch


class KernelMismatch(Exception):
    """The pages' kernel is not the toolchain's Python or torch; the message is one line."""


# Run by the kernel's Python: it finds torch as a kernel's `import torch` would (same path,
# .pth files and import hooks) without importing it (2 s), unless it is not the
# toolchain's: then it imports it, to name its version.
PROBE = """
import importlib.util, json, os, sys
spec = importlib.util.find_spec("torch")
if spec is None:
    folder = None
elif spec.origin:
    folder = os.path.dirname(os.path.realpath(spec.origin))
else:
    folder = os.path.realpath(list(spec.submodule_search_locations)[0])
version = None
if folder is not None and folder != sys.argv[1]:
    try:
        import torch
        version = str(getattr(torch, "__version__", "(no __version__)"))
    except BaseException as error:
        version = "(failing: %s: %s)" % (type(error).__name__, error)
print(json.dumps({"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable,
                  "torch_folder": folder, "torch": version}))
"""


def kernel_command(environment: dict[str, str] | None = None,
                   name: str = kernel_inputs.KERNEL_NAME) -> tuple[list[str], dict[str, str], str]:
    """The Python (with its options) that a kernel of spec ``name`` runs, its environment
    (``environment``, default this process's, with the spec's), and the spec's file."""
    # Not at the top: the driver imports this module, and most of it needs no kernel spec.
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise KernelMismatch(f"there is no Jupyter kernel spec {name!r}: install the toolchain "
                             "(python3 -m book_extensions toolchain)") from None
    spec_file = str(Path(spec.resource_dir, "kernel.json"))
    # jupyter_client lays the spec's env over the kernel's: it must not undo what is neutralised.
    undone = sorted(set(spec.env) & set(kernel_inputs.NEUTRALISED_VARIABLES))
    if undone:
        raise KernelMismatch(f"the kernel spec {shown(spec_file)} sets {', '.join(undone)} in its \"env\": "
                             "every page's kernel has fixed values for them (execution/kernel_inputs.py); "
                             "remove them from that file, or that spec from JUPYTER_PATH")
    argv = list(spec.argv)
    python = argv[: argv.index("-m")] if "-m" in argv else argv[:1]
    # As jupyter_client's KernelManager.format_kernel_cmd does: "python" is this process's Python.
    if python and python[0] in {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}:
        python[0] = sys.executable
    env = {**(os.environ if environment is None else environment), **spec.env}
    return python, env, spec_file


def check_kernel(environment: dict[str, str] | None = None) -> Interpreter:
    """The Python and torch that the pages' kernels get; refused unless they are the toolchain's.

    A plain ``python -c`` with the kernel spec's Python, its environment and an empty working
    folder (as a page's) finds torch where a kernel would, in 0.1 s; starting a kernel and
    importing torch would add 3 s to every build of each language.
    """
    expected = toolchain()
    python, env, spec_file = kernel_command(environment)
    with tempfile.TemporaryDirectory(prefix="book-probe-") as work:
        try:
            run = subprocess.run([*python, "-c", PROBE, expected.torch_folder], cwd=work, env=env,
                                 capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise KernelMismatch(f"the pages' kernel (kernel spec {shown(spec_file)}) cannot start "
                                 f"{python[0]}: {error}") from None
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise KernelMismatch(f"the pages' kernel (kernel spec {shown(spec_file)}) fails in "
                             f"{python[0]}: {last}")
    found = json.loads(run.stdout.strip().splitlines()[-1])
    if found["python"] != expected.python:
        raise KernelMismatch(
            f"the pages' kernel runs Python {found['python']} ({found['executable']}), not the "
            f"toolchain's Python {expected.python} ({shown(expected.executable)}): the kernel spec "
            f"{shown(spec_file)} names another Python; remove it, or build with the Python it names")
    if found["torch_folder"] is None:
        raise KernelMismatch(f"the pages' kernel ({shown(found['executable'])}) cannot import torch: "
                             "install the toolchain (python3 -m book_extensions toolchain)")
    if found["torch"] is not None:  # the probe imported it: another folder than the toolchain's
        folder = found["torch_folder"]
        on_path = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep)
                   if entry and Path(folder).is_relative_to(Path(entry).resolve())]
        fix = (f"remove {on_path[0]} from PYTHONPATH" if on_path else
               f"remove it from the path of {shown(found['executable'])}")
        raise KernelMismatch(
            f"the pages' kernel imports torch {found['torch']} from {shown(folder)}, not the "
            f"toolchain's torch {expected.torch} ({shown(expected.torch_folder)}): {fix} and build again")
    return Interpreter(found["python"], found["executable"], expected.torch, expected.torch_folder)


def kernel_inputs_digest() -> str:
    """Everything else a page's outputs depend on that is keyed (:mod:`.kernel_inputs`, the list)."""
    return kernel_inputs.inputs_digest()[:8]


def cache_dir(cache_root: Path, device: str, interpreter: Interpreter | None = None) -> Path:
    """One execution cache per device, torch and Python version, and everything else outputs
    depend on that is keyed (:mod:`.kernel_inputs`). ``interpreter``: the pages' kernel as the
    build found it (default: the toolchain, which a build's kernel must match)."""
    interpreter = interpreter or toolchain()
    return (Path(cache_root)
            / f"{device}-torch{interpreter.torch}-py{interpreter.python}-inputs{kernel_inputs_digest()}")


# sqlite's word for what a damaged database lacks, and how the message says it.
MISSING = ((re.compile(r"no such table: (\w+)"), r"no table \1"),
           (re.compile(r"no such column: (\w+)\.(\w+)"), r"table \1 has no column \2"))


CACHE_LOCK = "book-cache.lock"  # in the cache's folder: runner.cache_lock


def unwritable_cache(folder: Path) -> str | None:
    """Why the build cannot write the cache in ``folder`` (a read-only disk or folder: the
    cache's lock lives there), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / CACHE_LOCK, "a", encoding="utf8"):
            pass
    except OSError as error:
        return f"cannot write the execution cache {folder}: {error.strerror or error}"
    return None


def unreadable_cache(folder: Path) -> str | None:
    """Why the cache in ``folder`` cannot be used (a corrupt, foreign or damaged database), or None.

    jupyter-cache creates its tables only with the database, so one that lacks a table or a
    column fails at a build's first query of it: each table is queried here, through
    jupyter-cache, before Sphinx starts."""
    if not (folder / "global.db").exists():
        return None
    from jupyter_cache import get_cache  # sqlalchemy: only where there is a database to read

    cache = get_cache(folder)
    try:
        cache.get_cache_limit()  # settings
        cache.list_project_records()  # nbproject
        cache.list_cache_records()  # nbcache
    except Exception as error:  # noqa: BLE001 - sqlalchemy's, or jupyter-cache's wrapping of one
        cause = error
        while cause.__cause__ is not None and not isinstance(cause, sqlite3.Error):
            cause = cause.__cause__
        cause = getattr(cause, "orig", cause)
        text = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        for pattern, said in MISSING:
            text = pattern.sub(said, text)
        return (f"the execution cache {folder} cannot be read ({text}): delete that folder "
                "(`make clean-cache` deletes the default one) and build again")
    finally:
        cache.db.dispose()
    return None
