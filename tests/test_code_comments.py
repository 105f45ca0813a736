"""Code cells comment their code in the page's language, and one execution still serves every
language: comments and docstrings apart from the code (book_extensions/execution/code_comments.py), parity
of the example programs' twins, the CJK edition's comments in its language, no output that shows
the prose, determinism across languages, records that a comment does not make stale."""

import subprocess
import sys
from pathlib import Path

import pytest
from books import FIXTURES

from book_extensions.checks import parity
from book_extensions.execution import code_comments
from book_extensions.execution.code_comments import code_of, english_lines, is_english, prose_in, split
from book_extensions.records import cell_records

# --- split: the code, and the prose ----------------------------------------------------------


def test_comments_are_prose_and_leave_the_code():
    cell = split("# Set x.\nx = 1  # one\n\n    \ny = x  #\n")
    assert cell.code == "x = 1\ny = x"
    assert cell.prose == ((1, "Set x."), (2, "one"))


def test_docstrings_of_a_module_a_class_and_a_function_are_prose():
    source = ('"""The module.\n\nSecond paragraph."""\nimport math\n\n\nclass A:\n    """A class."""\n\n'
              '    def f(self):\n        """A method."""\n        return math.pi\n\n\nasync def g():\n'
              '    """A coroutine."""\n')
    cell = split(source)
    assert cell.code == "import math\nclass A:\n    def f(self):\n        return math.pi\nasync def g():"
    assert cell.docstrings == ((1, "The module."), (3, "Second paragraph."), (8, "A class."), (11, "A method."),
                               (16, "A coroutine."))


def test_a_docstring_that_shares_its_line_with_code_stays_code():
    cell = split('def f(): "Return one."; return 1\n')
    assert cell.code == 'def f(): "Return one."; return 1' and cell.prose == ()
    # Nor is it prose to translate: translating it would change the code.
    assert english_lines('def f(): "Return one and more."; return 1\n') == []


def test_a_string_that_a_cell_shows_is_code_not_a_docstring():
    # IPython shows a cell's last expression: this string is the cell's output.
    assert split('"shown as the output"').code == '"shown as the output"'
    assert split('"""A docstring."""\nx = 1').code == "x = 1"


def test_what_a_string_holds_is_code():
    source = 'text = """first\n\n  # not a comment   \n"""  # a comment\nprint("# not one either")  # one\n'
    cell = split(source)
    assert cell.code == 'text = """first\n\n  # not a comment   \n"""\nprint("# not one either")'
    assert cell.comments == ((4, "a comment"), (5, "one"))
    # A blank line inside a string changes what the program prints: another code.
    assert code_of('print("""a\n\nb""")') != code_of('print("""a\nb""")')


def test_a_cell_python_cannot_read_keeps_its_whole_source():
    source = "%timeit x = 1  # IPython syntax\n"
    assert split(source).code == source and split(source).prose == ()
    assert split("x = (  # unclosed\n").code == "x = (  # unclosed\n"


def test_the_code_is_the_same_whatever_the_comments_say():
    en = 'def f(x):\n    """Double it."""\n    return 2 * x  # twice\n\n# the call\nf(1)\n'
    zh = 'def f(x):\n    """把它翻倍。\n\n    返回两倍。\n    """\n    return 2 * x  # 两倍\nf(1)  # 调用\n'
    assert code_of(en) == code_of(zh) == "def f(x):\n    return 2 * x\nf(1)"


# --- comments still in English -----------------------------------------------------------------


@pytest.mark.parametrize("text, english", [
    ("the gradient of x", True),
    ("x.grad is None here", True),
    ("Return twice the value.", True),
    ("把 x 设为 1（the first value）", False),  # a Han character: Chinese, with an English term
    ("noqa: E501", False),
    ("type: ignore[attr-defined]", False),
    ("doctest: +SKIP", False),
    ("pragma: no cover", False),
    ("tensor([1., 2.])", False),
    ("-> tensor([2., 4.], grad_fn=<MulBackward0>)", False),
    ("https://pytorch.org/docs/stable/autograd.html", False),
    ("`x.detach()` `y.data`", False),
    ("see", False),
    ("x", False),
    ("!/usr/bin/env python", False),
    ("-*- coding: utf-8 -*-", False),
])
def test_english_comments_are_told_apart(text, english):
    assert is_english(text) is english


