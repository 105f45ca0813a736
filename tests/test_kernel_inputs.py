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
        "MATPLOTLIBRC": "/root/rc", "TORCH_LOGS": "+dynamo",
        "PYTHONPATH": __import__("os").pathsep.join(map(str, (ROOT, ROOT / "tests", ROOT.parent, "/"))),
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
    cpus = os.cpu_count()
    monkeypatch.setattr(os, "cpu_count", lambda: cpus + 2)
    changed["the number of CPUs"] = name()
    monkeypatch.undo()
    changed["the build's PYTHONPATH outside the repository"] = name({"PYTHONPATH": str(tmp_path / "wheels")})
    # The repository on PYTHONPATH is not passed on, so it changes nothing.
    assert name({"PYTHONPATH": str(ROOT)}) == before
    # Neutralised variables change nothing either.
    (tmp_path / "elsewhere").mkdir()
    assert name({"TZ": "Asia/Shanghai", "OMP_NUM_THREADS": "2", "HOME": str(tmp_path / "elsewhere")}) == before
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
    """A cell printing the time zone and torch's threads prints the same under any shell (and
    the build runs: PYTHONWARNINGS=error is not Sphinx's), with no user configuration read,
    and cannot import the repository beyond the kernel package."""
    plain = build_book(FIXTURE, tmp_path / "plain", "html", "--language", "en", cache=tmp_path / "cache-1")
    assert plain.returncode == 0, plain.output
    home = tmp_path / "home"
    (home / ".config" / "matplotlib").mkdir(parents=True)
    (home / ".config" / "matplotlib" / "matplotlibrc").write_text("lines.linewidth: 7\n")
    for name, value in {"TZ": "Asia/Shanghai", "OMP_NUM_THREADS": "2", "PYTHONHASHSEED": "7", "HOME": str(home),
                        "MPLCONFIGDIR": str(home / ".config" / "matplotlib"), "LC_ALL": "C",
                        "BOOK_TEST_LEAK": "1",
                        # Attack 11, case 28: Sphinx crashed on a library's SyntaxWarning made an error.
                        "PYTHONWARNINGS": "error"}.items():
        monkeypatch.setenv(name, value)
    import resource

    umask, files = os.umask(0o077), resource.getrlimit(resource.RLIMIT_NOFILE)  # the build's processes inherit them
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, files[1]))
    try:
        elsewhere = build_book(FIXTURE, tmp_path / "elsewhere", "html", "--language", "en", cache=tmp_path / "cache-2")
    finally:
        os.umask(umask)
        resource.setrlimit(resource.RLIMIT_NOFILE, files)
    assert elsewhere.returncode == 0, elsewhere.output
    shown = outputs(elsewhere)
    assert shown == outputs(plain)
    text = " ".join(shown)
    assert "zone UTC UTC threads 1 1" in text and "hash seed 0 locale C.UTF-8" in text
    assert "home is empty: True" in text and "from the build: []" in text and "umask 0o22" in text
    assert "open files 1024" in text
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


