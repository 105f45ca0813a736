"""The part of a code cell written in the page's language: its comments and docstrings.

A page's code cells are one program in every language; what differs is what the program
says to its reader. :func:`split` takes a cell's source apart into its code (the normal
form that parity compares and the execution cache is keyed on, so the second language is
still served from the first one's execution) and its prose (each ``#`` comment and each
docstring line, with its line number, for the checks that read them).

The normal form leaves out comments, docstrings that fill their lines, trailing spaces and
blank lines: two cells with the same normal form run the same statements in the same
order. Line numbers may differ between languages, so no page may print one (a traceback,
``inspect``): ``tools/determinism.py`` executes the second language against the first.
A cell that Python cannot read (IPython syntax) keeps its whole source as its code.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from functools import lru_cache

SKIPPED = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT,
           tokenize.ENDMARKER}


@dataclass(frozen=True)
class Cell:
    code: str  # the normal form
    prose: tuple[tuple[int, str], ...]  # (line, text) of every comment and docstring line


def docstrings(tree: ast.AST) -> list[ast.Expr]:
    """The docstring statements of a module and of every class and function in it."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
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
        return Cell(source, ())
    prose: list[tuple[int, str]] = []
    cut: dict[int, int] = {}  # line -> column where its comment starts
    for token in tokens:
        if token.type == tokenize.COMMENT:
            row, column = token.start
            cut[row] = column
            text = token.string.lstrip("#").strip()
            if text:
                prose.append((row, text))
    dropped: set[int] = set()
    for statement in docstrings(tree):
        rows = range(statement.lineno, statement.end_lineno + 1)
        # Only a docstring alone on its lines: ``def f(): "doc"`` keeps its line as code.
        alone = all(t.type in SKIPPED or t.type == tokenize.STRING
                    for t in tokens if t.start[0] in rows or t.end[0] in rows)
        text = statement.value.value
        prose += [(statement.lineno + i, line.strip()) for i, line in enumerate(text.split("\n")) if line.strip()]
        if alone:
            dropped.update(rows)
    code = []
    for row, line in enumerate(lines, start=1):
        if row in dropped:
            continue
        line = line[: cut[row]] if row in cut else line
        if line.strip():
            code.append(line.rstrip())
    return Cell("\n".join(code), tuple(sorted(prose)))


def code_of(source: str) -> str:
    """A cell's source without its comments and docstrings: what must be the same in every language."""
    return split(source).code
