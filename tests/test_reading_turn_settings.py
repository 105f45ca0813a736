"""The reading turn reaches Sphinx as two settings (book_reading_turn_fd, book_reading_after:
commands/reading_turn.py's ReadingTurn passes them with -D), whose values change from build to build:
a changed value must never make Sphinx read or write a page again."""

from __future__ import annotations

import json
import os
from dataclasses import fields

import pytest
from books import FIXTURES, in_process_settings, in_process_sources

from book_extensions.commands.reading_turn import ReadingTurn
from book_extensions.configuration.settings import BookConfig
from book_extensions.execution.page_execution import EXECUTIONS_FILE


@pytest.mark.unit
def test_the_turn_is_told_in_declared_settings_that_rebuild_nothing(tmp_path):
    turn = ReadingTurn(tmp_path / "zh.lock", tmp_path / "en.lock")
    try:
        declared = {f.name: f.metadata["rebuild"] for f in fields(BookConfig)}
        assert {name: declared.get(name) for name in turn.settings()} == {
            "book_reading_turn_fd": "", "book_reading_after": ""}
        assert turn.overrides() == ["-D", f"book_reading_turn_fd={turn.fd}", "-D", f"book_reading_after={tmp_path / 'en.lock'}"]
    finally:
        turn.give_up()
    assert turn.settings() == {"book_reading_turn_fd": "", "book_reading_after": str(tmp_path / "en.lock")}


@pytest.mark.fixture  # builds a fixture book, with sphinx.testing's app of its own
def test_a_changed_turn_reads_and_writes_no_page_again(make_app, tmp_path):
    srcdir = in_process_sources(FIXTURES / "in_process" / "docs", tmp_path / "book") / "en"
    builddir = tmp_path / "book" / "_build" / "en"

    def build(turn: int) -> tuple[list[str], list[str]]:
        """Built as language ``turn`` of a build at once: its own lock and the one before it."""
        held = os.open(tmp_path / f"turn-{turn}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        settings = {**in_process_settings("en", tmp_path / "cache"),
                    "book_reading_turn_fd": str(held), "book_reading_after": str(tmp_path / f"turn-{turn - 1}.lock")}
        app = make_app("html", srcdir=srcdir, builddir=builddir, confoverrides=settings, warningiserror=True)
        before = {path: path.stat().st_mtime_ns for path in app.outdir.rglob("*.html")}
        app.build()
        app.cleanup()
        assert app.statuscode == 0, app.warning.getvalue()
        try:  # the turn ended with the reading: Sphinx closed the descriptor it was given
            os.fstat(held)
            raise AssertionError("the reading turn's descriptor is still open")
        except OSError:
            pass
        # The pages' HTML (Sphinx writes its index and search pages on every build).
        written = sorted(str(path.relative_to(app.outdir)) for path in app.outdir.rglob("*.html")
                         if before.get(path) != path.stat().st_mtime_ns
                         and path.name not in ("genindex.html", "search.html"))
        return json.loads((app.doctreedir / EXECUTIONS_FILE).read_text())["read"], written

    assert build(1)[0] == ["index"]
    assert build(2) == ([], [])  # nothing changed but the turn's settings
    page = srcdir / "index.md"
    page.write_text(page.read_text(encoding="utf8").replace("A page with", "An edited page with"), encoding="utf8")
    read, written = build(3)
    assert (read, written) == (["index"], ["index.html"])
