"""Reading MyST source: fences of any length, nested fences, and the blocks inside them
(book_extensions/myst_source.py, and the checks and tools that read pages through it)."""

import re

from books import PACKAGE

from book_extensions.checks.prose import literal_versions, reader_lines
from book_extensions.checks.typography import cjk_line_breaks
from book_extensions.myst_source import HAN, blocks, code_cells

NESTED = """# 标题

````md
```{code-cell} ipython3
print('中
文')
```
````

第一行，
第二行。
"""


def test_code_in_a_nested_fence_is_not_prose():
    # A four-backtick fence shows a code cell's source; its three-backtick lines neither open
    # nor close anything, so the line break inside its code is code, not prose.
    assert cjk_line_breaks(NESTED) == [10]


def test_a_fence_ends_only_at_its_own_closing_fence():
    text = "---\ntitle: x\n---\n~~~~\n~~~\n~~~~~ \n:::{note}\n```\n:::\ntail\n```{code-cell}\nx = 1\n"
    found = [(block.fence.marker, block.line, block.last_line) for block in blocks(text)]
    # The tilde block's shorter fence is its body; a longer one closes it. The colon fence ends
    # at its own marker, whatever backticks it holds; the unclosed cell runs to the page's end.
    assert found == [("~~~~", 4, 6), (":::", 7, 9), ("```", 11, 12)]
    assert [block.line for block in blocks(text, markers="`~")] == [4, 8]


def test_code_cells_are_the_outermost_code_cell_fences():
    text = ("````md\n```{code-cell} bash\nls\n```\n````\n"
            "````{code-cell} ipython3\n```\nnot a fence\n```\n````\n"
            "- a list item\n\n  ```{code-cell}\n  x\n  ```\n")
    cells = code_cells(text)
    assert [(cell.line, cell.fence.argument) for cell in cells] == [(6, "ipython3")]
    assert text[cells[0].start:cells[0].end] == "````{code-cell} ipython3\n```\nnot a fence\n```\n````"
    assert text[cells[0].body_start:cells[0].body_end] == "```\nnot a fence\n```\n"


def test_prose_in_and_around_nested_fences():
    text = "````{note}\nA note, torch 2.13.\n```python\ntorch 2.14\n```\n````\n````\n```\ntorch 2.15\n````\nEnd.\n"
    assert [line for _, line in reader_lines(text)] == ["A note, torch 2.13.", "End."]
    assert literal_versions(text) == []  # a backtick fence's body is never read by this check
    assert literal_versions(":::{note}\ntorch 2.13\n:::\n") == [(2, "torch 2.13")]


def test_an_exercise_is_prose_but_its_options_are_not():
    # Its question, choices and explanation are read (needing a term check: 需要梯度 went
    # unnoticed in the first exercises); its matchers, the same in every language, are not.
    text = "```{exercise}\n---\nid: x\nA: prints ^False$\n---\n问题：需要梯度吗？\n\n- 选项\n```\nEnd.\n"
    assert [(n, line) for n, line in reader_lines(text) if line.strip()] == [(6, "问题：需要梯度吗？"), (8, "- 选项"),
                                                                             (10, "End.")]


def test_the_han_range_is_defined_once():
    assert re.fullmatch(f"[{HAN}]+", "中文\u3400\U00020000") and not re.match(f"[{HAN}]", "，")
    spelled = [path.relative_to(PACKAGE).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
               if "\\u4e00" in path.read_text(encoding="utf8")]
    assert spelled == ["myst_source.py"]
