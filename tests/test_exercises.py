"""Exercises (book_extensions/site/exercises.py): each answer is checked against torch's real
output at every build, and the languages declare the same answers."""


import subprocess
import sys
import zipfile

import pytest
from books import FIXTURES, ROOT, warnings_of
from pypdf import PdfReader

from book_extensions.checks import exercise_answers, parity
from book_extensions.checks.exercise_answers import DeclarationError, declaration, supported, verdict

OPTIONS = {"id": "detach-shares", "misconception": "detach-copies", "answer": "B",
           "A": r"prints ^tensor\(\[1\., 2\.\]", "B": r"prints ^tensor\(\[0\., 2\.\]",
           "C": "raises RuntimeError"}


def printed(text: str) -> list[dict]:
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def raised(name: str, message: str) -> list[dict]:
    return [{"output_type": "error", "ename": name, "evalue": message, "traceback": []}]


@pytest.mark.unit
def test_exactly_the_declared_choice_must_fit_the_output():
    declared = declaration(OPTIONS)
    assert supported(declared, printed("tensor([0., 2.])\n")) == "B"
    assert verdict(declared, printed("tensor([0., 2.])\n")) is None
    assert verdict(declared, printed("tensor([1., 2.])\n")) == (
        "the output no longer supports the declared answer B (it supports A)")
    assert verdict(declared, printed("nothing like it\n")) == (
        "the output no longer supports the declared answer B (it supports none of the choices)")
    loose = declaration({**OPTIONS, "A": "prints tensor"})
    assert verdict(loose, printed("tensor([0., 2.])\n")) == (
        "the output supports A and B, not only the declared answer B: make the other choices' conditions exclude it")


@pytest.mark.unit
def test_each_kind_of_condition():
    declared = declaration({"id": "x", "misconception": "m", "answer": "A",
                            "A": "raises RuntimeError\nprints modified by an inplace", "B": "raises nothing",
                            "C": "raises ValueError", "D": "not-prints inplace"})
    assert supported(declared, raised("RuntimeError", "a tensor was modified by an inplace operation")) == "A"
    assert supported(declared, printed("fine\n")) == "BD"
    # What a cell returns (its result's text) and its warnings (stderr) are what it shows too.
    results = [{"output_type": "execute_result", "data": {"text/plain": "tensor(3.)"}},
               {"output_type": "stream", "name": "stderr", "text": "UserWarning: inplace\n"}]
    assert supported(declaration({"id": "y", "misconception": "m", "answer": "A", "A": "prints ^tensor\\(3\\.",
                                  "B": "not-prints inplace"}), results) == "A"


@pytest.mark.unit
@pytest.mark.parametrize(("change", "problem"), [
    ({"answer": "D"}, "answer 'D' is not one of its choices (A, B, C)"),
    ({"C": "shows tensor"}, "choice C: 'shows tensor' is not '<kind> <argument>'"),
    ({"C": "prints ([unclosed"}, "choice C: prints '([unclosed' is not a regular expression"),
    ({"C": "raises not an exception"}, "choice C: raises 'not an exception' is not an exception's name"),
    ({"id": "Detach Shares"}, "id 'Detach Shares' must be lower-case words joined by hyphens"),
    ({"D": "raises nothing", "C": None}, "choices must be A, B and up to C, D in order"),
    ({"hint": "x"}, "unknown option 'hint'"),
    ({"C": r"prints ^tensor\(\[0\.\]\)$"},
     r"choice C: prints '^tensor\\(\\[0\\.\\]\\)$' reads a tensor up to its closing parenthesis"),
    ({"C": r"not-prints tensor\(True\)"}, "which fails on CUDA (device='cuda:0' comes before it)"),
])
def test_a_malformed_declaration_is_one_line(change, problem):
    options = {key: value for key, value in {**OPTIONS, **change}.items() if value is not None}
    with pytest.raises(DeclarationError, match=None) as found:
        declaration(options)
    assert problem in str(found.value) and "\n" not in str(found.value)


@pytest.mark.unit
def test_a_tensor_read_to_its_parenthesis_allows_the_device():
    """The GPU job runs the same cells: a pattern that reads a tensor through its closing
    parenthesis must allow the device CUDA prints before it (the declaration refuses it otherwise)."""
    declared = declaration({"id": "x", "misconception": "m", "answer": "A",
                            "A": r"prints ^tensor\(\[0\., 0\.\](, device='[^']*')?, requires_grad=True\)$",
                            "B": r"prints ^tensor\(\[1\."})
    for shown in ("tensor([0., 0.], requires_grad=True)\n", "tensor([0., 0.], device='cuda:0', requires_grad=True)\n"):
        assert supported(declared, printed(shown)) == "A"


