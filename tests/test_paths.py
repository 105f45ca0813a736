"""How messages name a path (book_extensions/paths.py): from the repository, or from the
working directory for the paths a command was given; and a file written whole or not at all."""

import os
from pathlib import Path

import pytest

from book_extensions.paths import PACKAGE, ROOT, shown, write_atomically


def test_the_repository_and_the_package():
    assert (ROOT / "conf.py").is_file() and PACKAGE == ROOT / "book_extensions"


def test_a_path_in_the_repository_is_named_from_it_one_elsewhere_whole(tmp_path):
    assert shown(ROOT / "docs" / "en") == "docs/en"
    assert shown(str(ROOT / "requirements.txt")) == "requirements.txt"
    assert shown(tmp_path / "x") == str(tmp_path / "x")


def test_a_given_path_is_named_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shown(Path("docs", "zh"), Path.cwd()) == "docs/zh"
    assert shown(tmp_path / "conf.py", Path.cwd()) == "conf.py"
    assert shown(ROOT / "conf.py", Path.cwd()) == str(ROOT / "conf.py")


def test_a_path_through_a_symlink_out_of_the_base_keeps_its_name(tmp_path):
    # A worktree's .toolchain links to the main checkout's: its environments stay ".toolchain/…".
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "torch-9").mkdir(parents=True)
    base = tmp_path / "repository"
    base.mkdir()
    os.symlink(elsewhere, base / ".toolchain")
    assert shown(base / ".toolchain" / "torch-9", base) == ".toolchain/torch-9"


def test_a_file_is_written_whole_or_not_at_all(tmp_path):
    note = tmp_path / "note.json"
    write_atomically(note, "第一版\n")  # text as UTF-8, whatever the locale
    assert note.read_bytes() == "第一版\n".encode()
    write_atomically(note, b"\x00binary")
    assert note.read_bytes() == b"\x00binary" and sorted(p.name for p in tmp_path.iterdir()) == ["note.json"]
    # A write that fails leaves the file as it was, and no partial file.
    def full_disk(*args):
        raise OSError(28, "No space left on device")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("os.replace", full_disk)
        with pytest.raises(OSError, match="No space left"):
            write_atomically(note, "second")
    assert note.read_bytes() == b"\x00binary" and sorted(p.name for p in tmp_path.iterdir()) == ["note.json"]
    # Writers at once (two languages' builds keeping the same store entry) each write their own.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: write_atomically(note, f"writer {n % 2}\n" * 10_000), range(64)))
    assert note.read_text(encoding="utf8") in ("writer 0\n" * 10_000, "writer 1\n" * 10_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.json"]
    assert note.stat().st_mode & 0o777 == 0o644
    # A name as long as a file's may be: the partial file's name is cut to fit (attack 4, case 19).
    longest = tmp_path / ("页" * 81 + "12.html")  # 250 bytes
    write_atomically(longest, "whole")
    assert longest.read_text(encoding="utf8") == "whole"
