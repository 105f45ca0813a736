"""The programs in examples/ run and say what the book says they say."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("program", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_every_example_runs_as_a_program(program, run_example):
    result = run_example(program.name)
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


def test_four_cuts_prints_one_markdown_table_row_per_tool(run_example):
    # The book renders this text as a table (myst-nb, gfm): a stray "|" in a message, or a
    # row of another width, would break it.
    result = run_example("four_cuts.py")
    header, rule, *rows = result.stdout.strip().splitlines()
    assert header.startswith("| tool | backward |") and rule == "|---" * 6 + "|"
    assert [row.split(" | ")[0] for row in rows] == ["| `.data`", "| `.detach()`", "| `.detach_()`", "| `.clone()`"]
    assert all(line.count("|") == 7 for line in [header, *rows]), rows


def test_four_cuts_shows_a_table_in_jupyter():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown = []
    shell.display_pub.publish = lambda data, metadata=None, **kwargs: shown.append(data)
    try:
        shell.run_cell(f"%run {EXAMPLES / 'four_cuts.py'}")
    finally:
        InteractiveShell.clear_instance()
    assert len(shown) == 1 and shown[0]["text/markdown"].startswith("| tool | backward |")
    assert shown[0]["text/plain"] == shown[0]["text/markdown"]  # what records compare