@pytest.mark.unit
def test_a_misconception_must_be_listed():
    with pytest.raises(DeclarationError, match="misconception 'detach-copies' is not in docs/exercises.toml"):
        declaration(OPTIONS, {"no-grad-no-graph": {}})


@pytest.mark.unit
def test_the_misconceptions_file_is_checked(tmp_path):
    path = tmp_path / "exercises.toml"
    path.write_text('[misconceptions.detach-copies]\nen = "detach() copies"\n', encoding="utf8")
    assert exercise_answers.misconceptions_problems(path, ["en", "zh"], "docs/exercises.toml") == [
        "docs/exercises.toml: misconception 'detach-copies' has no zh title"]
    path.write_text('[misconceptions.detach-copies]\nen = "a"\nzh = "b"\n', encoding="utf8")
    assert exercise_answers.misconceptions_problems(path, ["en", "zh"], "docs/exercises.toml") == []
    # A topic is a table of titles too, and a misconception names one that exists.
    path.write_text('[topics.t]\nen = "T"\nzh = "T"\n[misconceptions.detach-copies]\ntopic = "u"\nen = "a"\nzh = "b"\n',
                    encoding="utf8")
    assert exercise_answers.misconceptions_problems(path, ["en", "zh"], "docs/exercises.toml") == [
        "docs/exercises.toml: misconception 'detach-copies': its topic 'u' is not a [topics.<id>] table"]
    path.write_text('[topics.t]\nen = "T"\n[misconceptions.detach-copies]\ntopic = "t"\nen = "a"\nzh = "b"\n', encoding="utf8")
    assert exercise_answers.misconceptions_problems(path, ["en", "zh"], "docs/exercises.toml") == [
        "docs/exercises.toml: topic 't' has no zh title"]
    # The book's own file is right.
    assert exercise_answers.misconceptions_problems(ROOT / "docs" / "exercises.toml", ["en", "zh"], "x") == []


@pytest.mark.unit
def test_options_are_read_from_the_source_as_myst_reads_them():
    content = "---\nid: a\nanswer: B\nB: |\n  raises nothing\n  prints x\n---\nThe question.\n"
    assert exercise_answers.source_options(content) == {"id": "a", "answer": "B", "B": "raises nothing\nprints x"}
    assert exercise_answers.source_options(":id: a\n:answer: A\nText\n") == {"id": "a", "answer": "A"}


@pytest.mark.unit
def test_parity_compares_the_exercises_options(tmp_path):
    docs = tmp_path / "docs"
    for language in ("en", "zh"):
        (docs / language).mkdir(parents=True)
        source = (FIXTURES / "exercises" / "docs" / language / "index.md").read_text(encoding="utf8")
        (docs / language / "index.md").write_text(source, encoding="utf8")
    assert parity.compare(docs, "zh", "en") == []
    zh = docs / "zh" / "index.md"
    zh.write_text(zh.read_text(encoding="utf8").replace("answer: B", "answer: C"), encoding="utf8")
    [(page, problem)] = parity.compare(docs, "zh", "en")
    assert page == "docs/zh/index.md"
    assert problem.startswith("exercise 1 ('detach-shares') has answer: 'C', en/index.md's 'B'")
    zh.write_text(zh.read_text(encoding="utf8").replace("answer: C", "answer: B")
                  .replace(r"B: prints ^tensor\(\[0\., 2\.\](, device='[^']*')?\)$", "B: prints tensor"), encoding="utf8")
    [(_, problem)] = parity.compare(docs, "zh", "en")
    assert problem.startswith("exercise 1 ('detach-shares') has B: 'prints tensor'")


def exercise_warnings(output: str) -> list[str]:
    return [line for line in warnings_of(output) if "[book.exercise]" in line]


@pytest.mark.fixture
def test_an_answer_the_output_contradicts_fails_the_build_in_one_line(build_fixture):
    build = build_fixture("exercises_wrong_answer", "html", "--language", "en")
    assert build.returncode != 0
    assert exercise_warnings(build.output) == [
        f"{FIXTURES / 'exercises_wrong_answer' / 'docs' / 'en' / 'index.md'}:12: WARNING: exercise "
        "'detach-copies-wrongly' (code cell 1): the output no longer supports the declared answer A (it supports B) "
        "[book.exercise]"]


