"""Checks on the prose of every page (not its code, which runs).

A sentence that names the torch release that built the page goes stale the day torch is
upgraded, and nothing would notice. Prose says "the torch that built this page" and, where
the number matters, writes ``{{ torch_version }}``, which the build fills in; what an older
release printed comes from its record (:mod:`.releases`), never from a sentence.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# "torch 2.13", "PyTorch 2.x", "torch==2.15.0", "2.13 版", "release 2.14.1".
LITERAL_VERSION = re.compile(
    r"(?i)(?:\b(?:py)?torch\b|\brelease|\bversion|版本?)\W{0,3}(?:==|>=|<=|v)?\s*\d+\.(?:\d+|x)\b"
    r"|\b\d+\.\d+(?:\.\d+)?\s*(?:版|版本|release)"
)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def literal_versions(text: str) -> list[tuple[int, str]]:
    """(line, match) for every torch release named in the prose of a MyST page."""
    found = []
    fence = None
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        start = next((i + 1 for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), 0)
    for number, line in enumerate(lines[start:], start=start + 1):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip()[len(opening.group(1)):].strip():
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        found += [(number, m.group(0)) for m in LITERAL_VERSION.finditer(line)]
    return found


def check_source(app: Sphinx, docname: str, source: list[str]) -> None:
    for line, literal in literal_versions(source[0]):
        logger.warning(
            f"the prose names a torch release ({literal.strip()!r}): say 'the torch that built this page' "
            "and write {{ torch_version }} where the number matters; what an older release "
            "printed comes from its record (nox -s versions)",
            location=(docname, line), type="book", subtype="literal_version",
        )


def setup(app: Sphinx) -> None:
    app.connect("source-read", check_source)
