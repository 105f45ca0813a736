"""The lint session's settings catch what they are there for. (Whether the book's code is
clean is the lint session's own job: `nox -s lint`, in the README's test command.)"""

import subprocess
import sys
from pathlib import Path

from books import ROOT

RUFF = Path(sys.executable).with_name("ruff")


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), "check", "--config", str(ROOT / "pyproject.toml"), *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_ruff_fails_on_an_unused_import_and_a_swallowed_cause(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f(d):\n    try:\n        return d[1]\n    except KeyError:\n"
                   "        raise ValueError('missing')\n")
    result = ruff(str(bad))
    assert result.returncode == 1
    assert "F401" in result.stdout and "B904" in result.stdout
