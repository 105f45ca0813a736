"""The wheels a records-only run on the GPU machine needs and that machine lacks.

    python -m book_extensions wheelhouse download                # wheelhouse/py312/ (the GPU machine's Python)
    python -m book_extensions wheelhouse download --python 3.11  # wheelhouse/py311/: the rehearsal here
    python -m book_extensions wheelhouse install --target DIR    # there: this Python's wheels into DIR
    python -m book_extensions wheelhouse folder                  # the folder this Python installs from

The GPU machine (``.ci/gpu-machine.txt``: its Python and the packages it has) has no network
and no Sphinx; ``.ci/gpu-check`` runs there with its own CUDA torch and these wheels on
``PYTHONPATH``. That run executes the pages and runs the doctests with Sphinx's doctest
builder, and records the cache: no HTML builder, so no theme. ``download`` starts from what it
imports (:data:`ROOTS`), follows each wheel's ``Requires-Dist`` (markers evaluated for the
target Python on Linux x86-64, extras left out) at the versions ``requirements.txt`` pins, and
stops at a package the machine has: the machine brings what that one needs. A package the
machine has at a version (when the list names one) that a carried package's requirement
excludes is carried too, at its pin, and shadows the machine's. The folder then holds exactly
one wheel per package (others are removed), and a folder over :data:`LIMIT` bytes is refused
in one line: what travels to the machine is 64 MiB with the working tree.

Standard library and pip only until a verb needs ``packaging``: ``install`` runs on the GPU
machine before anything else is there, and reads requirements with the packaging it has just
installed (Sphinx requires it) or the machine's; ``download`` runs in the toolchain.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..paths import ROOT, shown
from .toolchain import REQUIREMENTS, normalised, pip_environment

MACHINE = ROOT / ".ci" / "gpu-machine.txt"
HOME = ROOT / "wheelhouse"
LIMIT = 40_000_000  # bytes (40 MB)
# What a records-only run imports: the build driver and Sphinx with conf.py's extensions
# (myst-nb, the doctest builder, sphinx-copybutton, book_extensions: tinycss2, html5lib (the remote-loads check of
# each page's outputs), PyYAML, filelock, psutil), the execution
# cache and the pages' kernels (ipykernel, and what the kernel code draws figures with).
# The rest follows from their metadata.
ROOTS = ("Sphinx", "myst-nb", "sphinx-copybutton", "jupyter-cache", "nbclient", "jupyter_client", "ipykernel",
         "tinycss2", "html5lib", "PyYAML", "filelock", "psutil", "numpy", "matplotlib", "networkx")
# pip download's platforms: the manylinux tags a Linux x86-64 machine with glibc 2.39 accepts
# (pip matches each tag exactly).
PLATFORMS = ([f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)]
             + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"])
WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


class WheelhouseError(Exception):
    """A one-line reason why the wheelhouse cannot be made."""


def packaging():
    """packaging's requirements and markers (imported when a verb needs them)."""
    from packaging import markers, requirements, version
    return requirements.Requirement, markers, version.Version


def folder(python: str, home: Path = HOME) -> Path:
    """Where the wheels for a Python (``3.12``, ``3.12.3``) lie: ``wheelhouse/py312``."""
    major, minor = python.split(".")[:2]
    return home / f"py{major}{minor}"


def this_python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def read_pins(path: Path | None = None) -> dict[str, str]:
    """``name==version`` lines: normalised name -> version."""
    path = path or REQUIREMENTS
    pins = {}
    for line in path.read_text(encoding="utf8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)", line)
        if not found:
            raise WheelhouseError(f"{path.name}: not a pin: {line!r}")
        pins[normalised(found.group(1))] = found.group(2)
    return pins


@dataclass(frozen=True)
class Machine:
    python: str  # "3.12.3"
    packages: dict  # normalised name -> version, or None where none was seen


def read_machine(path: Path | None = None) -> Machine:
    """The GPU machine's list: ``python==X.Y.Z``, then one package a line (``name`` or ``name==version``)."""
    path = path or MACHINE
    python, packages = None, {}
    for line in path.read_text(encoding="utf8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*(\S+))?", line)
        if not found:
            raise WheelhouseError(f"{path.name}: not a package: {line!r}")
        name, version = normalised(found.group(1)), found.group(2)
        if name == "python":
            python = version
        else:
            packages[name] = version
    if not python:
        raise WheelhouseError(f"{path.name}: no 'python==X.Y.Z' line")
    return Machine(python, packages)


def environment(python: str) -> dict[str, str]:
    """Marker values for CPython ``python`` on Linux x86-64; no extra."""
    full = python if python.count(".") == 2 else f"{python}.0"
    return {"python_version": ".".join(python.split(".")[:2]), "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython", "sys_platform": "linux", "platform_system": "Linux",
            "platform_machine": "x86_64", "os_name": "posix", "platform_release": "", "platform_version": "",
            "extra": ""}