def test_english_lines_of_a_cell_are_numbered():
    source = '"""Prints the sum."""\nimport torch\n# 求和\nprint(torch.ones(2).sum())  # prints tensor(2.)\nx = 1  # one more line\n'
    assert english_lines(source) == [(1, "Prints the sum."), (5, "one more line")]  # "prints tensor(2.)": one word


# --- outputs that show the prose ---------------------------------------------------------------


def test_an_output_that_shows_a_comment_or_a_docstring_is_found():
    source = 'def f():\n    """Return one, always."""\n    return 1  # one, as a constant\nx = 2  # x\n'
    assert prose_in("Return one, always.\n", [source]) == "Return one, always."
    assert prose_in("    return 1  # one, as a constant\n", [source]) == "one, as a constant"
    assert prose_in("\x1b[32m# one, as a constant\x1b[0m", [source]) == "one, as a constant"
    # Too short to tell from chance: "# x"; and a comment's words without its "#" are not its source.
    assert prose_in("x = 2  # x\nthe value is one, as a constant", [source]) is None
    # A Han character counts two columns: four of them are enough.
    assert prose_in("y = 0  # 反向传播", ["y = 0  # 反向传播\n"]) == "反向传播"


# --- records: digests of the code --------------------------------------------------------------


def test_a_records_digest_does_not_change_with_a_comment(tmp_path):
    docs = tmp_path / "docs"
    (docs / "en").mkdir(parents=True)
    page = docs / "en" / "index.md"
    front = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n# T\n\n"
    page.write_text(front + "```{code-cell} ipython3\n# The sum.\nprint(1 + 1)\n```\n")
    record = {"torch": "2.0.0", "pages": {"index": [{"source": cell_records.current_digests(docs, "en")["index"][0],
                                                     "outputs": ["2\n"]}]}}
    page.write_text(front + "```{code-cell} ipython3\n# Now the sum of one and one.\nprint(1 + 1)  # two\n```\n")
    assert cell_records.compare(record, record, cell_records.current_digests(docs, "en")) == []
    page.write_text(front + "```{code-cell} ipython3\nprint(1 + 2)\n```\n")
    assert [d.kind for d in cell_records.compare(record, record, cell_records.current_digests(docs, "en"))] == ["stale"]


# --- parity: the example programs' twins -------------------------------------------------------

FRONT = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"


def twin_book(tmp_path: Path, zh_load: str = "../../examples/zh/prog.py", twin: str | None = "# 一个程序\nprint(1)\n",
              zh_download: str = "../../examples/zh/prog.py") -> Path:
    docs = tmp_path / "docs"
    for lang, load, download in (("en", "../../examples/prog.py", "../../examples/prog.py"),
                                 ("zh", zh_load, zh_download)):
        (docs / lang).mkdir(parents=True, exist_ok=True)
        (docs / lang / "index.md").write_text(
            f"{FRONT}(t)=\n# T\n\nA program ({{download}}`prog.py <{download}>`).\n\n"
            f"```{{code-cell}} ipython3\n---\nload: {load}\n---\n```\n", encoding="utf8")
    (tmp_path / "examples" / "zh").mkdir(parents=True, exist_ok=True)
    (tmp_path / "examples" / "prog.py").write_text("# A program.\nprint(1)\n")
    if twin is not None:
        (tmp_path / "examples" / "zh" / "prog.py").write_text(twin, encoding="utf8")
    return docs


def test_a_twin_with_the_same_code_passes_parity(tmp_path):
    assert parity.compare(twin_book(tmp_path), "zh", "en") == []


