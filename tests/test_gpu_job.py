"""The GPU job's offline preparation: the wheelhouse, .ci/gpu-check and the maintainer's guide's command.

No network: the resolution runs on fixture wheels (and once on the toolchain's installed
metadata, which is what the pinned wheels carry); the script's Python calls are parsed,
never run.
"""

import argparse
import importlib
import importlib.metadata
import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from book_extensions.commands import wheelhouse
from book_extensions.paths import ROOT
from book_extensions.records import device_records

SCRIPT = ROOT / ".ci" / "gpu-check"


# --- the wheelhouse, on fixture wheels -------------------------------------------------------

def fake_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
        wheel.writestr(f"{stem}.dist-info/METADATA", metadata)
    return path


INDEX = {  # name -> its Requires-Dist, at the pinned version
    "app": ["lib>=1", "typing-ext; python_version < '3.12'", "docs-only; extra == 'docs'",
            "win-only; sys_platform == 'win32'", "machine-pkg>=2"],
    "lib": ["tiny"],
    "tiny": [],
    "typing-ext": [],
    "machine-pkg": ["hidden-dep"],  # the machine brings what it needs
    "hidden-dep": [],
}
PINS = {"app": "1.0", "lib": "1.2", "tiny": "0.1", "typing-ext": "4.0", "machine-pkg": "2.5", "docs-only": "1",
        "win-only": "1", "hidden-dep": "1"}


class Index:
    """pip download, from INDEX: writes the asked wheels and notes each call."""

    def __init__(self, index=INDEX, padding: int = 0):
        self.index, self.padding, self.calls = index, padding, []

    def __call__(self, dest: Path, python: str, wanted: list[tuple[str, str]]) -> None:
        self.calls.append((python, sorted(wanted)))
        for name, version in wanted:
            path = fake_wheel(dest, name, version, self.index[name])
            if self.padding:
                with zipfile.ZipFile(path, "a") as wheel:
                    wheel.writestr("padding.bin", bytes(self.padding))


def made(tmp_path, python="3.12", machine=None, pins=PINS, index=None, **kwargs):
    dest = wheelhouse.folder(python, tmp_path / "wheelhouse")
    lines = []
    wheels = wheelhouse.make(python, dest, pins, {"machine-pkg": None} if machine is None else machine,
                             roots=["app"], download=index or Index(), log=lines.append, **kwargs)
    return dest, sorted(p.name.split("-")[0] for p in wheels), lines


def test_the_closure_follows_requirements_for_the_target_python_and_stops_at_the_machine(tmp_path):
    index = Index()
    dest, names, _ = made(tmp_path, "3.12", index=index)
    assert dest.name == "py312"
    assert names == ["app", "lib", "tiny"]  # no extra, no Windows, nothing the machine has or needs
    assert len(index.calls) == 3  # one pip call a level, not one a package
    _, names, _ = made(tmp_path, "3.11")
    assert names == ["app", "lib", "tiny", "typing_ext"]  # python_version < '3.12'


def test_a_machine_package_is_carried_only_when_its_known_version_does_not_fit(tmp_path):
    _, names, lines = made(tmp_path, machine={"machine-pkg": "1.0"})
    assert "machine_pkg" in names and "hidden_dep" in names
    assert lines[0] == "machine-pkg: the GPU machine has 1.0, app requires >=2: carrying 2.5"
    _, names, _ = made(tmp_path, machine={"machine-pkg": "3.0", "tiny": None})
    assert names == ["app", "lib"]


@pytest.mark.parametrize("pins, message", [
    ({k: v for k, v in PINS.items() if k != "tiny"},
     "tiny is needed (lib requires it) but requirements.txt pins no version of it"),
    ({**PINS, "lib": "0.9"}, "app requires lib>=1, but requirements.txt pins lib==0.9"),
])
def test_what_the_pins_cannot_satisfy_is_one_line(tmp_path, pins, message):
    with pytest.raises(wheelhouse.WheelhouseError, match=re.escape(message)):
        made(tmp_path, pins=pins)


def test_the_folder_holds_one_wheel_of_each_package_and_nothing_else(tmp_path):
    dest = wheelhouse.folder("3.12", tmp_path / "wheelhouse")
    dest.mkdir(parents=True)
    fake_wheel(dest, "lib", "0.8", [])  # another version: two would stop the install
    fake_wheel(dest, "gone", "1.0", [])  # no longer needed
    (dest / "partial.tmp").write_text("x")
    _, names, lines = made(tmp_path)
    assert sorted(p.name for p in dest.iterdir()) == ["app-1.0-py3-none-any.whl", "lib-1.2-py3-none-any.whl",
                                                       "tiny-0.1-py3-none-any.whl"]
    assert "py312: 3 wheels" in lines[-1]


