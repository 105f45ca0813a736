"""The doctest builder's examples run in processes of their own, one per page, and this process
compares (book_extensions/execution/doctests.py, book_extensions/execution/doctest_examples.py)."""

from __future__ import annotations

import doctest
import json
import sys
import time
from pathlib import Path

import pytest

from book_extensions.commands.build import unfinished_doctests
from book_extensions.execution import kernel_inputs
from book_extensions.execution.doctests import ExamplesServer, compare

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")  # one for the module's tests: each asks for pages of its own
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("server")
    package = kernel_inputs.staged_kernel_package(tmp_path / "package")
    started = ExamplesServer(tmp_path / "examples",
                             lambda scratch: kernel_inputs.kernel_environment("cpu", Path(scratch, "home"), package=package),
                             ["/dev"])
    yield started
    started.stop()


def example(text: str) -> doctest.Example:
    (found,) = doctest.DocTestParser().get_examples(text)
    return found


def test_an_example_runs_in_its_pages_namespace_and_its_outcome_is_what_it_printed_or_raised(server):
    with server.page() as page:
        assert page.run(0, "x = 2", "<x>", 30) | {"id": None} == {"id": None, "printed": "", "exception": None}
        assert page.run(0, "x + 1", "<x>", 30)["printed"] == "3\n"
        assert page.run(1, "print('a', end='')", "<x>", 30)["printed"] == "a\n"  # doctest's rule
        # A note is part of what doctest compares since Python 3.13; the carets of a SyntaxError are not.
        noted = page.run(1, "e = ValueError('bad'); e.add_note('see here'); raise e", "<x>", 30)
        assert noted["exception"]["message"] == "ValueError: bad\nsee here\n"
        assert page.run(1, "1 +", "<x>", 30)["exception"]["message"].startswith("SyntaxError: ")
        # What a page changes in the process stays on the page.
        assert page.run(1, "import torch; _ = torch.set_grad_enabled(False); torch.is_grad_enabled()", "<x>", 30)[
            "printed"] == "False\n"
    with server.page() as other:
        missing = other.run(0, "x", "<x>", 30)
        assert missing["printed"] == "" and missing["exception"]["message"] == "NameError: name 'x' is not defined\n"
        assert missing["exception"]["traceback"].startswith('Traceback (most recent call last):\n  File "<x>"')
        assert other.run(0, "import torch; torch.is_grad_enabled()", "<x>", 30)["printed"] == "True\n"


def test_the_comparison_is_exact_unless_the_example_relaxes_it():
    wrong = example(">>> f()\nTraceback (most recent call last):\n    ...\nRuntimeError: another message\n")
    raised = {"printed": "", "exception": {"message": "RuntimeError: the message\n",
                                           "traceback": "Traceback (most recent call last):\nRuntimeError: the message\n"}}
    report = compare(wrong, raised, doctest.DONT_ACCEPT_TRUE_FOR_1)
    assert "Expected:\n    Traceback (most recent call last):\n        ...\n    RuntimeError: another message\nGot:" in report
    assert compare(wrong, raised, doctest.IGNORE_EXCEPTION_DETAIL) is None
    # As doctest: the type on the first line, whatever the notes after it say.
    noted = {"printed": "", "exception": {"message": "ValueError\nsee: x\n", "traceback": ""}}
    assert compare(example(">>> f()\nTraceback (most recent call last):\nValueError\n"), noted,
                   doctest.IGNORE_EXCEPTION_DETAIL) is None
    dots = example(">>> f()\nTraceback (most recent call last):\n    ...\nRuntimeError: the ...\n")
    assert compare(dots, raised, 0) is not None and compare(dots, raised, doctest.ELLIPSIS) is None
    printed = example(">>> 1 + 1\n3\n")
    assert "Expected:\n    3\nGot:\n    2\n" in compare(printed, {"printed": "2\n", "exception": None}, 0)
    assert compare(printed, {"printed": "3\n", "exception": None}, 0) is None
    assert compare(printed, raised, 0).startswith("Exception raised:\n    Traceback")


def test_an_example_cannot_end_answer_for_or_outlast_its_pages_process(server):
    with server.page() as page:
        assert page.run(0, "import os; os._exit(0)", "<x>", 30) == "the example ended its page's process"
        assert page.run(0, "1", "<x>", 30) == "the example ended its page's process"  # the page's examples stop
    with server.page() as page:  # the next page gets a process of its own
        assert page.run(0, "1", "<x>", 30)["printed"] == "1\n"
        forged = ("import json, sys; sys.stdout.flush(); print(json.dumps({'id': '0', 'printed': '', 'exception': None}), "
                  "file=sys.__stdout__)")
        assert page.run(0, forged, "<x>", 30)["printed"] == ""  # what it writes past sys.stdout is logged
        garbled = ("exec(\"import sys\\nframe = sys._getframe()\\nwhile 'stream' not in frame.f_locals: frame = frame.f_back\\n"
                   "frame.f_locals['stream'].write(b'[' * 200000 + b'\\\\n'); frame.f_locals['stream'].flush()\")")
        assert page.run(0, garbled, "<x>", 30) == "the page's process answered other than with this example's outcome"
    with server.page() as page:
        started = time.monotonic()
        assert page.run(0, "import time; time.sleep(60)", "<x>", 1) == "the example ran longer than the 1 s timeout"
        assert time.monotonic() - started < 15
    with server.page() as page:
        assert page.run(0, "2", "<x>", 30)["printed"] == "2\n"


