"""The CI workflow files are valid GitHub Actions workflows, and do what their names say."""

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
LINT = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]


def lint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, *map(str, paths)], capture_output=True, text=True)


def test_the_workflows_are_valid():
    assert [p.name for p in WORKFLOWS] == ["gpu.yml", "newest-torch.yml", "publish.yml", "test.yml"]
    result = lint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_rejects_a_broken_workflow():
    broken = ROOT / "tests" / "fixtures" / "workflows" / "broken.yml"
    result = lint(broken)
    assert result.returncode != 0
    assert "broken.yml" in result.stdout and "'runs-on' is a required property" in result.stdout


def steps(name: str) -> str:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job.get("steps", []))


def test_each_workflow_runs_what_its_name_says():
    assert "bash .ci/run" in steps("test.yml")
    assert "noxfile.py -s docs" in steps("publish.yml")
    gpu = steps("gpu.yml")
    assert "-s docs -- --device cuda" in gpu and "-s compare" in gpu
    assert "noxfile.py -s newest-torch" in steps("newest-torch.yml")
    schedule = yaml.safe_load((ROOT / ".github" / "workflows" / "newest-torch.yml").read_text())[True]["schedule"]
    assert schedule and schedule[0]["cron"].count(" ") == 4  # weekly, so a release is known within a week
