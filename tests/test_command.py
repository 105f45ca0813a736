"""The book's one command, ``python -m book_extensions <verb>``: its verbs, their help, its errors.

Fast: no build, no browser; each verb only prints its help, in a Python of its own.
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from books import PACKAGE, ROOT

from book_extensions.__main__ import COMMAND, VERBS


def command(*args: str, python: tuple[str, ...] = (sys.executable,)) -> subprocess.CompletedProcess:
    return subprocess.run([*python, "-m", "book_extensions", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def listed_verbs(help_text: str) -> dict[str, str]:
    """The verbs the command's --help lists, each with its line."""
    block = help_text.split("\nverbs:\n", 1)[1]
    return dict(re.fullmatch(r"  (\S+)\s+(.+)", line).groups() for line in block.splitlines())


def test_help_lists_every_verb_of_the_table_with_its_line():
    result = command("--help")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith(f"usage: {COMMAND} <verb> [arguments]\n")
    assert listed_verbs(result.stdout) == {name: verb.summary for name, verb in VERBS.items()}
    assert command("-h").stdout == result.stdout


def test_the_verbs_are_one_each_with_a_line_each():
    assert len({verb.module for verb in VERBS.values()}) == len(VERBS)
    for name, verb in VERBS.items():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name), name
        assert "\n" not in verb.summary and len(verb.summary) <= 100, name


@pytest.mark.parametrize("verb", VERBS)
def test_each_verbs_help_comes_from_its_own_parser(verb):
    result = command(verb, "--help")
    assert result.returncode == 0, result.stderr
    # argparse's usage line names the command as typed: the tool's prog is the verb's.
    assert result.stdout.startswith(f"usage: {COMMAND} {verb} "), result.stdout[:200]


@pytest.mark.parametrize("typed, hint", [("buld", "; did you mean 'build'?"), ("frobnicate", "")])
def test_an_unknown_verb_is_one_line_and_exit_2(typed, hint):
    result = command(typed)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"error: unknown verb {typed!r}{hint} ({COMMAND} --help lists them)\n"


def test_no_verb_is_the_list_and_exit_2():
    result = command()
    assert result.returncode == 2 and result.stdout == ""
    assert listed_verbs(result.stderr) == {name: verb.summary for name, verb in VERBS.items()}


# --- lazy imports: toolchain and wheelhouse run where there is no Sphinx --------------------------

# Runs the command under an import hook that refuses the book's heavy packages (as a Python
# without them would) and notes every attempt, even one the code catches; then reports the
# exit status, the attempts and what it imported beyond the standard library.
UNDER_A_BARE_PYTHON = r"""
import importlib.abc, json, runpy, sys

HEAVY = {"sphinx", "docutils", "myst_nb", "myst_parser", "jupyter_cache", "jupyter_client", "nbclient",
         "nbformat", "IPython", "ipykernel", "torch", "numpy", "matplotlib", "playwright"}
report, argv = sys.argv[1], sys.argv[2:]
tried = []


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HEAVY:
            tried.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (refused)", name=name)
        return None


before = set(sys.modules)
sys.meta_path.insert(0, Refuse())
sys.argv = ["book_extensions", *argv]
code = 0
try:
    runpy.run_module("book_extensions", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    code = exit.code
except BaseException as error:
    code = repr(error)
imported = {name.partition(".")[0] for name in set(sys.modules) - before}
with open(report, "w") as file:
    json.dump({"code": code, "tried": tried,
               "beyond_stdlib": sorted(imported - set(sys.stdlib_module_names) - {"book_extensions"})}, file)
"""


def under_a_bare_python(tmp_path: Path, *args: str) -> dict:
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-c", UNDER_A_BARE_PYTHON, str(report), *args], cwd=ROOT,
                   capture_output=True, text=True, timeout=120)
    return json.loads(report.read_text())


@pytest.mark.parametrize("verb", ["toolchain", "wheelhouse"])
def test_toolchain_and_wheelhouse_import_only_the_standard_library(tmp_path, verb):
    # The noxfile runs toolchain before any environment exists; .ci/gpu-check runs wheelhouse
    # on the GPU machine's Python, which has no Sphinx, before the wheels are installed.
    assert under_a_bare_python(tmp_path, verb, "--help") == {"code": 0, "tried": [], "beyond_stdlib": []}


def test_the_bare_python_check_sees_a_heavy_import(tmp_path):
    # The check's own control: parity is a Sphinx extension, and its help needs Sphinx.
    report = under_a_bare_python(tmp_path, "parity", "--help")
    assert report["code"] != 0 and any(name.partition(".")[0] in {"sphinx", "docutils"} for name in report["tried"])


def test_the_command_imports_no_tool_until_its_verb_runs():
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, book_extensions.__main__; "
                               "print(sorted(m for m in sys.modules if m.startswith('book_extensions')))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert imported.strip() == "['book_extensions', 'book_extensions.__main__']"


# --- one program in the package ------------------------------------------------------------------

def test_the_package_has_one_program_and_every_tool_is_a_verb():
    main_guard = re.compile(r"""__name__\s*==\s*["']__main__["']""")
    programs = [path.relative_to(ROOT).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
                if main_guard.search(path.read_text(encoding="utf8"))]
    assert programs == ["book_extensions/__main__.py"]
    # Every module with a main(argv) is a verb's, and every verb's module has one.
    with_main = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                with_main.add(module)
                assert [a.arg for a in node.args.args] == ["argv"] and len(node.args.defaults) == 1, module
    assert with_main - {"book_extensions.__main__"} == {verb.module for verb in VERBS.values()}