def test_what_a_pages_examples_leave_running_is_ended_and_named(server):
    # Attack 9, cases 5 and 6: a process an example started in a session of its own outlived its
    # page and wrote into the next page's working folder; only the driver's end-of-build warning
    # noticed. The builder now ends it once the page is done, and fails the page.
    escape = ("import subprocess, sys; _ = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
              "start_new_session=True); print('started')")
    with server.page() as page:
        assert page.run(0, escape, "<x>", 30)["printed"] == "started\n"
        pid = page.pid
    left = server.end_leftovers(pid)
    assert len(left) == 1 and "time.sleep(60)" in left[0], left
    # Named by the program, not its folder: a checkout's long path once cut the command off
    # at 80 characters before the sleep (CI of stop 49, in /check/work/main).
    assert str(Path(sys.executable).parent) not in left[0], left
    assert server.end_leftovers(None) == []  # gone now
    with server.page() as page:  # a page that leaves nothing
        assert page.run(0, "1", "<x>", 30)["printed"] == "1\n"
        pid = page.pid
    assert server.end_leftovers(pid) == []


def test_a_process_is_named_in_one_line_by_its_program():
    # Attack 10: a program named with newlines made the "left running" warning three lines;
    # one named "" or "/" lost its name.
    from book_extensions.execution.processes import command_line

    assert command_line([sys.executable, "-c", "pass"]) == f"{Path(sys.executable).name} -c pass"
    assert command_line(["a\nb\tc", "1"]) == "a b c 1"
    assert command_line(["/", "1"]) == "/ 1"
    assert command_line(["/tmp/dir/", "x"]) == "dir x"
    assert command_line([]) == ""


def test_an_example_cannot_answer_for_another_pages_examples(server):
    # helper-97's takeover: an example read its request's id from the serving loop's frame and
    # answered every later request, of every page, with what the page wanted. Each page now has
    # a process of its own, forked from one that runs no example.
    takeover = ("import json, sys\n"
                "def answer_the_rest():\n"
                "    frame = sys._getframe()\n"
                "    while 'stream' not in frame.f_locals: frame = frame.f_back\n"
                "    stream = frame.f_locals['stream']\n"
                "    own = {'id': frame.f_locals['request']['id'], 'printed': '', 'exception': None}\n"
                "    stream.write(json.dumps(own).encode() + b'\\n')\n"
                "    stream.flush()\n"
                "    for line in stream:\n"
                "        request = json.loads(line)\n"
                "        stream.write(json.dumps({'id': request['id'], 'printed': '3\\n', 'exception': None}).encode() + b'\\n')\n"
                "        stream.flush()\n")
    takeover = f"exec({takeover!r})"
    with server.page() as page:
        assert page.run(0, takeover, "<x>", 30)["exception"] is None
        assert page.run(0, "answer_the_rest()", "<x>", 30)["printed"] == ""  # it answered for itself
        assert page.run(0, "1 + 1", "<x>", 30)["printed"] == "3\n"  # examples of one page share a process
    with server.page() as other:
        assert other.run(0, "1 + 1", "<x>", 30)["printed"] == "2\n"


def test_a_doctest_build_passes_only_with_its_summary_and_no_failure(tmp_path):
    summary = "Doctest summary\n===============\n    7 tests in 1 pages\n{} failures\n"
    assert unfinished_doctests(tmp_path).startswith("the doctests' output ")
    (tmp_path / "output.txt").write_text("", encoding="utf8")
    assert unfinished_doctests(tmp_path) == \
        "the doctests ended before their summary: the doctest build's process stopped early"
    (tmp_path / "output.txt").write_text(summary.format("    0"), encoding="utf8")
    assert unfinished_doctests(tmp_path) is None
    # Failures that a warnings setting let through (suppress_warnings) still fail.
    (tmp_path / "output.txt").write_text(summary.format("    2"), encoding="utf8")
    assert unfinished_doctests(tmp_path).startswith("2 doctests failed (")
    (tmp_path / "output.txt").write_text(summary.format("    0") + json.dumps("late"), encoding="utf8")
    assert unfinished_doctests(tmp_path).startswith("the doctests ended before their summary")


def test_a_server_that_cannot_start_is_one_line_naming_its_log(tmp_path):
    broken = ExamplesServer(tmp_path / "examples", lambda scratch: {"PYTHONHOME": str(tmp_path / "none")}, ["/dev"])
    try:
        with broken.page() as page:
            why = page.run(0, "1", "<x>", 30)
    finally:
        broken.stop()
    assert why.startswith(f"the examples' process did not start; its log {tmp_path / 'examples' / 'examples.log'} ends: ")
