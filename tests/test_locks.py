"""One lock for everything that writes: builds, the live preview, and the toolchain under them."""

from __future__ import annotations

import fcntl
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from books import FIXTURES, ROOT, build_book, descendants

from book_extensions.commands import build as build_command
from book_extensions.commands import build_locks, toolchain


def fake_environment(folder: Path, stamp: bool = True) -> Path:
    """What ensure() leaves: the pins it installed and, once it is done, their stamp."""
    env = folder / ".toolchain" / "torch-9.9.9"
    env.mkdir(parents=True)
    (env / "book-pins.txt").write_text("torch==9.9.9\n")
    if stamp:
        (env / toolchain.STAMP).write_text("0\n")
    return env


# --- the toolchain: shared by builds, updated by one session when none runs ---------------------

def test_a_python_that_is_no_toolchain_holds_nothing(tmp_path):
    assert toolchain.hold_shared(tmp_path) is None


def test_an_update_waits_for_the_builds_running_on_the_environment(tmp_path):
    env = fake_environment(tmp_path)
    first, second = toolchain.hold_shared(env), toolchain.hold_shared(env)  # two builds
    said, updated = [], threading.Event()

    def update():
        with toolchain.locked(env, said.append):
            updated.set()

    updating = threading.Thread(target=update)
    updating.start()
    try:
        assert not updated.wait(2)  # still waiting
        assert said == [f"waiting for {toolchain.shown(env, toolchain.ROOT)}/: a build (or `nox -s serve`) is "
                        "running on it, and requirements.txt changed; it is updated once they end"]
        os.close(first)
        assert not updated.wait(1)  # one build still runs
    finally:
        os.close(second)
    assert updated.wait(10)
    updating.join()


