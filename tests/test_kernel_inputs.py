"""What a page's outputs depend on (book_extensions/execution/kernel_inputs.py): each input is
neutralised (the kernel starts without it) or keyed (it names the execution cache); one test
per entry of its list, here or where the list names it."""

import os
import re
import sys
from html import unescape
from pathlib import Path

import pytest
from books import FIXTURES, ROOT, build_book

from book_extensions.execution import cache_key, kernel_inputs

FIXTURE = FIXTURES / "kernel_inputs" / "docs"


def outputs(build) -> list[str]:
    html = (build.site() / "en" / "index.html").read_text(encoding="utf8")
    found = re.findall(r'<div class="cell_output docutils container">(.*?)</div>\s*</div>', html, re.S)
    return [unescape(re.sub(r"<[^>]+>", "", output)) for output in found]


@pytest.mark.unit
def test_the_kernel_environment_is_fixed_whatever_the_builds(tmp_path):
    package = kernel_inputs.staged_kernel_package(tmp_path / "package")
    quiet = kernel_inputs.kernel_environment("cpu", tmp_path / "home", package, environ={})
    noisy = kernel_inputs.kernel_environment("cpu", tmp_path / "home", package, environ={
        "TZ": "Asia/Shanghai", "OMP_NUM_THREADS": "2", "LANG": "zh_CN.UTF-8", "HOME": "/root",
        "MPLCONFIGDIR": "/root/.config/matplotlib", "IPYTHONDIR": "/root/.ipython", "PYTHONSTARTUP": "/root/s.py",
        "MATPLOTLIBRC": "/root/rc", "TORCH_LOGS": "+dynamo", "PYTHONPATH": f"{ROOT}{__import__('os').pathsep}{ROOT / 'tests'}",
        "PYTHONHASHSEED": "7"})
    assert noisy == quiet
    assert quiet["TZ"] == "UTC" and quiet["OMP_NUM_THREADS"] == "1" and quiet["PYTHONPATH"] == str(package)
    assert Path(quiet["HOME"]) == tmp_path / "home" and Path(quiet["MPLCONFIGDIR"]).is_relative_to(tmp_path / "home")
    # The staged package: the kernel's code and an empty package above it, nothing else.
    staged = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    assert staged == ["book_extensions/__init__.py", *(f"book_extensions/kernel/{p.name}" for p in kernel_inputs.KERNEL_PACKAGE)]
    assert (package / "book_extensions" / "__init__.py").read_bytes() == b""
    # What a kernel needs to run, passed on (and keyed: below).
    gpu = kernel_inputs.kernel_environment("cuda", tmp_path / "home", package, environ={
        "CUDA_VISIBLE_DEVICES": "0", "PYTHONPATH": str(ROOT / "_build" / "gpu-check" / "site")})
    assert gpu["CUDA_VISIBLE_DEVICES"] == "0" and gpu["BOOK_DEVICE"] == "cuda"
    assert gpu["PYTHONPATH"].split(__import__("os").pathsep) == [str(package), str(ROOT / "_build" / "gpu-check" / "site")]