def needed(requires: Iterable[str], python: str) -> list:
    """The requirements (packaging Requirement objects) that apply on the target: markers true, no extra."""
    Requirement, _, _ = packaging()
    env = environment(python)
    kept = []
    for text in requires:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate(env):
            continue
        kept.append(requirement)
    return kept


@dataclass(frozen=True)
class Wheel:
    name: str  # normalised
    version: str
    why: str  # what needs it: "a root" or the package that requires it


def resolve(roots: Iterable[str], pins: dict[str, str], machine: dict, python: str,
            requirements_of: Callable[[list[tuple[str, str]]], dict[str, list[str]]],
            relied: set[str] | None = None) -> tuple[list[Wheel], list[str]]:
    """(the wheels to carry, in the order found; notes on the machine's packages they replace).
    ``relied``, when given, gets the machine's packages the run relies on.

    ``requirements_of`` takes (name, version) pairs and returns each name's ``Requires-Dist``
    (it downloads them: one call a level, so pip runs a few times, not once a package)."""
    _, _, Version = packaging()
    chosen: dict[str, Wheel] = {}
    notes = []
    level = [(normalised(name), "a root", None) for name in roots]
    while level:
        batch = []
        for name, why, requirement in level:
            if name in chosen:
                if requirement is not None and not requirement.specifier.contains(chosen[name].version, prereleases=True):
                    raise WheelhouseError(f"{why} requires {requirement}, but requirements.txt pins "
                                          f"{name}=={chosen[name].version}")
                continue
            if name in machine:
                have = machine[name]
                if have is None or requirement is None or requirement.specifier.contains(Version(have), prereleases=True):
                    if relied is not None:
                        relied.add(name)
                    continue  # the machine has it, and brings what it needs
                notes.append(f"{name}: the GPU machine has {have}, {why} requires {requirement.specifier}: "
                             f"carrying {pins.get(name, '?')}")
            if name not in pins:
                raise WheelhouseError(f"{name} is needed ({why} requires it) but requirements.txt pins no version of it")
            if requirement is not None and not requirement.specifier.contains(pins[name], prereleases=True):
                raise WheelhouseError(f"{why} requires {requirement}, but requirements.txt pins {name}=={pins[name]}")
            chosen[name] = Wheel(name, pins[name], why)
            batch.append((name, pins[name]))
        if not batch:
            break
        found = requirements_of(batch)
        level = [(normalised(requirement.name), name, requirement)
                 for name, _ in batch for requirement in needed(found[name], python)]
    return list(chosen.values()), notes


def wheel_files(dest: Path) -> dict[str, list[Path]]:
    """The wheels in ``dest`` by normalised name."""
    found: dict[str, list[Path]] = {}
    for path in sorted(dest.glob("*.whl")):
        match = WHEEL_NAME.match(path.name)
        if match:
            found.setdefault(normalised(match.group("name")), []).append(path)
    return found


def wheel_version(path: Path) -> str:
    return WHEEL_NAME.match(path.name).group("version")


