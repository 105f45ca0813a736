"""A page names the torch and Python its kernel ran, and the cache is keyed by them: another
torch is refused before any page runs, and the user's IPython profile never reaches a kernel."""

import platform
import sqlite3
from pathlib import Path

import pytest
from books import FIXTURES, build_book

pytestmark = pytest.mark.fixture

FIXTURE = FIXTURES / "kernel_provenance" / "docs"


def cached_pages(cache) -> int:
    databases = list(cache.glob("*/global.db"))
    return sum(sqlite3.connect(db).execute("select count(*) from nbcache").fetchone()[0] for db in databases)


def page(build) -> str:
    return (build.site() / "en" / "index.html").read_text(encoding="utf8")


def test_a_stub_torch_on_pythonpath_is_refused_in_one_line_and_nothing_is_cached(tmp_path, monkeypatch):
    stub = tmp_path / "stub"
    (stub / "torch").mkdir(parents=True)
    (stub / "torch" / "__init__.py").write_text(
        '__version__ = "9.9.9"\n\ndef tensor(values):\n    return f"tensor({values}) from the stub"\n')
    monkeypatch.setenv("PYTHONPATH", str(stub))
    build = build_book(FIXTURE, tmp_path, "html", "--language", "en")
    assert build.returncode != 0, build.output
    from book_extensions.execution.cache_key import toolchain
    from book_extensions.paths import shown

    assert build.output.strip() == (
        f"error: the pages' kernel imports torch 9.9.9 from {stub / 'torch'}, not the toolchain's torch "
        f"{toolchain().torch} ({shown(toolchain().torch_folder)}): remove {stub} from PYTHONPATH and "
        "build again")
    assert cached_pages(build.cache) == 0
    assert not build.site().joinpath("en", "index.html").exists()

    monkeypatch.delenv("PYTHONPATH")
    again = build_book(FIXTURE, tmp_path / "again", "html", "--language", "en", cache=build.cache)
    assert again.returncode == 0, again.output
    assert "from the stub" not in page(again) and "9.9.9" not in page(again)
    assert f"{toolchain().torch}" in page(again)


def test_the_users_ipython_startup_files_do_not_reach_the_kernel(tmp_path, monkeypatch):
    home = tmp_path / "home"
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00.py").write_text("import torch\ntorch.set_printoptions(precision=8)\n")
    monkeypatch.setenv("HOME", str(home))
    # Only HOME: IPYTHONDIR is where IPython looks when HOME is all a user set.
    monkeypatch.delenv("IPYTHONDIR", raising=False)
    build = build_book(FIXTURE, tmp_path, "html", "--language", "en")
    assert build.returncode == 0, build.output
    assert "tensor([0.3333])" in page(build)
    assert "0.33333334" not in page(build)


def test_an_explicit_ipythondir_is_replaced_too(monkeypatch, tmp_path):
    import os

    from book_extensions.execution import page_execution

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    before = dict(os.environ)
    environment = page_execution.prepare_kernels("cpu", tmp_path / "package")(tmp_path / "home")
    assert environment["IPYTHONDIR"] != str(tmp_path)
    assert list(Path(environment["IPYTHONDIR"]).iterdir()) == []
    assert dict(os.environ) == before  # the kernels' environment is theirs, this process's is left alone


def test_the_cache_key_names_the_python_and_torch_the_kernel_runs(tmp_path):
    from book_extensions.execution.cache_key import cache_dir, kernel_inputs_digest, torch_version

    assert cache_dir(tmp_path, "cpu").name == (
        f"cpu-torch{torch_version()}-py{platform.python_version()}-inputs{kernel_inputs_digest()}")
    from book_extensions.execution.cache_key import Interpreter

    other = Interpreter("3.12.1", "/usr/bin/python3.12", "2.15.0", "/elsewhere/torch")
    assert "-torch2.15.0-py3.12.1-" in cache_dir(tmp_path, "cpu", other).name


def test_the_kernel_is_asked_not_this_process(monkeypatch):
    """The probe runs the kernel spec's Python: one of another version is refused in one line."""
    import sys

    import pytest

    from book_extensions.execution import cache_key

    assert cache_key.check_kernel() == cache_key.Interpreter(
        platform.python_version(), sys.executable, cache_key.toolchain().torch, cache_key.toolchain().torch_folder)
    monkeypatch.setattr(cache_key, "toolchain", lambda: cache_key.Interpreter(
        "3.10.0", "/usr/bin/python3.10", "2.15.0", "/nowhere/torch"))
    with pytest.raises(cache_key.KernelMismatch) as refused:
        cache_key.check_kernel()
    message = str(refused.value)
    assert message.startswith(f"the pages' kernel runs Python {platform.python_version()} (")
    assert "not the toolchain's Python 3.10.0" in message and "\n" not in message
