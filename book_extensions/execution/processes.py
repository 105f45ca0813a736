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
import signal
import sys
from contextlib import suppress

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


def end_with_parent() -> None:
    """SIGTERM this process when its parent dies: ``preexec_fn`` of a child that must not outlive it."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


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
