"""Starts a page's kernel able to write only in its own folders (Linux Landlock).

A kernel runs as the build's user, so without this it could write anything the build can:
the book's sources, another page's outputs in the execution cache together with the digest
they are checked against, the published site. The executor compares the repository before
and after each page and the site before publishing, which sees a change but cannot undo
what it did not see (a cache record rewritten whole, digest and all). Here the kernel's
process, and every process it starts, gets from the Linux kernel itself a write access to
the page's scratch folder (its working folder, home and temporary files), its sockets,
``/dev`` and the build's log of writes, and to nothing else: a cell writing elsewhere
raises ``PermissionError``. Where Landlock has scopes (ABI 6), a cell may signal only the
processes it started, not the Sphinx that runs it nor the driver. Reading is not restricted.

The kernel also gets a ``/dev/shm`` of its own (:func:`private_shared_memory`), empty when it
starts and gone when it and its children end: shared memory and named semaphores a cell leaves
there (torch's, multiprocessing's) outlived the build, and a later page could read them
(attack 5, case 5). Where Linux lets no mount namespace be made (a container without
``CAP_SYS_ADMIN`` nor user namespaces), it shares the machine's as before.

The executor starts the kernel's command through :func:`wrapped`, with the kernel's
environment. Where the Linux kernel has no Landlock
(before 5.13, or turned off) the command runs as it is, and the executor's comparisons are
the only guard: :func:`abi` says which.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

# linux/landlock.h (the syscall numbers are the same on x86-64 and arm64).
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKES = sum(1 << bit for bit in range(6, 13))  # char, dir, regular file, socket, fifo, block, symlink
REFER, TRUNCATE = 1 << 13, 1 << 14  # Landlock ABI 2 and 3
SCOPE_SIGNAL = 1 << 1  # Landlock ABI 6: signals only to processes in the same sandbox


# Set to "off" in the build's environment: kernels and doctests may write anywhere the build can,
# as where Linux has no Landlock; the tests of the executor's comparisons, the guard that remains
# then, use it.
VARIABLE = "BOOK_KERNEL_SANDBOX"


def turned_off() -> bool:
    return os.environ.get(VARIABLE) == "off"


def _syscall():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi() -> int:
    """The Landlock ABI version this Linux kernel offers; 0: none."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _syscall().syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def handled(version: int) -> int:
    """Every way of changing the file system this ABI can refuse (reading is left alone)."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKES
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    return rights


def restrict(writable: list[str]) -> bool:
    """Allow this process and its children to change only what is under ``writable`` (folders,
    or files: a file may be written, not replaced). False where Landlock is missing."""
    version = abi()
    if not version:
        return False
    libc, rights = _syscall(), handled(version)
    # From ABI 6 a signal is scoped too: a cell cannot stop (SIGSTOP) or kill the Sphinx that
    # runs it, or the build driver, only the processes it started itself (attack 6, case 17).
    attr = struct.pack("=QQQ", rights, 0, SCOPE_SIGNAL) if version >= 6 else struct.pack("=Q", rights)
    ruleset = libc.syscall(CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for path in writable:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                allowed = rights if os.path.isdir(path) else rights & (WRITE_FILE | TRUNCATE)
                rule = struct.pack("=Qi", allowed, fd)
                if libc.syscall(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                                ctypes.c_char_p(rule), ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
            finally:
                os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 or \
                libc.syscall(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return True


# <sched.h>, <sys/mount.h>
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 1 << 1, 1 << 2, 1 << 14, 1 << 18
SHARED_MEMORY = b"/dev/shm"


def private_shared_memory() -> str | None:
    """Mount an empty ``/dev/shm`` seen only by this process and the ones it starts (a mount
    namespace of its own; a user namespace too, for a user without ``CAP_SYS_ADMIN``). None, or
    why not. Call it while the process has one thread: a threaded process cannot enter a user
    namespace."""
    if not sys.platform.startswith("linux") or not os.path.isdir(SHARED_MEMORY):
        return "no /dev/shm"
    libc = _syscall()
    uid, gid = os.geteuid(), os.getegid()
    problem = None
    for flags in ([CLONE_NEWNS] if uid == 0 else []) + [CLONE_NEWUSER | CLONE_NEWNS]:
        if libc.unshare(ctypes.c_int(flags)) == 0:
            break
        problem = f"unshare: {os.strerror(ctypes.get_errno())}"
    else:
        return problem
    if flags & CLONE_NEWUSER:  # the same user and group inside as outside
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    # Private first, or the mount would reach the machine's namespace through shared propagation.
    if libc.mount(b"none", b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None) < 0 or \
            libc.mount(b"tmpfs", SHARED_MEMORY, b"tmpfs", ctypes.c_ulong(MS_NOSUID | MS_NODEV), b"mode=1777") < 0:
        return f"mount: {os.strerror(ctypes.get_errno())}"
    return None


def wrapped(python: str, writable: list[str], command: list[str]) -> list[str]:
    """``command`` run by ``python`` (which imports this package: the kernel's, with the staged
    kernel package on its path) once it has restricted itself to ``writable``. Not a program of
    its own: a function the executor puts in front of the kernel's command."""
    return [python, "-c", "import sys; from book_extensions.kernel.sandbox import run; run(sys.argv[1:])",
            *[part for path in writable for part in ("--writable", path)], "--", *command]


def run(argv: list[str]) -> None:
    """``[--writable PATH]... -- COMMAND...``: restrict this process, then become COMMAND."""
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    private_shared_memory()  # else the machine's, as where Linux allows no namespace
    restrict([options[i + 1] for i, option in enumerate(options) if option == "--writable"])
    os.execvp(command[0], command)
