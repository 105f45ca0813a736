"""The set of real questions the book is measured against (tests/real_questions.toml):
enough of them, in both languages, each answer pointing at a section both languages have."""

from __future__ import annotations

import re
import tomllib

import pytest
from books import ROOT

pytestmark = pytest.mark.unit

QUESTIONS = tomllib.loads((ROOT / "tests" / "real_questions.toml").read_text(encoding="utf8"))["question"]


def labels(page: str) -> set[str]:
    return set(re.findall(r"^\(([\w-]+)\)=$", (ROOT / "docs" / page).read_text(encoding="utf8"), re.M))


def test_the_set_is_large_enough_and_asked_in_both_languages():
    assert len(QUESTIONS) >= 40
    assert sum(q["language"].startswith("zh") for q in QUESTIONS) >= 10
    assert len({q["url"] for q in QUESTIONS}) == len(QUESTIONS)  # each asked once


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q["url"].rsplit("/", 2)[-2] + "/" + q["url"].rsplit("/", 1)[-1])
def test_each_answer_points_at_a_section_of_both_languages(question):
    assert question["answered"] in ("full", "partly", "no")
    assert question["question"].strip() and question["search_words"].strip() and question["why"].strip()
    assert question["url"].startswith(("https://", "http://"))
    if question["answered"] != "no" or question["anchor"]:
        assert question["page_zh"] == question["page"].replace("en/", "zh/", 1)
        for page in (question["page"], question["page_zh"]):
            assert question["anchor"] in labels(page), (page, question["anchor"])
    # Other sections that answer it as well (page#label, the page's stem), and why the
    # search is known to miss it (tests/test_browser_search.py holds both to the site).
    for place in question.get("also", []):
        stem, _, anchor = place.partition("#")
        for language in ("en", "zh"):
            assert anchor in labels(f"{language}/{stem}.md"), (language, place)
    assert question.get("search_misses", "x").strip()
    assert not ("search_misses" in question and question["answered"] == "no")
