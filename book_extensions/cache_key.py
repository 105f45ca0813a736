"""Which execution cache a build uses: one per device, torch version and kernel inputs.

Standard library only: the build driver asks for the cache folder before it starts
Sphinx, and importing the extensions would add a second to every build.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sqlite3
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).parent
KERNEL_STARTUP = HERE / "kernel" / "startup.py"


def torch_version() -> str:
    return importlib.metadata.version("torch")


# What a page's outputs depend on besides its code: the kernel's startup file, the book's
# code that pages import, how pages are executed, and the packages that compute or print
# what a cell shows.
KERNEL_FILES = (*sorted((HERE / "kernel").glob("*.py")), HERE / "executor.py")
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


def unreadable_cache(folder: Path) -> str | None:
    """Why the cache in ``folder`` cannot be used (a corrupt or foreign database), or None."""
    database = folder / "global.db"
    if not database.exists():
        return None
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            connection.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as error:
        return f"the execution cache {folder} cannot be read ({error}): remove it with `make clean-cache` and build again"
    return None
