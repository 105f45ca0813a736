"""The part of a code cell written in the page's language: its comments and docstrings.

A page's code cells are one program in every language; what differs is what the program
says to its reader. :func:`split` takes a cell's source apart into its code (the normal
form that parity compares, that the execution cache is keyed on, so the second language is
still served from the first one's execution, and that the records' digests are taken of)
and its prose (each ``#`` comment and each docstring line, with its line number, for the
checks that read them).

The normal form leaves out comments, docstrings that fill their lines, trailing spaces and
blank lines: two cells with the same normal form run the same statements in the same
order. What a string holds is code: the lines inside a multi-line string are kept as they
are, and so is a docstring that shares a line with code (``def f(): "doc"``), or a string
that is a cell's only or last statement (IPython shows it: an output, not a docstring).
A cell that Python cannot read (IPython syntax) keeps its whole source as its code.

Since one execution serves every language, no output may depend on the prose:

- :func:`english_lines` finds the comment and docstring lines of a CJK edition that are
  still in English (``cell_checks.py`` warns about each, naming its page and line);
- ``cell_checks.py`` warns about an output that shows a comment or docstring of its page (a
  traceback's source line, ``print(f.__doc__)``, ``inspect.getsource``), which the other
  language would show in the first one's words;
- :func:`prose_readers` finds the code that reads the prose itself (``f.__doc__``, ``help()``,
  ``inspect.getsource``…): whatever it prints of it (``len(f.__doc__)``, ``.upper()``) is
  the first language's, and no output check can see that; ``cell_checks.py`` refuses it;
- line numbers differ between languages, so ``commands/determinism.py`` executes the second
  language's pages and compares their outputs with the first language's.

Programs that pages load (``:load: ../../examples/<name>.py``) have a twin per language,
``examples/<language>/<name>.py``, with the same code: :mod:`..checks.parity` checks both.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ..myst_source import HAN

SKIPPED = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT,
           tokenize.ENDMARKER}


@dataclass(frozen=True)
class Cell:
    code: str  # the normal form
    comments: tuple[tuple[int, str], ...] = ()  # (line, text after the "#") of every comment
    docstrings: tuple[tuple[int, str], ...] = ()  # (line, text) of every line of a docstring left out of the code

    @property
    def prose(self) -> tuple[tuple[int, str], ...]:
        """(line, text) of every comment and docstring line, in line order."""
        return tuple(sorted(self.comments + self.docstrings))


def docstrings(tree: ast.Module) -> list[ast.Expr]:
    """The docstring statements of a module and of every class and function in it.

    A cell's first statement is a docstring only if more statements follow: a string that
    is the last statement of a cell is what the cell shows."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            if isinstance(node, ast.Module) and len(node.body) == 1:
                continue
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.append(first)
    return found


@lru_cache(maxsize=4096)
def split(source: str) -> Cell:
    lines = source.split("\n")
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return Cell(source)
    comments: list[tuple[int, str]] = []
    cut: dict[int, int] = {}  # line -> column where its comment starts
    verbatim: set[int] = set()  # lines a string goes on from: each of their characters counts
    for token in tokens:
        if token.type == tokenize.COMMENT:
            row, column = token.start
            cut[row] = column
            text = token.string.lstrip("#").strip()
            if text:
                comments.append((row, text))
        elif token.start[0] != token.end[0] and token.type not in SKIPPED:  # a multi-line string
            verbatim.update(range(token.start[0], token.end[0]))
    dropped: set[int] = set()
    prose: list[tuple[int, str]] = []
    for statement in docstrings(tree):
        rows = range(statement.lineno, statement.end_lineno + 1)
        # Only a docstring alone on its lines: ``def f(): "doc"`` keeps its line as code.
        if all(t.type in SKIPPED or t.type == tokenize.STRING
               for t in tokens if t.start[0] in rows or t.end[0] in rows):
            dropped.update(rows)
            text = statement.value.value
            prose += [(statement.lineno + i, line.strip()) for i, line in enumerate(text.split("\n")) if line.strip()]
    code = []
    for row, line in enumerate(lines, start=1):
        if row in dropped:
            continue
        if row in verbatim:
            code.append(line)
            continue
        line = line[: cut[row]] if row in cut else line
        if line.strip():
            code.append(line.rstrip())
    return Cell("\n".join(code), tuple(comments), tuple(sorted(prose)))


