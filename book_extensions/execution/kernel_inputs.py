"""What a page's outputs depend on, in one place: each input is either neutralised (the
kernel starts without it, whatever the build's machine or shell has) or keyed (it is part of
the execution cache's name, :func:`.cache_key.cache_dir`, so that a change executes every page
again). The cache's name is what the build driver's fast path and the records read too
(``commands/build.py`` digests it; ``records`` and ``determinism`` open the cache by it).

:data:`INPUTS` is the list, with the test that holds each entry. Standard library only (and
jupyter_client, to read the kernel spec): the build driver reads this before it starts Sphinx.

Which repository files a kernel can import: only a copy of :data:`KERNEL_PACKAGE` (the
package's ``kernel/``: the startup file, the figures pages draw, the audits of writes and reads), staged
in a folder of the build's own under an empty ``book_extensions/__init__.py``, is on the
kernel's ``PYTHONPATH``; the repository itself is not, so ``import examples``, ``import conf``
or another stage of the package fails in a cell. Those files are keyed, and nothing else of the repository has to be:
a change to the rest of ``book_extensions/`` (checks, site, records) executes nothing again.
What a cell reads by a path of its own, outside those folders, is followed apart from the
key: the kernel notes it (:mod:`..kernel.reads`), and the page is executed again when it changes
(:mod:`.runner` keeps the digests with the cached outputs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from ..paths import PACKAGE

# The repository's files that a kernel imports (from a staged copy: see the module's docstring),
# under an empty book_extensions/__init__.py: the package's own holds only the Sphinx setup.
KERNEL_PACKAGE = tuple(sorted((PACKAGE / "kernel").glob("*.py")))
# How pages are executed: the executor's code, and this module (the kernel's environment).
EXECUTOR = (PACKAGE / "execution" / "runner.py", PACKAGE / "execution" / "kernel_inputs.py")
# Every repository file in the key.
KEYED_FILES = (*KERNEL_PACKAGE, *EXECUTOR)

# The kernel's environment, whatever the build's: fixed values, so that no shell, machine or
# user setting reaches a page's outputs (a cell printing torch.get_num_threads() or the time
# zone prints the same everywhere).
FIXED_ENVIRONMENT = {
    "TZ": "UTC",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OMP_NUM_THREADS": "1",  # torch's and numpy's threads: reductions in one order, on every machine
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",  # the order of a set of strings
    "PYTHONIOENCODING": "utf-8",
    "PYTHONNOUSERSITE": "1",  # the user's ~/.local packages
    "JUPYTER_NO_CONFIG": "1",  # jupyter's config folders, the system's too (ipykernel's config)
    # torch.compile compiles in this process: older releases (2.7.1) start a pool of compile
    # workers that outlives the cell, which the page would then be blamed for.
    "TORCHINDUCTOR_COMPILE_THREADS": "1",
}
# Set per page to folders of an empty home made for that page (:func:`kernel_environment`):
# no user configuration of IPython, matplotlib (matplotlibrc, styles), torch or numpy is read.
HOME_FOLDERS = {"HOME": "", "XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache",
                "XDG_DATA_HOME": ".local/share", "MPLCONFIGDIR": ".config/matplotlib",
                "IPYTHONDIR": ".ipython"}
# Passed on from the build's environment because a kernel may need them to run at all (a GPU
# machine's libraries and devices), and keyed: their values are part of the cache's name.
PASSED_AND_KEYED = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH")
# The kernel spec every page names (its front matter's kernelspec.name): a page naming another is
# refused (execution/runner.py), and this one's kernel.json is keyed (:func:`kernel_spec_digest`).
KERNEL_NAME = "python3"
# What a kernel spec's "env" may not set: jupyter_client lays it over the environment a build
# gives a kernel, so it would undo what is neutralised (cache_key.kernel_command refuses it).
NEUTRALISED_VARIABLES = (*FIXED_ENVIRONMENT, *HOME_FOLDERS, "PYTHONSTARTUP")
# Configuration files a kernel still reads that no variable turns off: IPython's system folders.
SYSTEM_CONFIG_FOLDERS = (Path(sys.prefix, "etc", "ipython"), Path("/usr/local/etc/ipython"), Path("/etc/ipython"))


@dataclass(frozen=True)
class Input:
    what: str
    treatment: str  # "keyed" or "neutralised"
    how: str
    test: str  # the test that holds it (tests/<file>::<test>)


INPUTS = (
    Input("the kernel's Python", "keyed", "its version names the cache (check_kernel asks the kernel's own Python)",
          "test_kernel_provenance.py::test_the_cache_key_names_the_python_and_torch_the_kernel_runs"),
    Input("the kernel's torch", "keyed", "its version names the cache; another torch is refused",
          "test_kernel_provenance.py::test_a_stub_torch_on_pythonpath_is_refused_in_one_line_and_nothing_is_cached"),
    Input("the other installed packages", "keyed", "every distribution's name and version is in the digest",
          "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("the device", "keyed", "names the cache", "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("the page's code", "keyed", "jupyter-cache hashes each code cell's code (comments and docstrings left "
          "out; a program a cell loads is its code)",
          "test_code_comments.py::test_a_page_and_its_twin_loading_page_share_one_execution"),
    Input("the repository code kernels import", "keyed", "only a staged copy of KERNEL_PACKAGE is importable "
          "(startup file, figures, writes and reads audits); its files are in the digest",
          "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("the rest of the repository", "neutralised", "not on the kernel's PYTHONPATH: importing it fails "
          "(a file a cell opens by its path is followed: the next entry)",
          "test_kernel_inputs.py::test_the_builds_environment_does_not_reach_a_page"),
    Input("files a cell reads by their path", "keyed", "the kernel notes each file it opens and folder it "
          "lists outside its Python, its PYTHONPATH, the page's folders and the system's (kernel/reads.py); "
          "their digests are kept with the page's cached outputs, a change executes the page again",
          "test_kernel_inputs.py::test_what_a_page_reads_outside_the_keyed_folders_executes_it_again_when_it_changes"),
    Input("the executor", "keyed", "execution/runner.py and this module are in the digest",
          "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("environment variables", "neutralised", "kernels get FIXED_ENVIRONMENT and the page's home, nothing "
          "else of the build's environment", "test_kernel_inputs.py::test_the_builds_environment_does_not_reach_a_page"),
    Input("variables a kernel needs to run", "keyed", "PASSED_AND_KEYED are passed on, and their values are in the digest",
          "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("the build's PYTHONPATH", "keyed", "entries outside the repository are passed on after the staged "
          "package (a GPU machine's wheels); their paths, the content of their modules (.py, a sourceless .pyc, "
          "a compiled extension but among installed packages) and .pth files and the names of their .dist-info "
          "folders are in the digest",
          "test_kernel_inputs.py::test_editing_a_module_on_the_builds_pythonpath_changes_the_cache_name"),
    Input("user configuration files", "neutralised", "HOME, XDG folders, MPLCONFIGDIR, IPYTHONDIR: an empty home "
          "per page; JUPYTER_NO_CONFIG; no user site",
          "test_kernel_provenance.py::test_the_users_ipython_startup_files_do_not_reach_the_kernel"),
    Input("the kernel spec", "keyed", "pages naming another kernel spec than KERNEL_NAME are refused; its "
          "kernel.json (argv, env, language, ...) is in the digest; an env setting NEUTRALISED_VARIABLES is refused",
          "test_kernel_inputs.py::test_the_kernel_spec_is_keyed_and_may_not_undo_the_fixed_environment"),
    Input("system configuration files", "keyed", "IPython's system folders (SYSTEM_CONFIG_FOLDERS) are digested",
          "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("the number of CPUs", "keyed", "os.cpu_count() (torch's inter-op threads follow it) is in the digest",
          "test_kernel_inputs.py::test_each_keyed_input_changes_the_cache_name"),
    Input("the open-file limit", "neutralised", "the startup file sets the soft limit to 1024 (or the hard "
          "limit, if lower)", "test_kernel_inputs.py::test_the_builds_environment_does_not_reach_a_page"),
    Input("the umask", "neutralised", "the startup file sets 0o022: files a page writes get the same permissions",
          "test_kernel_inputs.py::test_the_builds_environment_does_not_reach_a_page"),
    Input("the working folder", "neutralised", "each page runs in an empty scratch folder",
          "test_executor.py::test_each_page_runs_in_an_empty_scratch_folder_of_its_own"),
)


BUILD_FOLDERS = ("_build", "wheelhouse", ".toolchain")


def repository_paths(environ) -> list[str]:
    """The build's PYTHONPATH entries a kernel gets: none that lets it import the repository,
    nor a folder that holds it (the repository would be a namespace package there; and "/"
    had the key walk the whole file system, attack 12, case 32)."""
    root = PACKAGE.parent.resolve()
    kept = []
    for entry in environ.get("PYTHONPATH", "").split(os.pathsep):
        if not entry:
            continue
        path = Path(entry).resolve()
        if root.is_relative_to(path):
            continue
        # Inside the repository, only the folders the build writes (the GPU job's wheels
        # folder under _build/) hold nothing of the repository's own.
        if path.is_relative_to(root) and path.relative_to(root).parts[0] not in BUILD_FOLDERS:
            continue
        kept.append(entry)
    return kept


def staged_kernel_package(folder: Path) -> Path:
    """A copy of :data:`KERNEL_PACKAGE` in ``folder``, the one repository code on a kernel's path."""
    (folder / "book_extensions").mkdir(parents=True, exist_ok=True)
    (folder / "book_extensions" / "__init__.py").write_bytes(b"")
    for source in KERNEL_PACKAGE:
        target = folder / "book_extensions" / source.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return folder