def requires_dist(path: Path) -> list[str]:
    """A wheel's ``Requires-Dist`` lines, from its METADATA."""
    with zipfile.ZipFile(path) as wheel:
        name = next(n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(wheel.read(name).decode("utf8"), headersonly=True)
    return metadata.get_all("Requires-Dist") or []


def pip_download(dest: Path, python: str, wanted: list[tuple[str, str]]) -> None:
    """One ``pip download`` of these exact versions, as wheels for CPython ``python`` on Linux x86-64."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--python-version", ".".join(python.split(".")[:2]), "--implementation", "cp",
               *[arg for platform in PLATFORMS for arg in ("--platform", platform)],
               "-d", str(dest), *[f"{name}=={version}" for name, version in wanted]]
    result = subprocess.run(command, env=pip_environment(REQUIREMENTS), capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise WheelhouseError(f"pip download failed for Python {python}: {last}")


def make(python: str, dest: Path, pins: dict[str, str], machine: dict, roots: Iterable[str] | None = None,
         download: Callable[[Path, str, list[tuple[str, str]]], None] | None = None,
         limit: int | None = None, log: Callable[[str], None] = print) -> list[Path]:
    """Fill ``dest`` with exactly the wheels the run needs for ``python``; the wheels.
    ``roots``, ``download`` and ``limit`` default to :data:`ROOTS`, :func:`pip_download`, :data:`LIMIT`."""
    roots, download, limit = roots or ROOTS, download or pip_download, limit or LIMIT
    dest.mkdir(parents=True, exist_ok=True)

    def requirements_of(batch: list[tuple[str, str]]) -> dict[str, list[str]]:
        download(dest, python, batch)
        files = wheel_files(dest)
        found = {}
        for name, version in batch:
            matching = [p for p in files.get(name, []) if wheel_version(p) == version]
            if not matching:
                raise WheelhouseError(f"no wheel of {name}=={version} for Python {python} in {dest}")
            found[name] = requires_dist(matching[0])
        return found

    relied: set[str] = set()
    wheels, notes = resolve(roots, pins, machine, python, requirements_of, relied)
    for note in notes:
        log(note)
    log(f"the GPU machine's own: {' '.join(sorted(relied - {wheel.name for wheel in wheels}))}")
    keep = {wheel.name: wheel.version for wheel in wheels}
    kept = []
    for name, paths in wheel_files(dest).items():
        for path in paths:
            if keep.get(name) == wheel_version(path):
                kept.append(path)
            else:
                path.unlink()  # another version, or a package the run no longer needs
    for other in dest.iterdir():
        if other.suffix != ".whl":
            shutil.rmtree(other) if other.is_dir() else other.unlink()
    doubled = sorted({name for name, paths in wheel_files(dest).items() if len(paths) > 1})
    if doubled:
        raise WheelhouseError(f"{shown(dest)} holds two wheels of {', '.join(doubled)}: one of each may travel; "
                              "remove the folder and run again")
    size = sum(path.stat().st_size for path in kept)
    for path in sorted(kept, key=lambda p: p.name.lower()):
        log(f"  {path.stat().st_size / 1e6:6.2f} MB  {path.name}")
    log(f"{shown(dest)}: {len(kept)} wheels, {size / 1e6:.1f} MB (limit {limit / 1e6:g} MB)")
    if size > limit:
        raise WheelhouseError(f"{shown(dest)} holds {size / 1e6:.2f} MB of wheels, over the {limit / 1e6:g} MB "
                              "that may travel to the GPU machine")
    return sorted(kept)


def install(target: Path, source: Path) -> int:
    """Install every wheel of ``source`` into ``target`` (emptied first: a second run starts
    over), then say which of their requirements nothing here meets. pip's exit status."""
    wheels = sorted(source.glob("*.whl"))
    if not wheels:
        print(f"error: no wheels in {source}: run `nox -s wheelhouse -- --python {this_python()}` "
              "on a machine with network, and carry that folder", file=sys.stderr)
        return 2
    shutil.rmtree(target, ignore_errors=True)
    result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                             "--no-compile", "--no-cache-dir", "--disable-pip-version-check",
                             "--target", str(target), *map(str, wheels)])
    if result.returncode != 0:
        return result.returncode
    print(f"installed {len(wheels)} wheels from {source} into {target}")
    for problem in unmet(target):
        print(f"warning: {problem}")
    return 0


def unmet(target: Path) -> list[str]:
    """The requirements of the packages in ``target`` that what this Python finds (``target``
    first) does not meet: a version of the machine's that a carried package does not accept."""
    import importlib.metadata

    paths = [str(target), *sys.path]
    # packaging is among the wheels just installed (Sphinx requires it), or the machine's own.
    sys.path.insert(0, str(target))
    try:
        _, _, Version = packaging()
    except ImportError:
        return ["packaging is not installed, which Sphinx requires: the other requirements were not checked"]
    problems = []
    for distribution in importlib.metadata.distributions(path=[str(target)]):
        for requirement in needed(distribution.requires or [], this_python()):
            found = next(iter(importlib.metadata.distributions(name=requirement.name, path=paths)), None)
            if found is None:
                problems.append(f"{distribution.metadata['Name']} requires {requirement}: not installed")
            elif not requirement.specifier.contains(Version(found.version), prereleases=True):
                problems.append(f"{distribution.metadata['Name']} requires {requirement}: found {found.version}")
    return sorted(set(problems))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions wheelhouse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    down = commands.add_parser("download", help="download the wheels for the GPU machine's Python (or --python)")
    down.add_argument("--python", help="X.Y: the Python to download for (default: the one .ci/gpu-machine.txt names)")
    inst = commands.add_parser("install", help="install this Python's wheels into --target, emptied first")
    inst.add_argument("--target", type=Path, required=True)
    commands.add_parser("folder", help="print the folder this Python's wheels are in")
    for command in (down, inst):
        command.add_argument("--home", type=Path, default=HOME, help="where the per-Python folders are")
    args = parser.parse_args(argv)
    if args.command == "folder":
        print(shown(folder(this_python())))
        return 0
    if args.command == "install":
        return install(args.target.resolve(), folder(this_python(), args.home))
    try:
        machine = read_machine()
        python = args.python or machine.python
        if not re.fullmatch(r"3\.\d+(\.\d+)?", python):
            raise WheelhouseError(f"--python {python}: expected X.Y, for example 3.12")
        make(python, folder(python, args.home), read_pins(), machine.packages)
    except WheelhouseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0