def test_a_build_does_not_start_while_its_environment_is_updated(tmp_path):
    env = fake_environment(tmp_path)
    with open(toolchain.lock_file(env), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as ensure() holds it while pip runs
        with pytest.raises(toolchain.ToolchainError) as refused:
            toolchain.hold_shared(env)
    assert str(refused.value) == (f"{toolchain.shown(env, toolchain.ROOT)}/ is being created or updated by another "
                                  "session (requirements.txt changed): build again once it is done")
    os.close(toolchain.hold_shared(env))  # once it is done


def test_a_build_does_not_start_on_a_half_updated_environment(tmp_path):
    env = fake_environment(tmp_path, stamp=False)  # ensure() removes the stamp until pip has finished
    with pytest.raises(toolchain.ToolchainError, match=r"torch-9\.9\.9/ was left half-updated \(its update failed "
                       r"or was stopped\): finish it with `python3 -m book_extensions toolchain 9\.9\.9`, then build again"):
        toolchain.hold_shared(env)


def test_the_driver_refuses_a_build_while_its_environment_is_updated(tmp_path, monkeypatch):
    env = fake_environment(tmp_path)
    monkeypatch.setattr(toolchain, "hold_shared", functools.partial(toolchain.hold_shared, env))
    args = build_command.parse_args(["html", "--out", str(tmp_path / "_build"), "--cache-root", str(tmp_path / "cache")])
    locks, problem = build_locks.hold_build_locks(args)
    # The cache, the output folder, the toolchain (shared): the driver's, and its Sphinx processes'.
    assert problem is None and len(locks.kept) == len(locks.passed) == 3
    locks.close()
    with open(toolchain.lock_file(env), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert build_locks.hold_build_locks(args) == (
            build_locks.BuildLocks(), f"{toolchain.shown(env, toolchain.ROOT)}/ is being created or updated by "
                                      "another session (requirements.txt changed): build again once it is done")
    # Nothing stays held by the refused build: the next one gets every lock.
    locks, problem = build_locks.hold_build_locks(args)
    assert problem is None
    locks.close()


@pytest.mark.unit
def test_a_child_that_releases_the_locks_it_was_given_does_not_let_a_second_build_in(tmp_path):
    # Attack 7, case 21: a doctest example, which runs in Sphinx's process, released the build's
    # locks it inherited (flock LOCK_UN on the same open file), and a second build wrote the same
    # cache and output folder at once. The driver keeps locks of its own, which it never passes on.
    args = build_command.parse_args(["html", "--out", str(tmp_path / "_build"), "--cache-root", str(tmp_path / "cache")])
    locks, problem = build_locks.hold_build_locks(args)
    assert problem is None
    try:
        for lock in locks.passed:
            fcntl.flock(lock, fcntl.LOCK_UN)
        second, problem = build_locks.hold_build_locks(args)
        assert second == build_locks.BuildLocks()
        assert problem == f"another build is using the execution cache {tmp_path / 'cache'}: wait for it to finish, " \
                          "or give this one its own --cache-root"
    finally:
        locks.close()
    # A driver killed while its Sphinx runs: Sphinx's lock keeps the next build out.
    locks, _ = build_locks.hold_build_locks(args)
    for lock in locks.kept:
        os.close(lock)
    try:
        second, problem = build_locks.hold_build_locks(args)
        assert problem is not None and "is using the execution cache" in problem, problem
    finally:
        for lock in locks.passed:
            os.close(lock)


def flocks_of(pid: int, path: Path) -> list[str]:
    """The kinds (READ, WRITE) of the flocks ``pid`` took on ``path`` (/proc/locks, Linux)."""
    inode = path.stat().st_ino
    found = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "FLOCK" in fields and fields[fields.index("FLOCK") + 3] == str(pid) \
                and fields[fields.index("FLOCK") + 4].split(":")[-1] == str(inode):
            found.append(fields[fields.index("FLOCK") + 2])
    return found


def sphinx_below(pid: int) -> bool:
    def command(process) -> list[str]:
        try:
            return process.cmdline()
        except psutil.Error:  # ended meanwhile
            return []
    return any(command(child)[1:3] == ["-m", "sphinx"] for child in descendants(pid))


@pytest.mark.fixture
@pytest.mark.skipif(not (Path(sys.prefix) / "book-pins.txt").exists(), reason="the tests run outside a toolchain")
def test_a_build_holds_its_toolchain_shared_while_it_runs(tmp_path):
    # Seen in the kernel's lock table, without taking the lock: other builds share this toolchain.
    command = [sys.executable, "-m", "book_extensions", "build", "html", "-q", "--language", "en",
               "--docs", str(FIXTURES / "timeout" / "docs"), "--out", str(tmp_path / "_build"),
               "--cache-root", str(tmp_path / "cache")]
    running = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    lock = toolchain.lock_file(Path(sys.prefix))
    try:
        deadline = time.monotonic() + 60
        while not flocks_of(running.pid, lock) and time.monotonic() < deadline and running.poll() is None:
            time.sleep(0.2)
        assert flocks_of(running.pid, lock) == ["READ", "READ"]  # the driver's, and its Sphinx processes'
        # Wait until Sphinx runs (a child "python -m sphinx"), then see the lock still held.
        deadline = time.monotonic() + 120
        while not sphinx_below(running.pid) and time.monotonic() < deadline and running.poll() is None:
            time.sleep(0.2)
        assert sphinx_below(running.pid), "Sphinx never started"
        assert running.poll() is None and flocks_of(running.pid, lock) == ["READ", "READ"]
    finally:
        os.killpg(running.pid, signal.SIGINT)
        output, _ = running.communicate(timeout=120)
    assert running.returncode == 130, output
    assert flocks_of(running.pid, lock) == []


# --- the live preview: the build's locks, for as long as it runs --------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(tmp_path: Path, docs: Path) -> list[str]:
    return [sys.executable, "-m", "book_extensions", "serve", "en", "--docs", str(docs), "--port", str(free_port()),
            "--out", str(tmp_path / "_build"), "--cache-root", str(tmp_path / "cache")]


def port_of(preview: subprocess.Popen) -> str:
    command = preview.args
    return command[command.index("--port") + 1]


def fetch(url: str) -> str:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.read().decode("utf8", "replace")
    except OSError:
        return ""


def wait_for(condition, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.5)


def test_the_preview_does_not_start_while_a_build_runs(tmp_path):
    (tmp_path / "cache").mkdir()
    held = build_locks.hold_lock(tmp_path / "cache" / "book-build.lock")  # as a build holds it
    try:
        refused = subprocess.run(serve(tmp_path, FIXTURES / "nondeterministic" / "docs"), cwd=ROOT,
                                 capture_output=True, text=True, timeout=60)
    finally:
        os.close(held)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"error: another build is using the execution cache {tmp_path / 'cache'}: "
                                      "wait for it to finish, then start the preview again")
    assert not (tmp_path / "_build").exists()  # refused before anything was written


@pytest.mark.fixture
def test_a_build_is_refused_while_the_preview_runs(tmp_path):
    docs = tmp_path / "docs"
    (docs / "en").mkdir(parents=True)
    (docs / "en" / "index.md").write_text("# A page\n\nNothing to execute.\n")
    preview = subprocess.Popen(serve(tmp_path, docs), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    lock = tmp_path / "cache" / "book-build.lock"
    try:
        # Once it is sphinx-autobuild (the preview execs it), its locks must still be held.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and preview.poll() is None and b"sphinx_autobuild" not in \
                Path(f"/proc/{preview.pid}/cmdline").read_bytes():
            time.sleep(0.2)
        assert preview.poll() is None, preview.communicate()[0]
        assert b"sphinx_autobuild" in Path(f"/proc/{preview.pid}/cmdline").read_bytes()
        assert sorted(flocks_of(preview.pid, lock)) == ["WRITE"]
        refused = build_book(FIXTURES / "nondeterministic" / "docs", tmp_path, "html", "--language", "en",
                             cache=tmp_path / "cache")
        assert refused.returncode == 2
        assert refused.output.strip() == (
            f"error: the live preview (`nox -s serve`, pid {preview.pid}) is using the execution cache "
            f"{tmp_path / 'cache'}: stop it, or give this build its own --cache-root")
        # Attack 9, case 18: a page saved is built again and served (sphinx-autobuild runs
        # rebuilds from a worker process: the preview is then no parent of Sphinx).
        served = f"http://127.0.0.1:{port_of(preview)}/index.html"
        wait_for(lambda: "Nothing to execute" in fetch(served))
        (docs / "en" / "index.md").write_text("# A page\n\nSaved again.\n")
        wait_for(lambda: "Saved again" in fetch(served))
    finally:
        os.killpg(preview.pid, signal.SIGTERM)
        preview.communicate(timeout=60)
    # Once it has stopped, a build gets the locks.
    again = build_locks.hold_lock(lock)
    assert again is not None
    os.close(again)


@pytest.mark.fixture
def test_a_killed_preview_leaves_no_sphinx_writing_the_cache_unlocked(tmp_path):
    # Attack 8, case 30: sphinx-autobuild starts Sphinx with no lock of the preview's and no
    # parent-death signal; killed, it left that Sphinx writing the shared execution cache while a
    # build could take the locks. Each preview run now holds the build's Sphinx locks itself and
    # ends with the preview.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    preview = subprocess.Popen(serve(tmp_path, FIXTURES / "timeout" / "docs"), cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, "TMPDIR": str(temporary)})
    try:
        deadline = time.monotonic() + 120
        while not any(temporary.rglob("sleeping")):  # the page's cell sleeps for ten minutes
            assert preview.poll() is None and time.monotonic() < deadline, "the preview never reached its sleeping cell"
            time.sleep(0.2)
        sphinx = [p for p in descendants(preview.pid) if p.ppid() == preview.pid]  # what sphinx-autobuild started
        assert len(sphinx) == 1 and "sphinx" in sphinx[0].cmdline(), [p.cmdline() for p in descendants(preview.pid)]
        for folder in (tmp_path / "cache", tmp_path / "_build" / "cpu"):
            assert flocks_of(sphinx[0].pid, folder / build_locks.PROCESSES_LOCK) == ["WRITE"]
        os.kill(preview.pid, signal.SIGKILL)
        sphinx[0].wait(timeout=30)  # ends with the preview
    finally:
        os.killpg(preview.pid, signal.SIGKILL)
        preview.communicate(timeout=60)


@pytest.mark.unit
def test_a_lock_held_by_processes_a_killed_build_left_is_named_with_their_pids(tmp_path):
    # A driver killed with SIGKILL leaves Sphinx and its kernel holding the locks until the
    # cell ends (attack case 10): the refused build names them, and how to end them.
    lock = tmp_path / build_locks.LOCK
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(f"\n{int(dead.stdout)}\n")  # what the killed driver wrote: no holder's name, its pid
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(lock)!r}); import time; time.sleep(60)"])
    try:
        for _ in range(100):  # until it has opened the file
            if build_locks.holders_of(lock):
                break
            time.sleep(0.05)
        said = build_locks.busy(lock, "using the execution cache X", "--cache-root", preview=False)
        assert said == (f"processes left by a build that was killed ({holder.pid} ({psutil.Process(holder.pid).name()})) "
                        f"are still using the execution cache X: they end when their cell does, or end them now: "
                        f"kill {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    lock.write_text(f"\n{os.getpid()}\n")  # a driver that runs: the usual line
    assert build_locks.busy(lock, "using X", "--cache-root", preview=False).startswith("another build is using X")


@pytest.mark.unit
@pytest.mark.parametrize("kind", ["fifo", "link", "folder"])
def test_a_lock_that_is_not_a_plain_file_is_one_line_naming_it(tmp_path, kind):
    # Attack 8, cases 11a-e: a FIFO or a link to /dev/null in a lock's place stopped the build
    # with a traceback (os.ftruncate); a folder was reported as "cannot write" its parent.
    import argparse

    lock = tmp_path / "cache" / build_locks.LOCK
    lock.parent.mkdir()
    {"fifo": lambda: os.mkfifo(lock), "link": lambda: lock.symlink_to("/dev/null"), "folder": lock.mkdir}[kind]()
    args = argparse.Namespace(cache_root=tmp_path / "cache", out=tmp_path / "out", device="cpu")
    locks, problem = build_locks.hold_build_locks(args)
    assert problem == f"cannot lock {lock}: " + {"fifo": "it is not a plain file: remove it", "link": "it is a link: remove it",
                                                "folder": "Is a directory"}[kind]
    assert locks.kept == [] and locks.passed == []


@pytest.mark.unit
def test_the_preview_writes_folders_no_build_reads():
    # Attack 8, case 13: the preview rewrote the build's own note of a page's dependencies, and
    # every later build said "unchanged" with the old text published; case 30: a preview killed
    # while its Sphinx ran collided with the next build in the same output folder.
    from book_extensions import paths
    from book_extensions.commands import serve

    assert serve.PREVIEW_OUT == paths.BUILD / "preview"
    assert not serve.PREVIEW_OUT.is_relative_to(paths.BUILD / "cpu") and not serve.PREVIEW_OUT.is_relative_to(paths.BUILD / "cuda")


@pytest.mark.unit
def test_what_finishes_a_build_runs_while_its_locks_are_held(tmp_path, monkeypatch):
    # Attack 8, case 19: the offline editions printed the PDF, ran EPUBCheck and stamped the files
    # after the build had freed its locks, so a second build could rewrite what they read.
    for name, value in (("check_kernel", lambda: None), ("cache_dir", lambda *_: tmp_path / "cache" / "cpu"),
                        ("unreadable_cache", lambda _: None), ("unwritable_cache", lambda _: None),
                        ("compile_sphinx_catalogs", lambda: None), ("with_signals_passed_on", lambda *_: 0)):
        monkeypatch.setattr(build_command, name, value)
    argv = ["html", "--docs", str(ROOT / "docs"), "--out", str(tmp_path / "_build"), "--cache-root", str(tmp_path / "cache")]
    seen = []

    def after(args):
        second, problem = build_locks.hold_build_locks(args)
        seen.append(problem)
        second.close()
        return 3

    assert build_command.build_then(argv, after=after) == 3  # its status is the build's
    assert seen == [f"another build is using the execution cache {tmp_path / 'cache'}: wait for it to finish, "
                    "or give this one its own --cache-root"]
    # and once it has ended, the locks are free
    locks, problem = build_locks.hold_build_locks(build_command.parse_args(argv))
    assert problem is None
    locks.close()


FORKS_THEN_DIES = """
import os, sys, time
from book_extensions.execution import processes
processes.forks_end_with_this_process()
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
print(child, flush=True)
os._exit(0)  # as a driver killed with SIGKILL takes Sphinx down
"""


@pytest.mark.unit
def test_what_sphinx_forks_ends_with_it(tmp_path):
    # Attack 9, case 24: after a SIGKILL of the driver, Sphinx ended but its parallel reader
    # (a fork) ran on with its kernel until the cell ended.
    run = subprocess.run([sys.executable, "-c", FORKS_THEN_DIES], cwd=ROOT, capture_output=True, text=True, timeout=60)
    child = int(run.stdout)
    deadline = time.monotonic() + 10
    while psutil.pid_exists(child) and psutil.Process(child).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the fork outlived its parent"
        time.sleep(0.1)


@pytest.mark.unit
def test_the_preview_refuses_a_builds_output_folder(tmp_path):
    # Attack 9, case 2: `serve --out _build` rewrote the build's note of included files; the next
    # build said "unchanged" and kept the old text published.
    (tmp_path / "_build" / "cpu" / "html").mkdir(parents=True)  # a build's site
    refused = subprocess.run(serve(tmp_path, FIXTURES / "nondeterministic" / "docs"), cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"error: {tmp_path / '_build' / 'cpu'} holds a build's output: give the preview a "
                                      "folder of its own with --out (its default is _build/preview)")
