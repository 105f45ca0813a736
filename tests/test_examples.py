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


def test_ddp_frozen_reports_what_the_book_says(run_example):
    result = run_example("ddp_frozen.py")
    assert result.returncode == 0, result.stderr
    report = result.stdout
    setups = {}
    for line in report.splitlines():
        if not line.startswith(" "):
            name = line.rstrip(":")
            setups[name] = []
        else:
            setups[name].append(line.strip())
    assert list(setups) == ["frozen before wrapping", "frozen after wrapping",
                            "frozen after wrapping, find_unused_parameters=True", "unfrozen after wrapping",
                            "re-wrapped after unfreezing", "heads in turn",
                            "heads in turn, find_unused_parameters=True", "heads in turn, static_graph=True",
                            "head 1 never used, static_graph=True"]
    reduced = "gradient elements all-reduced in each step: "
    same = "same weights on both ranks: "
    assert setups["frozen before wrapping"] == ["trained 3 steps; body moved: False; body has a grad: False",
                                                reduced + "10 10 10", same + "body True, heads True"]
    # a late freeze, or heads in turn: step 0 all-reduces nothing, its optimizer step applies
    # each rank's own gradients, and the error only comes at step 1
    for name, indices, body in [("frozen after wrapping", "0 1", True), ("heads in turn", "4 5", False)]:
        lines = setups[name]
        assert lines[0] == "RuntimeError at step 1, the same on both ranks:"
        assert lines[1].startswith("Expected to have finished reduction in the prior iteration")
        assert lines[-3:] == [f"Parameter indices which did not receive grad for rank 0: {indices}",
                              reduced + "0", same + f"body {body}, heads False"]
    assert "static_graph" in " ".join(setups["heads in turn, static_graph=True"])
    for name in ["frozen after wrapping, find_unused_parameters=True",
                 "heads in turn, find_unused_parameters=True", "head 1 never used, static_graph=True"]:
        assert setups[name][1:] == [reduced + "30 30 30", same + "body True, heads True"]
    # unfrozen after wrapping: never all-reduced, so the body drifts apart; a new DDP fixes it
    assert setups["unfrozen after wrapping"] == ["trained 3 steps; body moved: True; body has a grad: True",
                                                 reduced + "10 10 10", same + "body False, heads True"]
    assert setups["re-wrapped after unfreezing"] == ["trained 3 steps; body moved: True; body has a grad: True",
                                                     reduced + "10 30 30", same + "body True, heads True"]
    # nothing that changes from run to run: no ports, process ids or paths
    assert "127.0.0.1" not in report and "/" not in report