def test_a_missing_twin_fails_parity(tmp_path):
    problems = parity.compare(twin_book(tmp_path, twin=None), "zh", "en")
    assert ("examples/zh/prog.py", "is missing: examples/prog.py needs a zh twin, the same code with its "
                                   "comments and docstrings in zh") in problems
    assert problems[0][0] == "docs/zh/index.md" and "cannot be read" in problems[0][1]  # the page loads it


def test_a_twin_whose_code_differs_fails_parity(tmp_path):
    assert parity.compare(twin_book(tmp_path, twin="# 一个程序\nprint(2)\n"), "zh", "en") == [
        ("docs/zh/index.md", "code cell 1's code (comments and docstrings aside) differs from en/index.md's: "
                             "'print(2)' here, 'print(1)' there"),
        ("examples/zh/prog.py", "its code (comments and docstrings aside) differs from examples/prog.py's: "
                                "'print(2)' here, 'print(1)' there")]


def test_a_twin_without_its_program_fails_parity(tmp_path):
    docs = twin_book(tmp_path)
    (tmp_path / "examples" / "zh" / "extra.py").write_text("print(3)\n")
    assert parity.compare(docs, "zh", "en") == [("examples/zh/extra.py", "has no examples/extra.py to be the zh twin of")]


def test_a_zh_page_that_shows_the_english_program_fails_parity(tmp_path):
    docs = twin_book(tmp_path, zh_load="../../examples/prog.py", zh_download="../../examples/prog.py")
    assert parity.compare(docs, "zh", "en") == [
        ("docs/zh/index.md", "line 10 names ../../examples/prog.py: a zh page shows ../../examples/zh/prog.py, "
                             "the program with its comments and docstrings in zh"),
        ("docs/zh/index.md", "line 14 names ../../examples/prog.py: a zh page shows ../../examples/zh/prog.py, "
                             "the program with its comments and docstrings in zh")]


def test_a_zh_page_that_loads_another_program_fails_parity(tmp_path):
    docs = twin_book(tmp_path)
    (tmp_path / "examples" / "other.py").write_text("print(1)\n")
    (tmp_path / "examples" / "zh" / "other.py").write_text("print(1)\n")
    page = docs / "zh" / "index.md"
    page.write_text(page.read_text(encoding="utf8").replace("load: ../../examples/zh/prog.py",
                                                            "load: ../../examples/zh/other.py"), encoding="utf8")
    assert parity.compare(docs, "zh", "en") == [
        ("docs/zh/index.md", "code cell 1 loads other.py, en/index.md's prog.py")]


def test_a_zh_page_that_shows_a_part_of_the_english_program_fails_parity(tmp_path):
    docs = twin_book(tmp_path)
    page = docs / "zh" / "index.md"
    page.write_text(page.read_text(encoding="utf8") + "\n```{literalinclude} ../../examples/prog.py\n:lines: 2\n```\n",
                    encoding="utf8")
    assert parity.compare(docs, "zh", "en") == [
        ("docs/zh/index.md", "line 18 names ../../examples/prog.py: a zh page shows ../../examples/zh/prog.py, "
                             "the program with its comments and docstrings in zh")]


# --- the build: gates on fixture books ---------------------------------------------------------


def warnings_of(output: str, subtype: str) -> list[str]:
    return [line for line in output.splitlines() if "WARNING" in line and f"[book.{subtype}]" in line]


def test_a_zh_comment_or_docstring_in_english_fails_the_zh_build(build_fixture):
    build = build_fixture("code_comments_english", "html", "--language", "zh")
    assert build.returncode != 0
    found = warnings_of(build.output, "code_comment_language")
    assert len(found) == 2, found  # not the pragma, the printed tensor, nor the one with a URL
    assert "zh/index.md:12: WARNING: code cell 1: a comment or docstring in English ('the first value'); " \
           "this edition's readers read its code too: write it in 简体中文" in found[0]
    assert "zh/index.md:19: WARNING: code cell 2, line 1 of ../../examples/zh/program.py: a comment or " \
           "docstring in English ('Prints a tensor and its sum.')" in found[1]
    # The English edition comments in English.
    english = build_fixture("code_comments_english", "html", "--language", "en")
    assert english.returncode == 0, english.output