def kernel_environment(device: str, home: Path, package: Path, environ=None) -> dict[str, str]:
    """The whole environment of a page's kernel: nothing of ``environ`` (default this process's)
    but what :data:`PASSED_AND_KEYED` names and the PYTHONPATH entries
    :func:`repository_paths` keeps. ``home``: an empty folder of the page's own; ``package``:
    the folder holding the staged kernel package."""
    environ = os.environ if environ is None else environ
    python_bin = str(Path(sys.executable).parent)
    env = {**FIXED_ENVIRONMENT,
           "PATH": os.pathsep.join([python_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
           "PYTHONPATH": os.pathsep.join([str(package), *repository_paths(environ)]),
           "PYTHONSTARTUP": str(package / "book_extensions" / "kernel" / "startup.py"),
           "BOOK_DEVICE": device}
    env.update({name: environ[name] for name in PASSED_AND_KEYED if name in environ})
    for name, sub in HOME_FOLDERS.items():
        folder = home / sub
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    return env


def files_digest(digest, paths, base: Path) -> None:
    """Each file's path relative to ``base`` (the same key in every clone) and its content."""
    for path in paths:
        digest.update(f"{Path(path).relative_to(base)}\0".encode())
        digest.update(hashlib.sha256(Path(path).read_bytes()).digest())


@functools.cache
def installed_packages() -> tuple[str, ...]:
    """Every distribution this Python sees, by its metadata folder's name, which holds its
    name and version (``torch-2.15.0.dist-info``): listing the folders on the path is about
    twenty times quicker than reading each distribution's metadata, which the build driver
    would pay on every build, unchanged ones too."""
    found = set()
    for entry in filter(None, sys.path):  # not "": the working directory, which differs between runs
        with suppress(OSError):
            found.update(name for name in os.listdir(entry) if name.endswith((".dist-info", ".egg-info")))
    return tuple(sorted(found))


def path_entry_digest(digest, entry: str) -> None:
    """What a kernel can import from a PYTHONPATH entry, by content: each module's file (.py,
    a sourceless .pyc, and, but in a folder of installed packages, a compiled extension) and
    each .pth file, by path (relative to the entry) and content, and each package's metadata
    folder by name (``numpy-2.1.0.dist-info``: the version of its compiled parts, which are not
    read: gigabytes in the GPU job's). An entry that is a file (a zip) is digested whole. The
    GPU job's entry is the wheels it installed (.ci/gpu-check). Data files a module reads are
    not keyed (attack 9, case 21 keyed the sourceless and compiled modules)."""
    from importlib.machinery import EXTENSION_SUFFIXES

    path = Path(entry)
    if path.is_file():
        digest.update(hashlib.sha256(path.read_bytes()).digest())
        return
    installed = path.is_dir() and any(name.endswith(".dist-info") for name in os.listdir(path))
    importable = (".py", ".pyc", ".pth", *(() if installed else EXTENSION_SUFFIXES))
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        here = Path(folder)
        for name in subfolders:
            if name.endswith((".dist-info", ".egg-info")):
                digest.update(f"{(here / name).relative_to(path)}\0".encode())
        files_digest(digest, sorted(here / f for f in files if f.endswith(importable)), path)


def kernel_spec_digest(digest) -> None:
    """The kernel spec pages run (:data:`KERNEL_NAME`) as jupyter_client resolves it, through
    JUPYTER_PATH too: its kernel.json's fields, the spec's "env" among them. Where it lies is
    not keyed (it differs between clones), nor the toolchain's Python named in its argv (the
    kernel's Python is keyed by version, and check_kernel refuses another)."""
    # Not at the top: this module is standard library only but for this, which the build
    # driver's check_kernel imports anyway.
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:  # check_kernel refuses the build
        digest.update(b"no kernel spec\0")
        return
    fields = spec.to_dict()
    fields["argv"] = ["python" if arg == sys.executable else arg for arg in fields["argv"]]
    digest.update(json.dumps(fields, sort_keys=True).encode())


def inputs_digest(environ=None) -> str:
    """The digest of every keyed input but the Python, torch and device (which name the cache themselves)."""
    environ = os.environ if environ is None else environ
    digest = hashlib.sha256()
    files_digest(digest, KEYED_FILES, PACKAGE)
    digest.update("\n".join(installed_packages()).encode())
    for name in PASSED_AND_KEYED:
        digest.update(f"{name}={environ.get(name)}\0".encode())
    digest.update(f"PYTHONPATH={os.pathsep.join(repository_paths(environ))}\0".encode())
    for entry in repository_paths(environ):
        path_entry_digest(digest, entry)
    kernel_spec_digest(digest)
    # torch's inter-op threads (and any cell's os.cpu_count()) follow the machine's CPUs,
    # which no variable fixes: the count is keyed.
    digest.update(f"cpus={os.cpu_count()}\0".encode())
    for folder in SYSTEM_CONFIG_FOLDERS:
        if folder.is_dir():
            digest.update(f"{folder}\0".encode())
            files_digest(digest, sorted(p for p in folder.rglob("*") if p.is_file()), folder)
    return digest.hexdigest()
