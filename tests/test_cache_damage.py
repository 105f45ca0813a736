"""A damaged execution cache is one line or is repaired, never a crash: a record whose notebook
was deleted, truncated or has other outputs than were stored is executed again, a database without its tables is refused naming
the cache, and a write that fails (a full disk) leaves no record behind."""

import errno
import json
import re
import sqlite3
from contextlib import closing

import pytest
from books import FIXTURES, build_book

pytestmark = pytest.mark.fixture

FIXTURE = FIXTURES / "cache_damage" / "docs"

# Put on PYTHONPATH of a build: every notebook jupyter-cache writes stops half-way, as on a full disk.
FULL_DISK = """
import errno, os, pathlib

_write_text = pathlib.Path.write_text


def write_text(self, data, *args, **kwargs):
    if self.name == "base.ipynb":
        _write_text(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _write_text(self, data, *args, **kwargs)


pathlib.Path.write_text = write_text
"""


def cache_folder(root):
    from book_extensions.execution.cache_key import cache_dir

    return cache_dir(root, "cpu")


def records(folder) -> int:
    with sqlite3.connect(folder / "global.db") as db:
        return db.execute("select count(*) from nbcache").fetchone()[0]


def executed(build) -> list[str]:
    return json.loads((build.out / "cpu" / "doctrees" / "en" / "book-executions.json").read_text())["executed"]


def build(tmp_path, name: str):
    return build_book(FIXTURE, tmp_path / name, "html", "--language", "en", cache=tmp_path / "cache")


def page(build) -> str:
    return (build.site() / "en" / "index.html").read_text(encoding="utf8")


@pytest.mark.parametrize("damage", ["deleted", "truncated", "rewritten"])
def test_a_cached_notebook_deleted_or_truncated_is_executed_again(tmp_path, damage):
    first = build(tmp_path, "first")
    assert first.returncode == 0, first.output
    (notebook,) = cache_folder(tmp_path / "cache").glob("executed/*/base.ipynb")
    if damage == "deleted":
        notebook.unlink()
    elif damage == "truncated":  # as a build killed while writing it leaves it
        notebook.write_bytes(notebook.read_bytes()[:100])
    else:  # valid, other outputs: as a cell of another page could write it (attack 2, case 17)
        assert "from the kernel 42" in notebook.read_text()
        notebook.write_text(notebook.read_text().replace("from the kernel 42", "HACKED OUT"))
    again = build(tmp_path, "again")
    assert again.returncode == 0, again.output
    assert executed(again) == ["index"]
    assert "from the kernel 42" in page(again)
    assert records(cache_folder(tmp_path / "cache")) == 1
    assert json.loads(notebook.read_text())["cells"]  # stored whole again
    third = build(tmp_path, "third")
    assert third.returncode == 0 and executed(third) == []


def test_a_dropped_table_is_one_line_naming_the_cache(tmp_path):
    from jupyter_cache import get_cache

    folder = cache_folder(tmp_path / "cache")
    get_cache(str(folder)).list_cache_records()  # the database, as a build creates it
    with sqlite3.connect(folder / "global.db") as db:
        db.execute("drop table nbcache")
    broken = build(tmp_path, "broken")
    assert broken.returncode == 2, broken.output
    assert broken.output.strip() == (f"error: the execution cache {folder} cannot be read (no table nbcache): "
                                     "delete that folder (`make clean-cache` deletes the default one) and build again")


@pytest.mark.unit
def test_every_table_and_column_jupyter_cache_reads_is_checked(tmp_path):
    # Each one missing, in a database jupyter-cache made: named in the message, as sqlite names it.
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import OrmBase

    from book_extensions.execution.cache_key import unreadable_cache

    checked = []
    for table in OrmBase.metadata.tables.values():
        for column in [None, *table.columns]:
            folder = tmp_path / f"{table.name}-{column.name if column is not None else ''}"
            get_cache(str(folder)).list_cache_records()
            with closing(sqlite3.connect(folder / "global.db")) as db:
                try:
                    db.execute(f"alter table {table.name} drop column {column.name}" if column is not None
                               else f"drop table {table.name}")
                except sqlite3.OperationalError:  # a key, or a unique column: sqlite keeps it
                    continue
            missing = f"table {table.name} has no column {column.name}" if column is not None else f"no table {table.name}"
            assert unreadable_cache(folder) == (f"the execution cache {folder} cannot be read ({missing}): delete that "
                                                "folder (`make clean-cache` deletes the default one) and build again")
            checked.append(missing)
    assert len(checked) >= len(OrmBase.metadata.tables) * 2, checked


def test_a_full_disk_while_storing_is_one_line_and_leaves_no_record(tmp_path, monkeypatch):
    site = tmp_path / "full-disk"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FULL_DISK)
    monkeypatch.setenv("PYTHONPATH", str(site))
    full = build(tmp_path, "full")
    assert full.returncode != 0, full.output
    folder = cache_folder(tmp_path / "cache")
    # Sphinx colours its warnings where it thinks a terminal (or CI=true) wants colour.
    (line,) = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in full.output.splitlines() if "WARNING" in line]
    assert line.startswith(f"{FIXTURE / 'en' / 'index.md'}: WARNING: the page ran, but its outputs could not be "
                           f"stored in the execution cache {folder} (OSError: [Errno {errno.ENOSPC}] "
                           "No space left on device): free disk space"), full.output
    assert "Traceback" not in full.output
    assert records(folder) == 0 and not list(folder.glob("executed/*"))

    monkeypatch.delenv("PYTHONPATH")
    freed = build(tmp_path, "freed")
    assert freed.returncode == 0, freed.output
    assert executed(freed) == ["index"] and "from the kernel 42" in page(freed)


@pytest.mark.unit
def test_a_cache_folder_that_cannot_be_written_is_one_line(tmp_path):
    # A read-only key folder crashed Sphinx at the cache's lock (attack case 2); the driver
    # now asks first. (Root writes through permissions: a file in the way stands for it.)
    from book_extensions.execution.cache_key import unwritable_cache

    (tmp_path / "cache").write_text("a file where the cache's folder goes")
    folder = tmp_path / "cache" / "cpu-key"
    assert unwritable_cache(folder) == f"cannot write the execution cache {folder}: Not a directory"
    assert unwritable_cache(tmp_path / "writable" / "cpu-key") is None