@pytest.mark.unit
def test_each_keyed_input_changes_the_cache_name(tmp_path, monkeypatch):
    def name(environ=None, device="cpu"):
        monkeypatch.setattr(kernel_inputs.os, "environ", environ or {})
        return cache_key.cache_dir(tmp_path, device).name

    before = name()
    assert name() == before
    changed = {}
    changed["device"] = name(device="cuda")
    changed["a variable a kernel needs"] = name({"CUDA_VISIBLE_DEVICES": "1"})
    changed["the build's PYTHONPATH outside the repository"] = name({"PYTHONPATH": str(tmp_path / "wheels")})
    # The repository on PYTHONPATH is not passed on, so it changes nothing.
    assert name({"PYTHONPATH": str(ROOT)}) == before
    # Neutralised variables change nothing either.
    assert name({"TZ": "Asia/Shanghai", "OMP_NUM_THREADS": "2", "HOME": "/elsewhere"}) == before
    # A keyed repository file edited (a copy of the kernel package, one module changed).
    copies = []
    for path in kernel_inputs.KEYED_FILES:
        copy = tmp_path / "package" / path.relative_to(kernel_inputs.PACKAGE)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
        copies.append(copy)
    monkeypatch.setattr(kernel_inputs, "PACKAGE", tmp_path / "package")
    monkeypatch.setattr(kernel_inputs, "KEYED_FILES", tuple(copies))
    assert name() == before  # the same files: the same key, wherever the repository is
    figures = tmp_path / "package" / "kernel" / "figures.py"
    figures.write_text(figures.read_text() + "\n# an edit\n")
    changed["a kernel module"] = name()
    figures.write_text(figures.read_text().replace("\n# an edit\n", ""))
    runner = tmp_path / "package" / "execution" / "runner.py"
    runner.write_text(runner.read_text() + "\n# an edit\n")
    changed["the executor"] = name()
    runner.write_text(runner.read_text().replace("\n# an edit\n", ""))
    assert name() == before
    packages = kernel_inputs.installed_packages()
    monkeypatch.setattr(kernel_inputs, "installed_packages",
                        lambda: tuple(p if not p.startswith("matplotlib-") else "matplotlib-0.0.dist-info" for p in packages))
    changed["another package"] = name()
    monkeypatch.undo()
    config = tmp_path / "etc" / "ipython"
    config.mkdir(parents=True)
    monkeypatch.setattr(kernel_inputs, "SYSTEM_CONFIG_FOLDERS", (config,))
    before_config = name()
    (config / "ipython_config.py").write_text("c.PlainTextFormatter.float_precision = '%.2f'\n")
    changed["system configuration"] = name()
    assert before_config != changed["system configuration"]
    unchanged = [what for what, after in changed.items() if after == before]
    assert unchanged == []


@pytest.mark.unit
def test_every_input_names_a_test_that_exists():
    for entry in kernel_inputs.INPUTS:
        assert entry.treatment in ("keyed", "neutralised"), entry
        # A file alone proves nothing: each entry names the one test that checks it.
        file, _, test = entry.test.partition("::")
        source = (ROOT / "tests" / file).read_text(encoding="utf8")
        assert test and f"def {test}(" in source, entry


@pytest.mark.fixture
def test_the_builds_environment_does_not_reach_a_page(tmp_path, monkeypatch):
    """A cell printing the time zone and torch's threads prints the same under any shell, with
    no user configuration read, and cannot import the repository beyond the kernel package."""
    plain = build_book(FIXTURE, tmp_path / "plain", "html", "--language", "en", cache=tmp_path / "cache-1")
    assert plain.returncode == 0, plain.output
    home = tmp_path / "home"
    (home / ".config" / "matplotlib").mkdir(parents=True)
    (home / ".config" / "matplotlib" / "matplotlibrc").write_text("lines.linewidth: 7\n")
    for name, value in {"TZ": "Asia/Shanghai", "OMP_NUM_THREADS": "2", "PYTHONHASHSEED": "7", "HOME": str(home),
                        "MPLCONFIGDIR": str(home / ".config" / "matplotlib"), "LC_ALL": "C",
                        "BOOK_TEST_LEAK": "1"}.items():
        monkeypatch.setenv(name, value)
    umask = os.umask(0o077)  # the build's processes inherit it
    try:
        elsewhere = build_book(FIXTURE, tmp_path / "elsewhere", "html", "--language", "en", cache=tmp_path / "cache-2")
    finally:
        os.umask(umask)
    assert elsewhere.returncode == 0, elsewhere.output
    shown = outputs(elsewhere)
    assert shown == outputs(plain)
    text = " ".join(shown)
    assert "zone UTC UTC threads 1 1" in text and "hash seed 0 locale C.UTF-8" in text
    assert "home is empty: True" in text and "from the build: []" in text and "umask 0o22" in text
    assert "matplotlib rc: 1.5" in text and "the kernel package: book_extensions.kernel.figures" in text
    # Neutralised, so not keyed: the two builds' caches have one name.
    assert [p.name for p in (tmp_path / "cache-1").glob("cpu-*")] == [p.name for p in (tmp_path / "cache-2").glob("cpu-*")]


@pytest.mark.unit
def test_a_package_installed_anywhere_on_the_path_is_seen(tmp_path, monkeypatch):
    (tmp_path / "newly_installed-1.2.dist-info").mkdir()
    kernel_inputs.installed_packages.cache_clear()
    before = kernel_inputs.installed_packages()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    kernel_inputs.installed_packages.cache_clear()
    try:
        after = kernel_inputs.installed_packages()
    finally:
        kernel_inputs.installed_packages.cache_clear()
    assert set(after) - set(before) == {"newly_installed-1.2.dist-info"}
    assert any(name.startswith("torch-") for name in before)