def test_an_output_that_shows_a_comment_or_docstring_fails_the_build(build_fixture):
    build = build_fixture("code_comments_leak", "html", "--language", "en")
    assert build.returncode != 0
    found = warnings_of(build.output, "code_comment_output")
    assert len(found) == 2, found  # not cell 3, whose "# x" is too short to tell from chance
    assert "en/index.md:10: WARNING: code cell 1 shows a comment or docstring of the page in its output " \
           "('Return twice the value of x.')" in found[0]
    assert "en/index.md:19: WARNING: code cell 2 shows a comment or docstring of the page in its output " \
           "('one, as a constant')" in found[1]


def test_an_output_that_depends_on_the_comments_is_found_by_determinism(build_fixture):
    # The cache holds the English page's execution; the Chinese page, served from it, would
    # show the English line number: executing the Chinese page finds it.
    build = build_fixture("code_comments_lines", "html", "--language", "en")
    assert build.returncode == 0, build.output
    check = subprocess.run([sys.executable, "-m", "book_extensions", "determinism", "--docs",
                            str(FIXTURES / "code_comments_lines" / "docs"), "--cache-root", str(build.cache)],
                           capture_output=True, text=True, timeout=600, cwd=FIXTURES.parent.parent)
    assert check.returncode == 1, check.stdout + check.stderr
    (line,) = check.stderr.splitlines()
    assert line == ("error: tests/fixtures/code_comments_lines/docs/en/index.md and "
                    "tests/fixtures/code_comments_lines/docs/zh/index.md: code cell 2 printed differently in two "
                    "executions, one of each page: 'this is line 3\\n' then 'this is line 5\\n'; print nothing that the "
                    "comments change (a line number, a docstring), and seed it, sort it, or print less")
    assert "2 code cells executed twice: 1 printed differently" in check.stdout


def test_a_page_and_its_twin_loading_page_share_one_execution(tmp_path):
    # Each language loads its own twin of a program: the cache keys both on the same code.
    from jupyter_cache.cache.main import JupyterCacheBase
    from myst_nb.core.read import read_myst_markdown_notebook

    from book_extensions.execution.runner import keyed

    cache = JupyterCacheBase(str(tmp_path / "cache"))

    def key(docs: Path, lang: str) -> str:
        page = docs / lang / "index.md"
        notebook = read_myst_markdown_notebook(page.read_text(encoding="utf8"), path=str(page))
        return cache.create_hashed_notebook(keyed(notebook))[1]

    docs = twin_book(tmp_path / "same")
    assert key(docs, "en") == key(docs, "zh")
    # The page's code is keyed (kernel_inputs.py): a twin whose code differs gets its own execution.
    docs = twin_book(tmp_path / "differs", twin="# 一个程序\nprint(2)\n")
    assert key(docs, "en") != key(docs, "zh")


@pytest.mark.unit
def test_code_that_reads_its_own_prose_is_found_however_it_prints_it():
    # One execution serves every language: len(f.__doc__) or .upper() shows the first
    # language's docstring in a form no output check recognises (attack case 17).
    source = ('def f():\n    """Adds one."""\n    return 1\n\nprint(len(f.__doc__), f.__doc__.upper())\n'
              'import inspect\nsrc = inspect.getsource(f)\nhelp(f)\n')
    assert code_comments.prose_readers(source) == [(5, "__doc__"), (7, "getsource"), (8, "help")]
    assert code_comments.prose_readers("x = {'help': 1}\nprint(x['help'])\n") == []  # a string is not a reader
    assert code_comments.prose_readers("%time x = 1\n") == []  # IPython syntax: its whole source is its code
