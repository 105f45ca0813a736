"""The package's layering: Sphinx extensions never import the command-line layer
(:data:`COMMAND_LINE`), no two modules import each other, directly or round a loop (imports
inside functions count: they are the same dependency, only later), and a stage's package
imports nothing of its own (importing one of its modules imports no other)."""

import ast
import re
from pathlib import Path

import networkx
from books import PACKAGE, ROOT

# The command-line layer: the tools of commands/, and the two that live beside the stage they
# drive (the offline editions' PDF and EPUB, the records under other torch releases).
COMMAND_LINE = ("book_extensions.commands", "book_extensions.editions.make_editions",
                "book_extensions.records.release_records", "book_extensions.records.device_records")


def in_command_line(module: str) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in COMMAND_LINE)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it but under
    ``if TYPE_CHECKING:`` (an import for a type annotation only, never run)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from . import records" imports a module; "from .records import load" its module.
            found |= {f"{base}.{alias.name}" for alias in node.names} | {base}
    return {module for module in found if module.startswith("book_extensions")}


def import_graph(root: Path = PACKAGE) -> networkx.DiGraph:
    paths = sorted(root.rglob("*.py"))
    modules = {module_name(p, root) for p in paths}
    graph = networkx.DiGraph()
    graph.add_nodes_from(modules)
    for path in paths:
        name = module_name(path, root)
        for target in imports(path, root) & modules:
            # A module's package (its __init__) is imported on the way to it: not an edge.
            if target != name and not name.startswith(target + "."):
                graph.add_edge(name, target)
    return graph


def test_no_module_imports_itself_round_a_loop():
    cycles = sorted(sorted(cycle) for cycle in networkx.simple_cycles(import_graph()))
    assert cycles == []


def test_no_extension_imports_the_command_line_layer():
    graph = import_graph()
    wrong = sorted((module, target) for module, target in graph.edges
                   if not in_command_line(module) and in_command_line(target))
    assert wrong == []


def test_a_stages_package_imports_nothing():
    # noxfile.py imports book_extensions.records.release_list, and the build driver
    # book_extensions.execution.cache_key, where Sphinx may be missing or slow to import.
    found = {path.relative_to(PACKAGE).as_posix(): sorted(imports(path, PACKAGE))
             for path in sorted(PACKAGE.rglob("__init__.py")) if path.parent != PACKAGE}
    assert found and all(names == [] for names in found.values()), found


def test_the_checks_see_a_loop_and_a_wrong_way_import(tmp_path):
    root = tmp_path / "book_extensions"
    (root / "commands").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "commands" / "__init__.py").write_text("")
    (root / "a.py").write_text("from . import b, c\n")
    # An import for a type annotation only never runs: no loop through c.
    (root / "c.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .a import f\n")
    (root / "b.py").write_text("def f():\n    from .a import g\n    from .commands.cli import main\n")
    (root / "commands" / "cli.py").write_text("from ..a import f\n")
    graph = import_graph(root)
    assert sorted(sorted(c) for c in networkx.simple_cycles(graph)) == [
        ["book_extensions.a", "book_extensions.b"],
        ["book_extensions.a", "book_extensions.b", "book_extensions.commands.cli"]]
    assert ("book_extensions.b", "book_extensions.commands.cli") in graph.edges
    assert ("book_extensions.a", "book_extensions.c") in graph.edges
    assert ("book_extensions.c", "book_extensions.a") not in graph.edges
    assert in_command_line("book_extensions.commands.cli") and not in_command_line("book_extensions.b")


def test_the_steps_after_a_build_are_declared_in_one_place():
    # Only site/post_build.py connects to build-finished; its STEPS are the order they run in.
    from book_extensions.site import post_build

    connecting = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "connect" and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "build-finished"):
                connecting.append(path.relative_to(PACKAGE.parent).as_posix())
    assert connecting == ["book_extensions/site/post_build.py"]
    names = [step.name for step in post_build.STEPS]
    # The inline CSS comes from the trimmed sheets; the last check sees every file written.
    assert names.index("asset_trimming.trim_build") < names.index("first_paint.inline_first_paint")
    assert names[-1] == "leaked_paths.check_build"
    # The remote-loads check reads the pages as published (after the first paint rewrote them),
    # so that the pages it found clean stay so until they change.
    assert names.index("first_paint.inline_first_paint") < names.index("remote_loads.check_build")


