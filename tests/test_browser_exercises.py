"""Exercises in the browser (book_extensions/site/exercises.py), at 375 and 1280 px, in both
languages: the answer stays hidden until a choice is checked, the feedback says right or wrong,
the whole exercise works from the keyboard, the choice survives a reload until "Try again", and
axe finds nothing on a page whose answers are shown."""

from __future__ import annotations

import pytest
from browsing import visit
from sweep import AXE_VIOLATIONS, axe_source

pytestmark = pytest.mark.browser

CASES = [(language, width) for language in ("en", "zh") for width in (375, 1280)]
EXERCISE = "#exercise-detach-shares-storage"  # docs/*/detach.md: the answer is B
FEEDBACK = {"en": ("Right: B.", "Not quite: you chose A, the answer is B."),
            "zh": ("答对了：B。", "答错了：你选的是 A，正确答案是 B。")}


def open_exercise(page, language: str, width: int):
    page.set_viewport_size({"width": width, "height": 800})
    visit(page, f"/{language}/detach.html")
    exercise = page.locator(EXERCISE)
    exercise.scroll_into_view_if_needed()
    return exercise


@pytest.mark.parametrize(("language", "width"), CASES)
def test_the_answer_is_hidden_until_a_choice_is_checked(page, language, width):
    exercise = open_exercise(page, language, width)
    answer = exercise.locator("details.book-exercise-answer")
    assert not answer.is_visible()
    exercise.locator(".book-exercise-check").click()  # nothing chosen: a hint, no answer
    assert exercise.locator(".book-exercise-feedback").inner_text() != "" and not answer.is_visible()
    exercise.locator("input[value=A]").check()
    assert not answer.is_visible()  # choosing is not checking
    exercise.locator(".book-exercise-check").click()
    assert exercise.locator(".book-exercise-feedback").inner_text() == FEEDBACK[language][1]
    assert answer.is_visible() and answer.get_attribute("open") is not None
    assert "tensor([10.,  2.,  3.], requires_grad=True)" in answer.inner_text()
    # The prediction stands until "Try again": no switching to the answer just shown.
    assert exercise.locator("input[value=B]").is_disabled() and exercise.locator(".book-exercise-check").is_disabled()
    assert not exercise.locator(".book-exercise-check").is_visible()  # "Try again" in its place
    # The choices' texts stay aligned when one gets its ✓ or ✗.
    starts = exercise.locator("label.book-exercise-choice > span:last-child").evaluate_all(
        "spans => spans.map(s => Math.round(s.getBoundingClientRect().left))")
    assert len(set(starts)) == 1, starts
    # On a phone the code wraps: its last line is read without scrolling sideways.
    code = exercise.locator(".cell_input pre")
    assert code.evaluate("pre => pre.scrollWidth <= pre.clientWidth + 1") or width > 640
    # Nothing of the exercise is wider than the page.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    box = exercise.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    assert page.problems == []


@pytest.mark.parametrize(("language", "width"), CASES)
def test_the_right_choice_is_kept_until_try_again(page, language, width):
    exercise = open_exercise(page, language, width)
    exercise.locator("input[value=B]").check()
    exercise.locator(".book-exercise-check").click()
    assert exercise.locator(".book-exercise-feedback").inner_text() == FEEDBACK[language][0]
    visit(page, f"/{language}/detach.html")
    exercise = page.locator(EXERCISE)
    assert exercise.locator("input[value=B]").is_checked()
    assert exercise.locator("details.book-exercise-answer").is_visible()
    exercise.locator(".book-exercise-reset").click()
    assert not exercise.locator("details.book-exercise-answer").is_visible()
    assert exercise.locator("input[value=A]").is_enabled()  # a new prediction
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('book-exercise:'))") == []
    assert page.problems == []


@pytest.mark.parametrize("language", ("en", "zh"))
def test_an_exercise_works_from_the_keyboard_and_axe_finds_nothing(page, language):
    exercise = open_exercise(page, language, 1280)
    exercise.locator("input[value=A]").focus()
    page.keyboard.press("ArrowDown")  # moves to B and selects it: no answer yet
    assert exercise.locator("input[value=B]").is_checked()
    assert not exercise.locator("details.book-exercise-answer").is_visible()
    page.keyboard.press("Tab")  # to "Check"
    assert page.evaluate("document.activeElement.className") == "book-exercise-check"
    page.keyboard.press("Enter")
    assert exercise.locator(".book-exercise-feedback").inner_text() == FEEDBACK[language][0]
    # "Check" is disabled now: the focus goes on from "Try again", not from the page's top.
    assert page.evaluate("document.activeElement.className") == "book-exercise-reset"
    summary = exercise.locator("details.book-exercise-answer > summary")
    summary.focus()
    page.keyboard.press("Enter")  # the reveal folds and unfolds from the keyboard
    assert exercise.locator("details.book-exercise-answer").get_attribute("open") is None
    page.keyboard.press("Enter")
    assert exercise.locator("details.book-exercise-answer").get_attribute("open") is not None
    page.evaluate(axe_source())
    # As the sweep holds every page (test_browser.py): nothing serious or critical. (The one
    # moderate finding, "region", is the theme's sidebar on every page, not an exercise.)
    assert [v for v in page.evaluate(AXE_VIOLATIONS) if v[1] in ("serious", "critical")] == []
    inside = page.evaluate("axe.run(document.querySelector('.book-exercise'), {resultTypes: ['violations']})"
                           ".then(r => r.violations.map(v => v.id))")
    assert inside == []
    assert page.problems == []


@pytest.mark.parametrize("language", ("en", "zh"))
def test_without_javascript_the_answer_is_a_closed_fold(browser, site, language):
    context = browser.new_context(base_url=site, java_script_enabled=False)
    page = context.new_page()
    visit(page, f"/{language}/detach.html")
    answer = page.locator(f"{EXERCISE} details.book-exercise-answer")
    assert answer.is_visible() and answer.get_attribute("open") is None
    answer.locator("summary").click()
    assert "requires_grad=True" in answer.inner_text()
    context.close()
