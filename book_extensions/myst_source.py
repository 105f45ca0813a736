"""How a page's MyST source is read, by every check and tool that reads it without Sphinx:
its front matter, its fences (three or more backticks, tildes or colons; a longer fence holds
shorter ones, so a ```````` fence can show a ``` code cell's source), the directive a fence
opens (``{code-cell}``, ``{doctest}``, ``{note}``), the page's code cells, and which characters
are Han (the book's Chinese text).

Standard library only, importing nothing of the package: the build driver reads pages through
it before Sphinx starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# CJK Unified Ideographs, Extension A, the compatibility ideographs and the extensions of the
# supplementary planes (B onwards): a character class's contents, for "[{HAN}]".
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"

# A fence's line: its marker, then its info ("{code-cell} ipython3", "python", "{note} A title").
# Indented any amount, as fences in list items and directives are.
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})(.*)$")
DIRECTIVE = re.compile(r"^\s*\{([\w:.-]+)\}\s*(.*)$")
MARKERS = "`~:"  # colon fences are MyST's (conf.py enables colon_fence)


@dataclass(frozen=True)
class Fence:
    marker: str  # "```", "````", "~~~", ":::"
    info: str  # what follows the marker on its line

    @property
    def directive(self) -> str | None:
        """The directive it opens ("code-cell", "note"), or None for a plain code block."""
        match = DIRECTIVE.match(self.info)
        return match.group(1) if match else None

    @property
    def argument(self) -> str:
        """What follows the directive's name on the fence's line ("ipython3", a title)."""
        match = DIRECTIVE.match(self.info)
        return match.group(2) if match else ""

    def closed_by(self, line: str) -> bool:
        # CommonMark: the same character, at least as many, and nothing else on the line.
        text = line.strip()
        return text.startswith(self.marker) and not text.lstrip(self.marker[0]).strip()


def fence_at(line: str, markers: str = MARKERS) -> Fence | None:
    """The fence that ``line`` opens, if it is one."""
    match = FENCE.match(line)
    if not match or match.group(1)[0] not in markers:
        return None
    marker, info = match.groups()
    if marker[0] == "`" and "`" in info:
        return None  # ```a``` is inline code, not a fence (CommonMark)
    return Fence(marker, info.rstrip("\r"))


def not_utf8(data: bytes) -> tuple[int, str] | None:
    """Where a page's bytes stop being UTF-8: (line, the offending byte in hex), or None."""
    try:
        data.decode("utf8")
    except UnicodeDecodeError as error:
        return data[: error.start].count(b"\n") + 1, data[error.start: error.start + 1].hex()
    return None


def lines(text: str) -> list[str]:
    """The page's lines, numbered as MyST numbers them (from 1, at each newline; a form feed or
    a line separator is no new line, as it is to ``str.splitlines``)."""
    found = text.split("\n")
    return found[:-1] if found[-1] == "" else found


def front_matter_end(page_lines: list[str]) -> int:
    """How many of the page's first lines its front matter takes (0 if it has none)."""
    if page_lines and page_lines[0].strip() == "---":
        return next((i + 1 for i, line in enumerate(page_lines[1:], start=1) if line.strip() == "---"), 0)
    return 0


@dataclass(frozen=True)
class Block:
    """An outermost fenced block: its lines (from 1) and offsets in the page's text."""

    fence: Fence
    line: int  # the opening fence's
    last_line: int  # the closing fence's (the page's last, when nothing closes it)
    start: int  # the opening fence's first character
    body_start: int  # the first character after the opening fence's line
    body_end: int  # the closing fence's line's first character (the text's end, if none)
    end: int  # the end of the closing fence's line, its newline excluded

    @property
    def lines(self) -> range:
        return range(self.line, self.last_line + 1)


def blocks(text: str, markers: str = MARKERS) -> list[Block]:
    """The page's outermost fenced blocks, front matter aside. Whatever fences the lines inside
    one hold, they are its body: only its own closing fence ends it."""
    page_lines = lines(text)
    offsets = [0]
    for line in page_lines:
        offsets.append(offsets[-1] + len(line) + 1)
    found, opening = [], None
    for index in range(front_matter_end(page_lines), len(page_lines)):
        line = page_lines[index]
        if opening is None:
            fence = fence_at(line, markers)
            if fence:
                opening = (fence, index)
            continue
        fence, first = opening
        if fence.closed_by(line):
            found.append(Block(fence, first + 1, index + 1, offsets[first], offsets[first + 1],
                               offsets[index], offsets[index] + len(line)))
            opening = None
    if opening:
        fence, first = opening
        found.append(Block(fence, first + 1, len(page_lines), offsets[first],
                           min(offsets[first + 1], len(text)), len(text), len(text)))
    return found


def code_cells(text: str) -> list[Block]:
    """The page's code cells: MyST-NB takes only an outermost ``{code-cell}`` fence as one, and
    not one indented into a list item."""
    return [block for block in blocks(text)
            if block.fence.directive == "code-cell" and not text[block.start].isspace()]