def stages(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Each stage's folder and the modules in it (its __init__ aside)."""
    return {folder.name: sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
            for folder in sorted(root.iterdir()) if (folder / "__init__.py").is_file()}


def layout_entries(contributing: str) -> dict[str, str]:
    """CONTRIBUTING.md's layout block: each stage's entry (``  <stage>/`` and the lines under it)."""
    block = contributing.split("## Layout", 1)[1].split("```", 2)[1]
    entries, current = {}, None
    for line in block.splitlines():
        match = re.match(r"  (\w+)/ ", line)
        if match:
            current = match.group(1)
            entries[current] = line
        elif current and re.match(r" {5,}\S", line):
            entries[current] += "\n" + line
        else:
            current = None
    return entries


def unnamed_modules(root: Path, contributing: str) -> list[str]:
    """The modules that their stage's __init__ docstring (as :mod:`.name`) or CONTRIBUTING.md's
    layout block (as a word, in the stage's entry) does not name."""
    entries = layout_entries(contributing)
    missing = []
    for stage, modules in stages(root).items():
        docstring = ast.get_docstring(ast.parse((root / stage / "__init__.py").read_text(encoding="utf8"))) or ""
        for module in modules:
            if f":mod:`.{module}`" not in docstring:
                missing.append(f"{stage}/__init__.py: {module}")
            if not re.search(rf"\b{module}\b", entries.get(stage, "")):
                missing.append(f"CONTRIBUTING.md: {stage}/{module}")
    return missing


def test_every_module_is_named_where_its_stage_is_described():
    assert unnamed_modules(PACKAGE, (ROOT / "CONTRIBUTING.md").read_text(encoding="utf8")) == []


def test_the_check_sees_a_module_left_unnamed(tmp_path):
    stage = tmp_path / "book_extensions" / "kernel"
    stage.mkdir(parents=True)
    (stage / "__init__.py").write_text('"""- :mod:`.startup`: the startup file."""\n', encoding="utf8")
    (stage / "startup.py").write_text("", encoding="utf8")
    contributing = "## Layout\n\n```\n  kernel/            code run in kernels (startup)\n  site/  the site\n```\n"
    assert unnamed_modules(stage.parent, contributing) == []
    (stage / "writes.py").write_text("", encoding="utf8")
    assert unnamed_modules(stage.parent, contributing) == ["kernel/__init__.py: writes", "CONTRIBUTING.md: kernel/writes"]


def test_what_a_bare_nox_runs_is_said_where_the_sessions_are_listed():
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf8")
    sessions = ast.literal_eval(re.search(r"^nox\.options\.sessions = (\[.*?\])", noxfile, re.M).group(1))
    said = " and ".join(f"``{name}``" for name in sessions)
    assert f"A bare ``nox`` runs {said}" in ast.get_docstring(ast.parse(noxfile))
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf8")
    assert f"A bare `nox` runs {said.replace('``', '`')}" in contributing


def collected(*options: str) -> str:
    """What ``pytest --collect-only`` lists for tests/test_executor.py (a fixture module with
    unit tests in it), with ``options``."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *options, "tests/test_executor.py"], cwd=ROOT, capture_output=True, text=True).stdout


def test_a_test_is_selected_by_its_own_tier_only():
    # -m matches the marks of the test's module too: a unit test of a fixture module ran with
    # `-m fixture`, and the real book's scheduled editions test with it.
    unit_test = "test_a_bare_runner_leaves_no_folder_behind"
    assert unit_test in collected("-m", "unit")
    assert unit_test not in collected("-m", "fixture")
    assert "test_each_page_runs_in_an_empty_scratch_folder_of_its_own" not in collected("-m", "fixture")


def test_the_workers_take_the_groups_in_the_order_collected():
    # conftest.py sorts the real book's tests last, to run while it builds; pytest-xdist's
    # default hands out the largest groups first, which are the two browser sweeps: their
    # workers waited for the book. (Read from pyproject.toml: a worker's own configuration
    # does not hold how the controller distributes.)
    import shlex
    import tomllib

    addopts = shlex.split(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))["tool"]["pytest"]["ini_options"]["addopts"])
    assert "--dist loadgroup" in " ".join(addopts)
    assert "--no-loadscope-reorder" in addopts


def files_importing_a_test_file(folder: Path) -> list[str]:
    """``file: module`` for each import of one test file by another in ``folder``: shared
    helpers live in helper modules (books.py, browsing.py, sweep.py...), never in a test file."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {name}" for name in names if name.split(".")[0].startswith("test_")]
    return found


def test_no_test_file_imports_another():
    assert files_importing_a_test_file(ROOT / "tests") == []


def test_the_check_sees_a_test_file_importing_another(tmp_path):
    (tmp_path / "test_a.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "test_b.py").write_text("from test_a import helper\nimport books\n")
    (tmp_path / "test_c.py").write_text("def f():\n    import test_a.x\n")
    assert files_importing_a_test_file(tmp_path) == ["test_b.py: test_a", "test_c.py: test_a.x"]