def code_of(source: str) -> str:
    """A cell's source without its comments and docstrings: what must be the same in every language."""
    return split(source).code


# --- prose still in English -------------------------------------------------------------

HAN_CHARACTER = re.compile(f"[{HAN}]")
BACKTICKS = re.compile(r"`[^`]*`")
URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
# Comments that talk to a tool, not to the reader: they stay as the tool spells them.
PRAGMA = re.compile(r"^(?:noqa\b|type:\s*ignore\b|pragma\b|doctest:|fmt:|pylint:|mypy:|ruff:|isort:|nosec\b"
                    r"|pyright:|-\*-|!)", re.IGNORECASE)
WORD = re.compile(r"[A-Za-z]{2,}")
PUNCTUATION = ".,;:!?\"'“”‘’()[]…-—"


def english_words(text: str) -> list[str]:
    """The words of ``text`` that are English words, not code: a run of two or more ASCII
    letters standing between spaces (punctuation aside), outside `backticks` and URLs.

    ``x.grad``, ``f(x)``, ``grad_fn=<AddBackward0>``, ``tensor([1., 2.])`` are code, not words."""
    text = URL.sub(" ", BACKTICKS.sub(" ", text))
    words = (token.strip(PUNCTUATION) for token in text.split())
    return [w for w in words if WORD.fullmatch(w)]


def is_english(text: str) -> bool:
    """A comment or docstring line written in English: no Han character and at least two
    English words. A tool's pragma (``# noqa``, ``# type: ignore``) is not prose."""
    if HAN_CHARACTER.search(text) or PRAGMA.match(text):
        return False
    return len(english_words(text)) >= 2


def english_lines(source: str) -> list[tuple[int, str]]:
    """(line in ``source``, text) of every comment and docstring line written in English."""
    return [(row, text) for row, text in split(source).prose if is_english(text)]


# --- prose that an output shows -----------------------------------------------------------

# An output shows a comment with its "#" (a source line), a docstring line as it is. Shorter
# ones could match by chance ("# x"); the width counts a Han character as two columns.
COMMENT_WIDTH, DOCSTRING_WIDTH = 8, 16
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@lru_cache(maxsize=4096)
def shown_prose(source: str) -> tuple[tuple[str, re.Pattern], ...]:
    """(text, pattern that finds it in an output) of each comment and docstring line of
    ``source`` long enough not to match by chance."""
    cell = split(source)
    found = [(text, re.compile(r"#+[ \t]*" + re.escape(text))) for _, text in cell.comments
             if width(text) >= COMMENT_WIDTH]
    found += [(text, re.compile(re.escape(text))) for _, text in cell.docstrings if width(text) >= DOCSTRING_WIDTH]
    return tuple(found)


def prose_in(output: str, sources: list[str]) -> str | None:
    """The first comment or docstring line of ``sources`` that ``output`` shows, or None."""
    output = ANSI.sub("", output)
    for source in sources:
        for text, pattern in shown_prose(source):
            if pattern.search(output):
                return text
    return None


# What reads a program's own comments or docstrings: the attribute, and the functions (of
# inspect, or the builtin help) that return them or print them.
DOC_ATTRIBUTES = {"__doc__"}
PROSE_FUNCTIONS = {"help", "getdoc", "getcomments", "getsource", "getsourcelines", "findsource"}


def prose_readers(source: str) -> list[tuple[int, str]]:
    """(line, what) for each place the code reads comments or docstrings; none for a cell
    Python cannot read (IPython syntax), whose code is its whole source anyway."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in DOC_ATTRIBUTES | PROSE_FUNCTIONS:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Name) and node.id in PROSE_FUNCTIONS and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, node.id))
    return sorted(set(found))