def test_a_wheelhouse_over_the_limit_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    with pytest.raises(wheelhouse.WheelhouseError) as error:
        made(tmp_path, index=Index(padding=50_000), limit=100_000)
    assert "\n" not in str(error.value) and re.search(r"holds 0\.15 MB of wheels, over the 0\.1 MB", str(error.value))
    # The command: exit 1, one line, through the real lists' reading and the default limit.
    (tmp_path / "requirements.txt").write_text("".join(f"{k}=={v}\n" for k, v in PINS.items()))
    (tmp_path / "machine.txt").write_text("# the machine\npython==3.12.3\nmachine-pkg\n")
    monkeypatch.setattr(wheelhouse, "REQUIREMENTS", tmp_path / "requirements.txt")
    monkeypatch.setattr(wheelhouse, "MACHINE", tmp_path / "machine.txt")
    monkeypatch.setattr(wheelhouse, "ROOTS", ("app",))
    monkeypatch.setattr(wheelhouse, "pip_download", Index(padding=300_000))
    monkeypatch.setattr(wheelhouse, "LIMIT", 500_000)
    assert wheelhouse.main(["download", "--home", str(tmp_path / "home")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "over the 0.5 MB that may travel to the GPU machine" in err
    assert (tmp_path / "home" / "py312").is_dir()  # the machine's Python, from its list
    monkeypatch.setattr(wheelhouse, "LIMIT", 5_000_000)
    assert wheelhouse.main(["download", "--python", "3.11", "--home", str(tmp_path / "home")]) == 0
    assert len(list((tmp_path / "home" / "py311").glob("*.whl"))) == 4


# --- the wheelhouse, on the real lists ----------------------------------------------------------

def test_the_real_run_carries_what_sphinx_and_the_kernels_need_and_nothing_the_machine_has():
    pins, machine = wheelhouse.read_pins(), wheelhouse.read_machine()
    assert machine.python.startswith("3.12.") and "torch" in machine.packages and "sphinx" not in machine.packages

    def installed(batch):  # the toolchain holds the pinned versions: their metadata is the wheels'
        for name, version in batch:
            assert importlib.metadata.version(name) == version, name
        return {name: importlib.metadata.requires(name) or [] for name, _ in batch}

    for python in ("3.12", "3.11"):
        wheels, notes = wheelhouse.resolve(wheelhouse.ROOTS, pins, machine.packages, python, installed)
        names = {wheel.name for wheel in wheels}
        assert {"sphinx", "myst-nb", "docutils", "ipykernel", "jupyter-cache", "nbclient", "pyzmq",
                "sphinx-copybutton", "tinycss2", "html5lib"} <= names
        assert not names & set(machine.packages) - {note.split(":")[0] for note in notes}
        # records only: no theme, no Chinese search or typography, no browser, no test tools
        assert not names & {"sphinx-book-theme", "pydata-sphinx-theme", "jieba", "autocorrect-py", "playwright",
                            "pytest", "torch", "ruff"}


# --- .ci/gpu-check keeps to the modules and flags that exist -----------------------------------

def script_calls(text: str) -> list[list[str]]:
    """Each ``python3 -m MODULE ARGS`` the script runs: [module, *args], up to a redirection."""
    joined = re.sub(r"\\\n\s*", " ", text)
    calls = []
    for line in joined.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for found in re.finditer(r"python3 -m (\S+)([^;&|\n]*)", line):
            args = []
            for token in shlex.split(found.group(2)):
                if token.startswith((">", "2>")):
                    break
                args.append(token)
            calls.append([found.group(1), *args])
    return calls


def with_values(args: list[str]) -> list[str]:
    """Shell variables replaced by values of their kind: the device, or a path."""
    values = []
    for arg in args:
        if "$" not in arg:
            values.append(arg)
        elif arg in ("$device", "${device}"):
            values.append("cuda")
        elif re.fullmatch(r"\$\{?BOOK_CHECK_\w+(:-\d+)?\}?", arg):
            values.append("300")
        else:
            values.append("/tmp/book-gpu-check/" + re.sub(r"\W+", "-", arg).strip("-"))
    return values


class Parsed(Exception):
    pass


def parsed_by_main(module_name: str, argv: list[str], monkeypatch) -> argparse.Namespace:
    """``module.main(argv)`` as far as its argument parser: unknown flags exit 2 there.

    ``python3 -m book_extensions <verb> ...`` is the one command's main, which hands the rest of
    the line to the verb's tool (an unknown verb exits 2 before any parser runs).
    """
    module = importlib.import_module("book_extensions.__main__" if module_name == "book_extensions" else module_name)
    original = argparse.ArgumentParser.parse_args

    def parse(self, args=None, namespace=None):
        raise Parsed(original(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse)
    with pytest.raises(Parsed) as parsed:
        module.main(argv)
    monkeypatch.undo()
    return parsed.value.args[0]


def test_every_module_the_gpu_check_runs_exists_and_accepts_its_flags(monkeypatch):
    calls = script_calls(SCRIPT.read_text())
    assert {call[0] for call in calls} == {"book_extensions", "pip"}  # the one command, for every tool
    assert {"wheelhouse", "build", "gpu-checks", "records"} <= {call[1] for call in calls if call[0] == "book_extensions"}
    for module, *args in calls:
        argv = with_values(args)
        if module == "pip":
            help_text = subprocess.run([sys.executable, "-m", "pip", argv[0], "--help"], capture_output=True,
                                       text=True, check=True).stdout
            for flag in argv[1:]:
                assert flag.split("=")[0] in help_text, f"pip {argv[0]} has no {flag}"
            continue
        namespace = parsed_by_main(module, argv, monkeypatch)
        assert namespace is not None, f"{module} {args}"
    build = next(args[1:] for module, *args in calls if module == "book_extensions" and args[0] == "build")
    assert build[0] == "doctest" and "--language" in build  # records only: the English pages, no HTML


def test_the_script_installs_from_the_folder_the_wheelhouse_fills_and_records_its_device():
    text = SCRIPT.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "wheelhouse/" not in code  # the folder comes from the module, one definition
    calls = script_calls(text)
    assert ["book_extensions", "wheelhouse", "install", "--target", '$site'] in calls
    python = wheelhouse.read_machine().python
    assert wheelhouse.folder(python) == ROOT / "wheelhouse" / "py{}{}".format(*python.split(".")[:2])
    record = next(args[1:] for module, *args in calls if module == "book_extensions" and args[:2] == ["records", "record"])
    compare = next(args[1:] for module, *args in calls if module == "book_extensions" and args[:2] == ["records", "compare"])
    assert record[record.index("--results") + 1] == "$out"
    assert compare[compare.index("--record") + 1] == "$out/$device.json"  # what record wrote
    assert "BOOK_CHECK_DEVICE" in text and "--device" in text


def guide_gpu_section() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    return text[text.index("## The GPU job"):].split("\n## ", 1)[0]


def test_the_maintainers_guide_gives_the_device_command_with_the_paths_it_needs():
    section = guide_gpu_section()
    device_run = re.search(r"```json\n\s*(\{[^`\n]*\"carry\"[^`\n]*\})\n\s*```", section)
    assert device_run, "CONTRIBUTING.md's GPU section gives the run call as a JSON block with its carry list"
    call = json.loads(device_run.group(1))
    assert len(call["command"]) <= 2000 and ".ci/gpu-check" in call["command"]
    machine_python = wheelhouse.read_machine().python
    assert call["carry"] == [wheelhouse.shown(wheelhouse.folder(machine_python))]
    assert 360 < call["timeout_s"] <= 600  # the script's 6 minutes, within one call's limit
    assert "nox -s wheelhouse" in section and "--device cpu" in section and "--python 3.11" in section


# --- the rehearsal's comparison: a CPU record against the record of its release -----------------

def cpu_record(pages, date="2026-12-01", torch="2.11.0+cu130"):
    return {"device": "cpu", "device_name": "CPU", "torch": torch, "cuda": None, "python": "3.11.7",
            "date": date, "pages": pages}


def test_a_cpu_run_must_equal_the_record_of_its_release(tmp_path, capsys):
    results, docs = tmp_path / "results", tmp_path / "docs"
    results.mkdir()
    pages = {"page": [{"source": "s1", "outputs": ["tensor([1.])\n"]}]}
    (results / "cpu-torch-2.11.0.json").write_text(json.dumps(cpu_record(pages)))
    run = tmp_path / "cpu.json"
    run.write_text(json.dumps(cpu_record(pages, date="2026-12-02")))
    assert device_records.main(["compare", "--results", str(results), "--docs", str(docs), "--record", str(run)]) == 0
    assert capsys.readouterr().out.startswith("record identical to results/cpu-torch-2.11.0.json")
    # one digit differs: within the CUDA comparison's tolerance, but two CPU runs must agree exactly
    run.write_text(json.dumps(cpu_record({"page": [{"source": "s1", "outputs": ["tensor([1.0001])\n"]}]})))
    assert device_records.main(["compare", "--results", str(results), "--docs", str(docs), "--record", str(run)]) == 1
    assert "record differs from results/cpu-torch-2.11.0.json" in capsys.readouterr().out
    run.write_text(json.dumps(cpu_record(pages, torch="2.13.0")))
    assert device_records.main(["compare", "--results", str(results), "--docs", str(docs), "--record", str(run)]) == 2


def test_a_cuda_record_is_compared_with_the_cpu_record_of_its_release(tmp_path, capsys):
    results, docs = tmp_path / "results", tmp_path / "docs"
    results.mkdir()
    (results / "cpu.json").write_text(json.dumps(cpu_record({"page": [{"source": "s1", "outputs": ["1\n"]}]},
                                                            torch="2.15.0")))
    (results / "cpu-torch-2.11.0.json").write_text(json.dumps(cpu_record({"page": [{"source": "s1",
                                                                                      "outputs": ["2\n"]}]})))
    cuda = {**cpu_record({"page": [{"source": "s1", "outputs": ["2\n"]}]}), "device": "cuda",
            "device_name": "NVIDIA H200", "cuda": "13.0"}
    run = tmp_path / "out" / "cuda.json"
    run.parent.mkdir()
    run.write_text(json.dumps(cuda))
    assert device_records.main(["compare", "--results", str(results), "--docs", str(docs), "--record", str(run)]) == 0
    out = capsys.readouterr().out
    assert "cpu-torch-2.11.0.json" in out and "0 behaviour differences" in out


BUILD_LOG = (
    "/m/docs/en/detach.md:23: WARNING: code cell 1 was expected to raise RuntimeError ('x') but raised "
    "RuntimeError: [torch.cuda.FloatTensor [3]] y [book.expect_error]\n"
    "\x1b[91m/m/docs/en/forward-mode.md:308: WARNING: code cell 16 raised RuntimeError: z [book.cell_error]\x1b[39;49;00m\n"
)
DOCTEST_OUTPUT = ('File "forward-mode.md", line 523, in default\nFailed example:\n    g, g.is_inference()\n'
                  "Expected:\n    (tensor([2.]), False)\n")


def test_the_gpu_runs_findings_name_no_device_and_no_line():
    from book_extensions.commands.gpu_checks import findings

    assert findings(BUILD_LOG, DOCTEST_OUTPUT) == [
        "en/detach.md: code cell 1 [book.expect_error]",
        "en/forward-mode.md: code cell 16 [book.cell_error]",
        "forward-mode.md: doctest failed: g, g.is_inference()",
    ]


def test_the_gpu_runs_findings_must_be_the_cpus_on_the_same_release(tmp_path, capsys):
    from book_extensions.commands import gpu_checks
    from book_extensions.commands.toolchain import pinned_torch

    (tmp_path / "build.log").write_text(BUILD_LOG)
    (tmp_path / "output.txt").write_text(DOCTEST_OUTPUT)
    results = tmp_path / "results"
    results.mkdir()
    args = ["--log", str(tmp_path / "build.log"), "--doctest", str(tmp_path / "output.txt"),
            "--write", str(tmp_path / "checks.txt"), "--results", str(results)]
    assert gpu_checks.main([*args, "--torch", "2.11.0+cu130"]) == 2  # nothing to compare with
    assert "run the rehearsal" in capsys.readouterr().err
    (results / "cpu-torch-2.11.0-checks.txt").write_text((tmp_path / "checks.txt").read_text())
    assert gpu_checks.main([*args, "--torch", "2.11.0+cu130"]) == 0
    (results / "cpu-torch-2.11.0-checks.txt").write_text("en/detach.md: code cell 1 [book.expect_error]\n")
    assert gpu_checks.main([*args, "--torch", "2.11.0+cu130"]) == 1
    assert "only here: en/forward-mode.md: code cell 16 [book.cell_error]" in capsys.readouterr().out
    # On the pinned release the pages' own checks must all pass.
    assert gpu_checks.main([*args, "--torch", f"{pinned_torch()}+cu130"]) == 1
    (tmp_path / "output.txt").unlink()
    assert gpu_checks.main([*args, "--torch", "2.11.0+cu130"]) == 2  # the doctest build never finished