@pytest.mark.fixture
def test_an_output_that_fits_two_choices_fails_the_build_in_one_line(build_fixture):
    build = build_fixture("exercises_two_choices", "html", "--language", "en")
    assert build.returncode != 0
    [line] = exercise_warnings(build.output)
    assert line.endswith("en/index.md:12: WARNING: exercise 'both-fit' (code cell 1): the output supports A and B, "
                         "not only the declared answer B: make the other choices' conditions exclude it [book.exercise]")


@pytest.mark.fixture
def test_good_exercises_build_in_both_languages_and_offline(build_fixture):
    build = build_fixture("exercises", "html")
    assert build.returncode == 0, build.output
    page = (build.site() / "en" / "index.html").read_text(encoding="utf8")
    # The cell's code is in the exercise, its output only in the closed answer, under the version.
    exercise = page[page.index('id="exercise-detach-shares"'):page.index('id="exercise-saved-tensor-changed"')]
    # Out of the search (practice, not an answer to a query; its answer is hidden until checked).
    assert '<div class="book-exercise no-search" id="exercise-detach-shares"' in page
    question, answer = exercise.split('<details class="book-exercise-answer">')
    # (highlighted: the operator keeps its span; names and punctuation draw nothing of their own)
    assert 'a<span class="o">.</span>detach' in question
    assert "tensor([0., 2.])\n</pre>" not in question and "tensor([0., 2.])\n</pre>" in answer
    assert '<input type="radio" name="exercise-detach-shares" value="C">' in question
    assert "<summary>What torch " in answer and "<strong>The answer is B: </strong>" in answer
    zh = (build.site() / "zh" / "index.html").read_text(encoding="utf8")
    assert "<summary>torch " in zh and "的实际结果及原因</summary>" in zh and "<legend>你的预测</legend>" in zh
    index = (build.site() / "zh" / "all-exercises.html").read_text(encoding="utf8")
    # Each heading says the belief is a myth; each question is there whole, its code as code.
    # By topic (its title, a heading in the page's contents), then by misconception; one without
    # a topic first, under no heading.
    loose = index.index('id="misconception-no-error"')
    topic = index.index('<section class="no-search book-exercise-topic" id="topic-detach">\n<h2>分离<')
    assert loose < topic < index.index('<div class="no-search book-misconception docutils container" id="misconception-detach-copies">\n'
                                       '<p class="book-misconception-title">误解：“detach() 会复制数据')
    assert 'href="index.html#exercise-detach-shares"' in index
    english = (build.site() / "en" / "all-exercises.html").read_text(encoding="utf8")
    assert '<p class="book-misconception-title">Myth: “' in english
    assert "<code" in english[english.index('href="index.html#exercise-detach-shares"'):]
    offline = build_fixture("exercises", "singlehtml", "--language", "en")
    assert offline.returncode == 0, offline.output
    book = (offline.out / "cpu" / "singlehtml" / "en" / "index.html").read_text(encoding="utf8")
    assert "book-exercise-form" not in book and '<ol class="book-exercise-choices" type="A">' in book
    answers = book.index("Answers to the exercises")
    assert book.index('id="answer-detach-shares"') > answers > book.index('id="exercise-detach-shares"')
    assert answers < book.index('id="document-all-exercises"')  # the root's answers come before the next chapter
    assert 'href="#exercise-detach-shares"' in book[book.index('id="document-all-exercises"'):]


@pytest.mark.fixture
def test_the_epub_and_the_pdf_carry_the_answers(build_fixture):
    """The offline editions, made as `nox -s pdf epub` makes them: the choices a lettered list,
    no form, and the answers (with torch's output) at the end of the chapter."""
    build = build_fixture("exercises", "html", "--language", "en")
    assert build.returncode == 0, build.output
    for kind in ("epub", "pdf"):
        run = subprocess.run([sys.executable, "-m", "book_extensions", "editions", kind, "--language", "en",
                              "--docs", str(FIXTURES / "exercises" / "docs"), "--out", str(build.out),
                              "--cache-root", str(build.cache)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
    offline = build.out / "cpu" / "offline" / "en"
    with zipfile.ZipFile(offline / "cutting-the-graph-en.epub") as epub:
        text = " ".join(epub.read(name).decode("utf8") for name in epub.namelist() if name.endswith(".xhtml"))
    assert "book-exercise-form" not in text and 'type="A"' in text
    assert text.index('id="exercise-detach-shares"') < text.index("Answers to the exercises") < text.index('id="answer-detach-shares"')
    words = " ".join(page.extract_text() for page in PdfReader(offline / "cutting-the-graph-en.pdf").pages)
    answers = words.index("Answers to the exercises")
    assert "tensor([0., 2.])" in words[answers:], words[answers:answers + 400]