@pytest.mark.unit
def test_the_kernel_spec_is_keyed_and_may_not_undo_the_fixed_environment(tmp_path, monkeypatch):
    # Issue 31: a kernel.json found through JUPYTER_PATH with "env": {"TZ": ...} changed
    # outputs without changing the cache's name (jupyter_client lays it over the kernel's).
    import json

    import nbformat

    from book_extensions.execution import runner

    def with_spec(**changes):
        spec = {"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "env": {},
                "display_name": "Python 3 (ipykernel)", "language": "python", "interrupt_mode": "signal",
                "metadata": {"debugger": True, "supported_encryption": ["curve"]}, "kernel_protocol_version": "5.5"}
        folder = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}"
        (folder / "kernels" / "python3").mkdir(parents=True)
        (folder / "kernels" / "python3" / "kernel.json").write_text(json.dumps({**spec, **changes}))
        return {"JUPYTER_PATH": str(folder)}

    def name(environ):
        monkeypatch.setattr(kernel_inputs.os, "environ", environ)  # os.environ: jupyter_client's too
        return cache_key.cache_dir(tmp_path, "cpu").name

    default = name({})
    # The same spec elsewhere: where it lies is not keyed; what it says is.
    assert name(with_spec()) == default
    assert name(with_spec(env={"BOOK_SETTING": "1"})) != default
    assert name(with_spec(argv=["python", "-X", "utf8", "-m", "ipykernel_launcher", "-f", "{connection_file}"])) != default
    # A spec that would undo a neutralised variable is refused, in one line naming its file.
    environ = with_spec(env={"TZ": "Asia/Shanghai", "HOME": "/root"})
    monkeypatch.setattr(kernel_inputs.os, "environ", environ)
    with pytest.raises(cache_key.KernelMismatch) as refused:
        cache_key.check_kernel()
    spec_file = Path(environ["JUPYTER_PATH"], "kernels", "python3", "kernel.json")
    assert str(refused.value) == (
        f"the kernel spec {spec_file} sets HOME, TZ in its \"env\": every page's kernel has fixed values for "
        "them (execution/kernel_inputs.py); remove them from that file, or that spec from JUPYTER_PATH")
    monkeypatch.undo()
    # A page naming another kernel spec is refused before any kernel starts.
    page = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")],
                                    metadata={"kernelspec": {"name": "other", "display_name": "Other"}})
    result = runner.PageRunner().execute(page, timeout=60)
    assert result.error == "PageProblem" and result.cell is None
    assert result.detail == ("the page's front matter names the kernel spec 'other': every page runs the book's "
                             "kernel 'python3', the one the execution cache is keyed by; name that one "
                             "(kernelspec: name: python3)")


@pytest.mark.unit
def test_editing_a_module_on_the_builds_pythonpath_changes_the_cache_name(tmp_path, monkeypatch):
    # Issue 31: entries outside the repository were keyed by their path alone (the GPU job's
    # wheels folder, .ci/gpu-check), so an edited module there kept the old outputs.
    site = tmp_path / "site"
    (site / "helper").mkdir(parents=True)
    (site / "helper" / "__init__.py").write_text("SCALE = 1\n")
    (site / "helper-1.0.dist-info").mkdir()
    monkeypatch.setattr(kernel_inputs.os, "environ", {"PYTHONPATH": str(site)})

    def name():
        return cache_key.cache_dir(tmp_path, "cpu").name

    before = name()
    (site / "helper" / "__pycache__").mkdir()
    (site / "helper" / "__pycache__" / "__init__.cpython-312.pyc").write_bytes(b"compiled")
    (site / "helper" / "README.txt").write_text("not importable\n")
    assert name() == before  # neither compiled copies nor other files
    changed = {}
    (site / "helper" / "__init__.py").write_text("SCALE = 2\n")
    changed["an edited module"] = name()
    (site / "helper" / "__init__.py").write_text("SCALE = 1\n")
    assert name() == before
    (site / "extra.pth").write_text("/elsewhere\n")
    changed["a .pth file"] = name()
    (site / "extra.pth").unlink()
    (site / "helper-1.0.dist-info").rename(site / "helper-1.1.dist-info")
    changed["another version's metadata"] = name()
    (site / "helper-1.1.dist-info").rename(site / "helper-1.0.dist-info")
    assert name() == before
    # Attack 9, case 21: a sourceless module (a .pyc outside __pycache__) was not keyed.
    (site / "sourceless.pyc").write_bytes(b"one")
    with_pyc = name()
    (site / "sourceless.pyc").write_bytes(b"two")
    changed["an edited sourceless module"] = name()
    assert with_pyc != changed["an edited sourceless module"]
    (site / "sourceless.pyc").unlink()
    # A compiled extension is keyed by content where no installed package's metadata vouches
    # for it (a folder of the user's), and by that metadata among installed packages.
    (site / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"one")
    assert name() == before
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"one")
    monkeypatch.setattr(kernel_inputs.os, "environ", {"PYTHONPATH": str(plain)})
    first = name()
    (plain / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"two")
    assert name() != first
    assert [what for what, after in changed.items() if after == before] == []
    assert len(set(changed.values())) == len(changed)


