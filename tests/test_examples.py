"""The programs in examples/ run and say what the book says they say."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("program", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_every_example_runs_as_a_program(program):
    result = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_four_cuts():
    four_cuts = runpy.run_path(str(EXAMPLES / "four_cuts.py"))
    rows = {name: four_cuts["run"](tool) for name, tool in four_cuts["TOOLS"].items()}
    assert rows[".data"]["shares storage"] and not rows[".data"]["shares version"]
    assert rows[".data"]["backward"].endswith("(WRONG)")
    assert rows[".detach()"]["shares storage"] and rows[".detach()"]["shares version"]
    assert "modified by an inplace operation" in rows[".detach()"]["backward"]
    assert rows[".detach_()"]["c is out"]
    assert "does not require grad" in rows[".detach_()"]["backward"]
    assert not rows[".clone()"]["shares storage"] and rows[".clone()"]["c.requires_grad"]
    assert rows[".clone()"]["backward"].endswith("(right)")
