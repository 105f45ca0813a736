"""The doctest builder's examples run in a process of their own, and this process compares
(book_extensions/execution/doctests.py, book_extensions/kernel/doctest_examples.py)."""

from __future__ import annotations

import doctest
import time
from pathlib import Path

import pytest

from book_extensions.execution import kernel_inputs
from book_extensions.execution.doctests import ExamplesProcess, compare

pytestmark = pytest.mark.unit


@pytest.fixture
def examples(tmp_path):
    package = kernel_inputs.staged_kernel_package(tmp_path / "package")
    process = ExamplesProcess(tmp_path / "examples",
                              lambda scratch: kernel_inputs.kernel_environment("cpu", Path(scratch, "home"), package=package),
                              ["/dev"])
    yield process
    process.stop()


def example(text: str) -> doctest.Example:
    (found,) = doctest.DocTestParser().get_examples(text)
    return found


def test_an_example_runs_in_its_pages_namespace_and_its_outcome_is_what_it_printed_or_raised(examples):
    assert examples.run("page", "x = 2", "<x>", 30) | {"id": None} == {"id": None, "printed": "", "exception": None}
    assert examples.run("page", "x + 1", "<x>", 30)["printed"] == "3\n"
    assert examples.run("page", "print('a', end='')", "<x>", 30)["printed"] == "a\n"  # doctest's rule
    other = examples.run("another page", "x", "<x>", 30)
    assert other["printed"] == "" and other["exception"]["message"] == "NameError: name 'x' is not defined\n"
    assert other["exception"]["traceback"].startswith("Traceback (most recent call last):\n  File \"<x>\"")
    # A note is part of what doctest compares since Python 3.13; the carets of a SyntaxError are not.
    noted = examples.run("page", "e = ValueError('bad'); e.add_note('see here'); raise e", "<x>", 30)
    assert noted["exception"]["message"] == "ValueError: bad\nsee here\n"
    syntax = examples.run("page", "1 +", "<x>", 30)
    assert syntax["exception"]["message"].startswith("SyntaxError: ")


def test_the_comparison_is_exact_unless_the_example_relaxes_it():
    wrong = example(">>> f()\nTraceback (most recent call last):\n    ...\nRuntimeError: another message\n")
    raised = {"printed": "", "exception": {"message": "RuntimeError: the message\n",
                                           "traceback": "Traceback (most recent call last):\nRuntimeError: the message\n"}}
    report = compare(wrong, raised, doctest.DONT_ACCEPT_TRUE_FOR_1)
    assert "Expected:\n    Traceback (most recent call last):\n        ...\n    RuntimeError: another message\nGot:" in report
    assert compare(wrong, raised, doctest.IGNORE_EXCEPTION_DETAIL) is None
    dots = example(">>> f()\nTraceback (most recent call last):\n    ...\nRuntimeError: the ...\n")
    assert compare(dots, raised, 0) is not None and compare(dots, raised, doctest.ELLIPSIS) is None
    printed = example(">>> 1 + 1\n3\n")
    assert "Expected:\n    3\nGot:\n    2\n" in compare(printed, {"printed": "2\n", "exception": None}, 0)
    assert compare(printed, {"printed": "3\n", "exception": None}, 0) is None
    assert compare(printed, raised, 0).startswith("Exception raised:\n    Traceback")


def test_an_example_cannot_end_answer_for_or_outlast_the_examples_process(examples):
    assert examples.run("page", "import os; os._exit(0)", "<x>", 30) == \
        "the example ended the examples' process (exit status 0)"
    # The next example gets a new process.
    assert examples.run("page", "1", "<x>", 30)["printed"] == "1\n"
    forged = ("import json, os, sys; os.write(int(sys.argv[-1]), "
              "(json.dumps({'id': '0', 'printed': '', 'exception': None}) + '\\n').encode())")
    assert examples.run("page", forged, "<x>", 30) == \
        "the examples' process answered something else than this example's outcome"
    started = time.monotonic()
    assert examples.run("page", "import time; time.sleep(60)", "<x>", 1) == "the example ran longer than the 1 s timeout"
    assert time.monotonic() - started < 15
    assert examples.run("page", "2", "<x>", 30)["printed"] == "2\n"
