"""The locks a build (or the live preview) holds for its whole run, so that one build at a time
writes an execution cache and an output folder (:func:`hold_build_locks`)."""

from __future__ import annotations

import argparse
import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..execution.processes import hold_lock, note_holder

LOCK = "book-build.lock"
# Beside each: the lock Sphinx and its parallel readers hold (pass_fds), so that a driver killed
# while they run leaves it held until they are gone. Not the driver's own: a flock belongs to the
# open file, and a doctest example, which runs in Sphinx's process, released the inherited one
# (flock LOCK_UN) and let a second build write the same cache and folder (attack 7, case 21).
PROCESSES_LOCK = "book-build-processes.lock"


@dataclass
class BuildLocks:
    kept: list[int] = field(default_factory=list)  # the driver's, never passed on
    passed: list[int] = field(default_factory=list)  # for Sphinx and its readers

    def close(self) -> None:
        for lock in (*self.kept, *self.passed):
            os.close(lock)
        self.kept, self.passed = [], []


def hold_build_locks(args: argparse.Namespace, holder: str = "") -> tuple[BuildLocks, str | None]:
    """What a build holds for its whole run, or the one line that says why it cannot start: a lock
    in its execution cache and one in its output folder (two builds writing one jupyter-cache, or
    one output folder, at once can corrupt it), and a shared lock on the Python environment it runs
    from, so that no session updates it meanwhile (:func:`.toolchain.hold_shared`); each twice, one
    the driver keeps and one its Sphinx processes hold (:data:`PROCESSES_LOCK`). The live
    preview takes the same (:mod:`.serve`, ``holder``: how a refused build names it)."""
    from .toolchain import ToolchainError, hold_shared

    device_dir = args.out / args.device
    locks = BuildLocks()
    problem = None
    for folder, option, using in ((args.cache_root, "--cache-root", f"using the execution cache {args.cache_root}"),
                                  (device_dir, "--out", f"writing {device_dir}")):
        for name, held in ((LOCK, locks.kept), (PROCESSES_LOCK, locks.passed)):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                problem = f"cannot write {folder}: {error.strerror or error}"
                break
            try:
                lock = hold_lock(folder / name)
            except OSError as error:
                # A folder in its place, a file made read-only or immutable, a link (ELOOP).
                reason = "it is a link: remove it" if error.errno == errno.ELOOP else error.strerror or error
                problem = f"cannot lock {folder / name}: {reason}"
                break
            if lock is None:
                problem = busy(folder / name, using, option, preview=bool(holder))
                break
            # Who holds it and its process, for a refused build to say (a preview execs into
            # sphinx-autobuild: the same process).
            note_holder(lock, holder)
            held.append(lock)
        if problem is not None:
            break
    if problem is None:
        try:
            for held in (locks.kept, locks.passed):
                shared = hold_shared()
                held += [shared] if shared is not None else []
        except ToolchainError as error:
            problem = str(error)
    if problem is not None:
        locks.close()
    return locks, problem


def busy(lock: Path, using: str, option: str, preview: bool) -> str:
    """Why a build (or, with ``preview``, the live preview) cannot take a lock that is held."""
    try:
        holder, _, pid = lock.read_text(encoding="utf8").partition("\n")
    except (OSError, UnicodeDecodeError):
        holder, pid = "", ""
    holder, pid = holder.strip(), pid.strip()
    if pid.isdigit() and not process_exists(int(pid)):
        # A driver killed with SIGKILL leaves Sphinx and its kernels, which inherited its lock,
        # running until their cell ends.
        left = holders_of(lock)
        return (f"processes left by a build that was killed ({', '.join(left) or 'gone by now'}) are still {using}: "
                f"they end when their cell does" + (f", or end them now: kill {' '.join(p.split()[0] for p in left)}"
                                                     if left else ""))
    who = holder or "another build"
    if preview:
        return f"{who} is {using}: wait for it to finish, then start the preview again"
    if holder:
        return f"{who} is {using}: stop it, or give this build its own {option}"
    return f"another build is {using}: wait for it to finish, or give this one its own {option}"



def process_exists(pid: int) -> bool:
    import psutil

    return psutil.pid_exists(pid)


def holders_of(lock: Path) -> list[str]:
    """"<pid> (<name>)" of each process that holds ``lock`` open."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "name"]):
        try:
            if any(f.path == str(lock) for f in process.open_files()):
                found.append(f"{process.info['pid']} ({process.info['name']})")
        except psutil.Error:
            continue
    return found
