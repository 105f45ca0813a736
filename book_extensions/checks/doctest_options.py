"""Where a "Check yourself" doctest relaxes the exact comparison, and how.

conf.py's ``doctest_default_flags`` compares every example exactly, exception messages
included (Sphinx's own default ignores an exception's message and takes ``...`` as "anything").
A block may still relax one example (``# doctest: +ELLIPSIS``) or the whole block
(``:options: +ELLIPSIS``; ``:skipif:`` and ``:pyversion:``, sphinx.ext.doctest's, are listed too,
though the book's directive refuses them); Sphinx trims those marks from the page, so the
reader cannot see them. The doctest build lists every such block before it runs
(:func:`relaxations`, called by :mod:`..commands.build`).

Standard library only: the build driver reads it before Sphinx starts.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from ..myst_source import fence_at, lines
from ..paths import shown

# The directives whose content is compared with what the code prints: the book's doctest
# (execution/doctests.py), and sphinx.ext.doctest's testoutput, which a page may not use.
COMPARED = ("doctest", "testoutput")
# doctest's own pattern for a directive comment on an example's source line.
DIRECTIVE = re.compile(r"#\s*doctest:\s*([^\n'\"]*)$")
BLOCK_OPTION = re.compile(r"^\s*:(options|skipif|pyversion):\s*(.*)$")
# The same options in MyST's YAML form, between "---" lines at the block's start (attack 9, case 15).
YAML_OPTION = re.compile(r"^\s*(options|skipif|pyversion)\s*:\s*(.*)$")
# The same directives written in reStructuredText (in an {eval-rst} block): attack 6, case 9.
RST_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+(" + "|".join(COMPARED) + r")::")


def page_relaxations(text: str) -> list[tuple[int, Counter]]:
    """(line of the block's opening, how many examples each relaxation covers) per block
    of a MyST page that relaxes anything."""
    # Line by line, not myst_source.blocks: a doctest block counts wherever it is, in a {note} too.
    found, block, fence, indent, front = [], None, None, None, None
    for number, line in enumerate(lines(text), start=1):
        if block is not None and indent is not None and line.strip() and len(line) - len(line.lstrip()) <= indent:
            if block[1]:  # an rst directive ends where a line is indented no deeper than it
                found.append(block)
            block = None
        if block is None:
            fence, rst = fence_at(line), RST_DIRECTIVE.match(line)
            if fence and fence.directive in COMPARED:
                block, indent, front = (number, Counter()), None, "may open"
            elif rst:
                block, indent = (number, Counter()), len(rst.group(1))
            continue
        if indent is None and fence.closed_by(line):
            if block[1]:
                found.append(block)
            block = None
            continue
        if front == "may open":
            front = "open" if line.strip() == "---" else None
            if front:
                continue
        if front == "open":
            front = None if line.strip() == "---" else front
            option = YAML_OPTION.match(line) if front else None
            if option:
                name, value = option.groups()
                block[1][f"{value.strip()} (the whole block)" if name == "options" else f":{name}: {value.strip()}"] += 1
            continue
        option = BLOCK_OPTION.match(line)
        if option:
            name, value = option.groups()
            block[1][f"{value.strip()} (the whole block)" if name == "options" else f":{name}: {value.strip()}"] += 1
            continue
        directive = DIRECTIVE.search(line) if line.lstrip().startswith((">>>", "...")) else None
        if directive:
            for flag in directive.group(1).replace(",", " ").split():
                block[1][flag] += 1
    if block is not None and indent is not None and block[1]:  # an rst directive at the end of the page
        found.append(block)
    return found


def relaxations(folder: Path) -> list[str]:
    """One line per doctest block of a language's pages that relaxes the comparison."""
    lines = []
    for page in sorted(folder.rglob("*.md")):
        try:
            text = page.read_text(encoding="utf8")
        except (OSError, UnicodeDecodeError):
            continue  # the build names what is wrong with the page
        for number, counts in page_relaxations(text):
            what = ", ".join(f"{flag} ({count} example{'s' if count > 1 else ''})" if "(" not in flag else flag
                             for flag, count in sorted(counts.items()))
            lines.append(f"{shown(page, Path.cwd())}:{number}: a doctest block relaxes the exact comparison: {what}")
    return lines
