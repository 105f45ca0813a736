"""The extensions checked in the test's own process (sphinx.testing, as MyST-NB's tests do):
what they decide per Sphinx application, with no state shared between two applications of one
process, and the checks that do not need the build driver. The driver's own guarantees (sticky
failures, publishing, locks, signals) are tested through it: test_build_driver.py, test_gates.py."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from book_extensions import build_state
from book_extensions.configuration.messages import ENGLISH, message
from book_extensions.execution import page_execution, runner
from book_extensions.execution.page_execution import EXECUTIONS_FILE
from book_extensions.site import post_build

STEP_NAMES = [step.name for step in post_build.STEPS]


def names(builder: str, output_format: str, failed: bool = False) -> list[str]:
    return [step.name for step in post_build.steps_for(builder, output_format, failed)]


@pytest.mark.unit
def test_the_pipeline_chooses_the_steps_of_each_build():
    # The web site gets every step, in the declared order.
    assert names("html", "html") == STEP_NAMES
    # The offline editions' builders write HTML too: checked, but neither trimmed nor given the
    # editions.
    edition = ["page_execution.write_executions", "meta_and_footer.write_manifest",
               "remote_loads.check_build", "leaked_paths.check_build"]
    assert names("singlehtml", "html") == names("epub", "html") == edition
    # Any other builder, and a failed build of any builder: only the record of what was read.
    for builder, output_format in (("doctest", ""), ("dummy", ""), ("latex", "latex"), ("html", "html"), ("epub", "html")):
        assert names(builder, output_format, failed=True) == ["page_execution.write_executions"]
    assert names("doctest", "") == ["page_execution.write_executions"]


@pytest.mark.unit
def test_messages_answer_in_the_language_of_the_configuration_they_are_given():
    english, chinese = SimpleNamespace(language="en"), SimpleNamespace(language="zh_CN")
    # Asked in turn, neither language sticks: nothing remembers the last one.
    for _ in range(2):
        assert message(english, "not_found") == ENGLISH["not_found"] == message(None, "not_found")
        assert message(chinese, "not_found") != ENGLISH["not_found"]
        assert message(chinese, "full_stop") == "。"
    # A language without a catalog of the book's strings reads English.
    assert message(SimpleNamespace(language="fr"), "not_found") == ENGLISH["not_found"]


def page_text(app, page: str = "index") -> str:
    return (app.outdir / f"{page}.html").read_text(encoding="utf8")


def test_two_applications_in_one_process_keep_their_own_state(sphinx_book, tmp_path, monkeypatch):
    import tempfile

    import myst_nb.sphinx_

    # Nothing a build stages for its kernels goes to the temporary folder, where it would stay
    # behind: pytest-xdist's workers end without running atexit.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    # Both made (their extensions set up, their settings read) before either builds: what the
    # second's setup chose must not be what the first builds with. Their cache is their own:
    # in the session's, another test may have executed the page already.
    en = sphinx_book("in_process", "en", run=False, cache=tmp_path / "cache")
    zh = sphinx_book("in_process", "zh", run=False, cache=tmp_path / "cache")
    en.build()
    zh.build()
    # Each application's interface strings are in its own language, the first's after the second ran.
    assert "Outputs on this page were produced by torch" in page_text(en)
    assert "本页输出是在 CPU 上用 torch" in page_text(zh) and "Outputs on this page" not in page_text(zh)
    assert message(en.config, "full_stop") == "." and message(zh.config, "full_stop") == "。"
    # Each build has its own page executor: the first executed the page, the second took it
    # from the cache they share, and neither's notebooks went to the other.
    assert build_state.run(en).page_runner is not build_state.run(zh).page_runner
    assert [path.name for path in (tmp_path / "tmp").iterdir() if path.name != "jieba.cache"] == []
    for app in (en, zh):  # each stages the package its kernels import beside its own doctrees
        assert (app.doctreedir / page_execution.KERNEL_PACKAGE_FOLDER / "book_extensions" / "kernel" / "startup.py").is_file()
    for app, executed in ((en, ["index"]), (zh, [])):
        assert json.loads((app.doctreedir / EXECUTIONS_FILE).read_text())["executed"] == executed
        page_runner = build_state.run(app).page_runner
        assert page_runner.executions == {} and page_runner.executed_notebooks == {}
    # myst-nb's client is replaced once, and outside a book's page it is myst-nb's own.
    assert myst_nb.sphinx_.create_client.book_dispatch and runner.READING.get() is None
    # Nothing to warn about, but that docutils' registries are the process's: the second
    # application, made while the first was alive, found the nodes and directives registered.
    assert en.warning.getvalue() == "", en.warning.getvalue()
    assert all("already registered" in line for line in zh.warning.getvalue().splitlines()), zh.warning.getvalue()


def steps_that_ran(app) -> list[str]:
    """The steps the pipeline ran after the build, from the line it logs with -v."""
    lines = [line for line in app.status.getvalue().splitlines() if line.startswith("after the build: ")]
    assert len(lines) == 1, app.status.getvalue()
    return re.findall(r"(\S+) \d+\.\d\d s", lines[0])


def test_the_pipeline_runs_after_a_builder_only_what_concerns_it(sphinx_book):
    app = sphinx_book("in_process", "en", "dummy", verbosity=1)
    # The record of what was read is written after any builder; the site's steps do not run.
    assert steps_that_ran(app) == ["page_execution.write_executions"]
    assert json.loads((app.doctreedir / "book-executions.json").read_text())["read"] == ["index"]


def test_what_a_page_shows_of_another_is_written_again_on_every_page_that_shows_it(sphinx_book, tmp_path):
    """Attack 7, cases 5, 6, 7, 11, 16: Sphinx writes the pages it read again and their toctree
    parents; the other pages kept an old toctree caption, order or entry title in their
    sidebars and previous/next links, and an old caption or section title as a reference's text."""
    app = sphinx_book("shown_elsewhere", "en")
    pages = app.srcdir

    def edit(page: str, old: str, new: str) -> str:
        path = pages / f"{page}.md"
        text = path.read_text(encoding="utf8")
        assert old in text, (page, old)
        path.write_text(text.replace(old, new), encoding="utf8")
        return page_text(sphinx_book("shown_elsewhere", "en"), "third")

    first = page_text(app, "third")
    assert all(shown in first for shown in ("Part one", ">Gradients<", "Leaf check", "Second section"))
    assert "Part two" in edit("index", ":caption: Part one", ":caption: Part two")  # case 5
    assert 'rel="next" title="Leaves" href="second.html"' in edit("index", "second\nthird", "third\nsecond")  # case 11
    assert "Leafy things" in edit("index", "third\nsecond", "third\nLeafy things <second>")  # case 16
    assert "Leaf test" in edit("second", "Leaf check", "Leaf test")  # case 6
    moved = edit("second", "## First section\n\n(moving)=\n", "(moving)=\n## First section\n\n")  # case 7
    assert '<span class="std std-ref">First section</span>' in moved
    # Attack 8: a labelled rubric renamed (case 2), markup added to a title (case 7), a glossary
    # term renamed (case 1: the reference to it is broken, which the build says).
    assert "Remarks on leaves" in edit("second", "Notes on leaves", "Remarks on leaves")
    assert "<em>Leaves</em>" in edit("second", "# Leaves", "# *Leaves*")
    glossary = pages / "second.md"
    glossary.write_text(glossary.read_text(encoding="utf8").replace("Leaf tensor\n", "Leaf\n"), encoding="utf8")
    renamed = sphinx_book("shown_elsewhere", "en")
    assert renamed.statuscode == 1 and "term not in glossary: 'leaf tensor'" in renamed.warning.getvalue()
    glossary.write_text(glossary.read_text(encoding="utf8").replace("Leaf\n", "Leaf tensor\n"), encoding="utf8")
    assert sphinx_book("shown_elsewhere", "en").statuscode == 0
    # Nothing else changed: the next build reads and writes nothing.
    again = sphinx_book("shown_elsewhere", "en")
    assert json.loads((again.doctreedir / EXECUTIONS_FILE).read_text())["read"] == []


@pytest.mark.unit
def test_a_chinese_build_loads_its_segmenter_while_it_waits_and_no_other_does(monkeypatch):
    import threading

    from book_extensions.site import search

    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda thread: started.append(thread))
    search.warm_up_segmenter(SimpleNamespace(config=SimpleNamespace(language="en")))
    assert started == []
    search.warm_up_segmenter(SimpleNamespace(config=SimpleNamespace(language="zh_CN")))
    assert len(started) == 1 and started[0].daemon
