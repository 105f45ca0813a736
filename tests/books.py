"""Building small fixture books (tests/fixtures/<name>/docs), or the real one, in a temp folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"



def index_parts(language: str, docs: Path = ROOT / "docs") -> list[list[str]]:
    """The pages each table of contents on a language's index lists: one list per part.

    Without a CUDA record the book's device page is left out (book_extensions/devices.py)."""
    import runpy

    index = (docs / language / "index.md").read_text(encoding="utf8")
    hidden = set() if (ROOT / "results" / "cuda.json").exists() else {
        runpy.run_path(str(ROOT / "conf.py"))["book_device_page"]}
    return [[line.strip() for line in block.splitlines()
             if line.strip() and not line.startswith(":") and line.strip() not in hidden]
            for block in re.findall(r"```\{toctree\}\n(.*?)```", index, re.S)]

@dataclass
class Build:
    returncode: int
    output: str
    out: Path  # the build's _build folder
    cache: Path

    def site(self, device: str = "cpu") -> Path:
        return self.out / device / "html"


def build_book(docs: Path, work: Path, builder: str = "html", *options: str,
               sphinx: tuple[str, ...] = (), cache: Path | None = None, tz: str | None = None) -> Build:
    """Build ``docs`` like ``nox -s docs`` does, into ``work``; output is stdout + stderr.

    The execution cache is ``work/cache`` unless ``cache`` names another one; ``tz``
    sets the build's time zone.
    """
    out, cache = work / "_build", cache or work / "cache"
    command = [sys.executable, "-m", "book_extensions.tools.build", builder, "-q",
               "--docs", str(docs), "--out", str(out), "--cache-root", str(cache), *options]
    if sphinx:
        command += ["--", *sphinx]
    env = {**os.environ, **({"TZ": tz} if tz else {})}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    return Build(result.returncode, result.stdout + result.stderr, out, cache)


SCREENSHOTS = ROOT / "_build" / "screenshots"  # test artifacts of the browser tests


def assert_one_line_config_error(load, path: Path, content: str, cause: str) -> None:
    """``load`` refuses ``path`` holding ``content`` with one line that names the file and ``cause``."""
    import pytest
    from sphinx.errors import ConfigError

    path.write_text(content, encoding="utf8")
    with pytest.raises(ConfigError) as raised:
        load(path)
    message = str(raised.value)
    assert str(path) in message and cause in message and "\n" not in message
