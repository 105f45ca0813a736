"""The files a scan of the built site found clean, kept from one build to the next in a record
beside the doctrees: the scan skips them while their bytes and its rules are the same
(:mod:`.remote_loads`, :mod:`.leaked_paths`), since a rebuild writes a few pages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..paths import write_own_file


@contextmanager
def known_clean(record: Path, rules: str) -> Iterator[dict[str, str]]:
    """The files found clean (name: digest of their bytes) by a scan under ``rules`` (a digest
    of what decides a verdict), for the scan to update; written back when it ends. A record of
    other rules, or none that can be read, counts as none."""
    try:
        saved = json.loads(record.read_text(encoding="utf8"))
        files = saved["files"] if saved.get("rules") == rules and isinstance(saved["files"], dict) else {}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        files = {}
    yield files
    write_own_file(record, json.dumps({"rules": rules, "files": files}))  # a folder in its place: made again
