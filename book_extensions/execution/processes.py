"""The processes a build and its pages start: kept as descendants, and stopped when left behind.

The build driver and each Sphinx process that runs pages are subreapers (:func:`adopt_orphans`):
a process a cell starts in a session of its own, or whose kernel died, is re-parented to them
rather than to init, so that it can still be found among their descendants and ended
(:func:`stop`). Sphinx gets the parent-death signal (:func:`end_with_parent`), so that a killed
driver does not leave it running. Linux only: elsewhere both are no-ops, a safety net the
build does without. Standard library and psutil only: the build driver imports it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
from contextlib import suppress
from pathlib import Path

# <linux/prctl.h>
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

# Loaded once, here: end_with_parent runs between fork and exec, where loading a library can
# deadlock a process that has threads.
LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> None:
    if sys.platform == "linux":
        LIBC.prctl(option, value, 0, 0, 0)


def adopt_orphans() -> None:
    """Become the parent of every orphaned descendant, so that a process left behind (by a
    cell, by a kernel that died) stays among this process's descendants."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)


_forks_end_with_this_process = False


def forks_end_with_this_process() -> None:
    """Every process this one forks from now on (Sphinx's parallel readers and writers) gets the
    parent-death signal: a driver killed with SIGKILL took Sphinx down, but its readers ran on
    with their kernels until their cell ended (attack 9, case 24)."""
    global _forks_end_with_this_process
    if not _forks_end_with_this_process and hasattr(os, "register_at_fork"):
        forking = []

        def end_with_forking_parent() -> None:
            end_with_parent()
            if os.getppid() != forking[-1]:  # it ended before the signal was asked for
                os.kill(os.getpid(), signal.SIGTERM)

        os.register_at_fork(before=lambda: forking.append(os.getpid()), after_in_child=end_with_forking_parent,
                            after_in_parent=lambda: forking.pop())
        _forks_end_with_this_process = True


def end_with_parent() -> None:
    """SIGTERM this process when its parent dies: ``preexec_fn`` of a child that must not outlive it."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def command_line(argv: list[str]) -> str:
    """A process's command line as a message shows it: the program by its name, not its folder
    (a build's interpreter path is long, names the build machine and says nothing about the
    page), then its arguments. "" for an empty one (a process caught in exec)."""
    if not argv:
        return ""
    shown = " ".join([Path(argv[0]).name or argv[0], *argv[1:]])
    return "".join(c if c.isprintable() else " " for c in shown)  # one line, whatever it was named


def stop(processes, grace: float = 3) -> None:
    """Terminate, then kill after ``grace`` seconds, ``processes`` (psutil.Process); read their
    exit codes (which ends zombies too).

    All are stopped first: a shell whose child ended before the shell got the signal would
    run its next command (``sleep 2; echo late > file``)."""
    import psutil

    for step in (psutil.Process.suspend, psutil.Process.terminate, psutil.Process.resume):
        for process in processes:
            with suppress(psutil.Error):
                step(process)
    _, alive = psutil.wait_procs(processes, timeout=grace)
    for process in alive:
        with suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=grace)


def hold_lock(path: Path) -> int | None:
    """An exclusive lock on ``path`` (flock, as the filelock package takes it), or None when
    another build holds it."""
    import fcntl
    import stat

    # Not through a link, and a plain file only: a FIFO, a device or a link to /dev/null took no
    # lock anyone else sees, or stopped the build with a traceback (attack 8, cases 11c-e).
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "it is not a plain file: remove it")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


def note_holder(lock: int, holder: str) -> None:
    """Write who holds ``lock`` (its description, and this process's pid) into it, for a refused
    build to say (build_locks.busy reads it)."""
    os.ftruncate(lock, 0)
    os.pwrite(lock, f"{holder}\n{os.getpid()}\n".encode(), 0)


# The live preview (commands/serve.py) holds a build's locks, but sphinx-autobuild starts each of
# its Sphinx runs with no file of the preview's and no parent-death signal: a preview killed while
# Sphinx ran left that run writing the shared execution cache with no lock held (attack 8, case
# 30). The preview names here the locks a build's Sphinx holds, and its own pid; each Sphinx run
# takes the locks itself and ends with the preview (:func:`hold_preview_locks`).
PREVIEW_LOCKS, PREVIEW_PID = "BOOK_PREVIEW_LOCKS", "BOOK_PREVIEW_PID"
_preview_locks: list[int] = []  # open for the process's life (its forked readers share them)


def ancestors() -> list[int]:
    """The pids above this process, its parent first (from /proc: Linux; elsewhere none)."""
    found, pid = [], os.getppid()
    while pid > 1:
        found.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces and brackets
    return found


def end_with(pid: int) -> bool:
    """SIGTERM this process once process ``pid`` has ended (a pidfd, watched by a thread: no
    pid reuse can fool it); False when it has ended already."""
    import select
    import threading

    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (OSError, AttributeError):  # no pidfd (before Linux 5.3): the parent-death signal alone
        return True

    def watch() -> None:
        select.select([watched], [], [])  # readable once the process has exited
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="book-preview-watch").start()
    return True


def hold_preview_locks() -> str | None:
    """In a Sphinx run the live preview started: end with the preview, and hold the locks it
    named; or why this run must stop (one line). sphinx-autobuild starts the first run itself
    and the others from a worker process of its own: the preview is an ancestor, not always
    the parent (attack 9, case 18: every rebuild stopped)."""
    named, preview = os.environ.get(PREVIEW_LOCKS), os.environ.get(PREVIEW_PID, "")
    if not named or _preview_locks:
        return None
    end_with_parent()  # the parent: the preview, or its worker
    if not preview.isdigit() or int(preview) not in ancestors() or not end_with(int(preview)):
        return f"the live preview (pid {preview}) has ended"
    for name in named.split(os.pathsep):
        try:
            lock = hold_lock(Path(name))
        except OSError as error:
            return f"cannot lock {name}: {error.strerror or error}"
        if lock is None:
            return f"another process holds {name}: the live preview's Sphinx waits for no build; stop the preview and build"
        note_holder(lock, f"the live preview (`nox -s serve`, pid {preview})")
        _preview_locks.append(lock)
    return None