@pytest.mark.unit
def test_a_read_file_dated_in_the_future_is_compared_by_content_and_one_written_while_the_page_ran_is_not(tmp_path):
    """Attack 12, case 26: a file whose modification time is ahead of the clock (a tar from a
    machine whose clock was ahead) counted as changed while the page ran, so the page executed
    again at every build. What counts is the change time the file system stamps on a write."""
    import time

    from book_extensions.execution import runner
    from book_extensions.paths import content_digest

    dated = tmp_path / "dated.txt"
    dated.write_text("one\n")
    os.utime(dated, ns=(time.time_ns() + 10**18, time.time_ns() + 10**18))  # about 30 years ahead
    started = time.time_ns()
    written = tmp_path / "written.txt"
    time.sleep(0.02)  # past the file system's clock tick
    written.write_text("two\n")
    log = tmp_path / runner.READS_LOG
    log.write_bytes(f"{dated}\0{written}\0".encode())
    assert runner.kernel_reads(log, started) == {
        str(dated): content_digest(str(dated)), str(written): runner.CHANGED_WHILE_RUNNING}


@pytest.mark.fixture
def test_what_a_page_reads_outside_the_keyed_folders_executes_it_again_when_it_changes(tmp_path, monkeypatch):
    """Attack 11, cases 5 and 7: a cell that printed a file of the machine, or imported a module
    from a folder it put on sys.path, kept its old output after the file changed ("unchanged",
    exit 0). Its kernel now notes what it reads (kernel/reads.py): the cached record keeps
    each path's digest, a change reads and executes the page again, and nothing else does."""
    import importlib.util
    import py_compile

    from jupyter_cache import get_cache

    from book_extensions.execution import runner

    outside = tmp_path / "outside"
    (outside / "listed").mkdir(parents=True)
    (outside / "data.txt").write_text("one\n")
    # Read through /proc/self/root (attack 12, case 2), spelt so that no page shows "/root",
    # the home folder here.
    (outside / "proc.txt").write_text("one\n")
    (outside / "outside_module.py").write_text("VALUE = 1\n")
    # Imported from its .pyc (helper-109's review): the import opens no source a hook sees.
    (outside / "compiled_module.py").write_text("VALUE = 1\n")
    py_compile.compile(str(outside / "compiled_module.py"), cfile=importlib.util.cache_from_source(
        str(outside / "compiled_module.py")), doraise=True)
    (outside / "listed" / "a").write_text("")
    # A module in a folder on the build's PYTHONPATH, which reads a data file beside it: the key
    # holds the module, not the data (attack 12, case 3).
    (tmp_path / "pp").mkdir()
    (tmp_path / "pp" / "ppmod.py").write_text(
        "from pathlib import Path\n\ndef table():\n    return (Path(__file__).parent / 'table.txt').read_text().strip()\n")
    (tmp_path / "pp" / "table.txt").write_text("one\n")
    (tmp_path / "pp" / "data").mkdir()  # a folder of data files, listed (attack 13, case 5a)
    # A folder of installed packages on PYTHONPATH: its data files are not keyed either (case 5b).
    (tmp_path / "inst" / "instmod-1.0.dist-info").mkdir(parents=True)
    (tmp_path / "inst" / "instmod.py").write_text(
        "from pathlib import Path\n\ndef table():\n    return (Path(__file__).parent / 'inst.txt').read_text().strip()\n")
    (tmp_path / "inst" / "inst.txt").write_text("one\n")
    # A link outside, read through and later pointed elsewhere (case 1).
    for version in ("v1", "v2"):
        (outside / version).mkdir()
        (outside / version / "linked.txt").write_text(f"{version}\n")
    (outside / "current").symlink_to(outside / "v1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "pp"), str(tmp_path / "inst")]))
    docs = tmp_path / "docs"
    (docs / "en").mkdir(parents=True)
    # The path in hexadecimal: a page showing the build machine's temp folder fails the build.
    (docs / "en" / "index.md").write_text(
        "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"
        "# Reads\n\n```{code-cell} ipython3\nimport os, sys\n\n"
        f"folder = bytes.fromhex({str(outside).encode().hex()!r}).decode()\n"
        "print('data', open(os.path.join(folder, 'data.txt')).read().strip())\n"
        "print('proc', open('/proc/self/ro' + 'ot' + os.path.join(folder, 'proc.txt')).read().strip())\n"
        "import ppmod, instmod\nprint('table', ppmod.table(), instmod.table())\n"
        "print('data', sorted(os.listdir(os.path.join(os.path.dirname(ppmod.__file__), 'data'))))\n"
        "print('linked', open(os.path.join(folder, 'current', 'linked.txt')).read().strip())\n"

        "sys.path.insert(0, folder)\nimport outside_module, compiled_module\n\n"
        "print('module', outside_module.VALUE, compiled_module.VALUE)\n"
        "os.chdir(os.path.join(folder, 'listed'))\nprint('listed', sorted(os.listdir()))\n"
        "try:\n    print('later', open(os.path.join(folder, 'later.txt')).read().strip())\n"
        "except FileNotFoundError:\n    print('later: none')\n```\n", encoding="utf8")

    def build():
        made = build_book(docs, tmp_path / "work", "html", "--language", "en", cache=tmp_path / "cache")
        assert made.returncode == 0, made.output
        return made, " ".join(" ".join(outputs(made)).split())

    first, shown = build()
    assert "data one proc one table one one data [] linked v1 module 1 1 listed ['a'] later: none" in shown
    records = [r for folder in (tmp_path / "cache").glob("cpu-*")
               for r in get_cache(str(folder)).list_cache_records()]
    assert len(records) == 1
    assert set(records[0].data[runner.READS]) >= {
        str(outside / name)
        for name in ("data.txt", "proc.txt", "outside_module.py", "compiled_module.py", "listed", "later.txt")} | {
        str(tmp_path / "pp" / "table.txt")}
    # Keyed: the module on PYTHONPATH, and the folders the import system lists (the staged kernel
    # package's too: noted, it executed every page again in `determinism`'s copy of the cache).
    assert not [path for path in records[0].data[runner.READS]
                if path.endswith(("ppmod.py", os.sep + "pp", "book-kernel-package"))]
    # Nor a file only written: the import system's .pyc.<id> while it writes outside_module's
    # .pyc (the real book's test saw the staged package's).
    assert not [path for path in records[0].data[runner.READS] if ".pyc." in path]
    assert not any(str(tmp_path / "work") in path for path in records[0].data[runner.READS])
    again, _ = build()
    assert "[en] html unchanged in " in again.output  # nothing read changed: nothing is read again
    for change in ("files", "listing", "later"):  # a file's content, a folder's names, a file that came
        if change == "files":
            (outside / "data.txt").write_text("two\n")
            (outside / "proc.txt").write_text("two\n")
            (tmp_path / "pp" / "table.txt").write_text("two\n")
            (outside / "outside_module.py").write_text("VALUE = 2\n")
            (outside / "compiled_module.py").write_text("VALUE = 3\n")
            (tmp_path / "inst" / "inst.txt").write_text("two\n")
            (tmp_path / "pp" / "data" / "new.csv").write_text("")
            (outside / "current").unlink()
            (outside / "current").symlink_to(outside / "v2")
        elif change == "listing":
            (outside / "listed" / "b").write_text("")
        else:
            (outside / "later.txt").write_text("here\n")
        changed, shown = build()
        assert "unchanged" not in changed.output, change
        why = re.search(r"\(read again: (.*) changed\)", changed.output)
        named = {"files": ("data.txt", "proc.txt", "outside_module.py", "compiled_module.py"), "listing": ("listed",),
                 "later": ("later.txt",)}[change]
        named = {str(outside / name) for name in named} | ({str(tmp_path / "pp" / "table.txt"), str(tmp_path / "inst" / "inst.txt"),
                                                            str(tmp_path / "pp" / "data"), str(outside / "current" / "linked.txt")}
                                                           if change == "files" else set())
        assert why and named <= set(why[1].split(", ")), changed.output
        same = "data two proc two table two two data ['new.csv'] linked v2 module 2 3"
        assert shown == {"files": f"{same} listed ['a'] later: none",
                         "listing": f"{same} listed ['a', 'b'] later: none",
                         "later": f"{same} listed ['a', 'b'] later here"}[change], (change, shown)
