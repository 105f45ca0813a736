"""Names the files and folders a page's kernel reads outside what the cache key already
covers; the executor loads it.

The execution cache is keyed on the page's code and the kernel's inputs
(:mod:`book_extensions.execution.kernel_inputs`), not on a file a cell opens by its path: a cell
that prints a file of the build machine (or of the repository), or imports a module from
a folder it puts on ``sys.path``, kept its old output after that file changed, and the
build said "unchanged" (attack 11, cases 5 and 7). This audit hook
(:func:`sys.addaudithook`) notes each path the kernel opens, or whose folder it lists,
outside the folders whose contents are keyed or neutralised: the kernel's Python
(its prefixes: the toolchain), its ``PYTHONPATH`` (the staged kernel package, keyed entries),
the page's own folders (scratch, home, the build's temporary files) and the system's
(``/usr``, ``/etc``, ``/proc``...), each path taken where it leads (its links and ``..``
followed: a link in one of those folders to a file elsewhere is noted by its target). After
each cell, every module imported from outside those folders is noted by its file too: an
import served from a ``.pyc``, or a compiled extension, opens no source a hook sees.
The paths go into the page's log, separated by NUL; the executor digests each when the page
ends and keeps the digests with the page's cached outputs, so that a later build whose
digests differ executes the page again (and reads it again).

Not seen: what a C library or another program a cell runs reads (``!cat file``), and a
file opened relative to a folder's descriptor (``dir_fd``). CONTRIBUTING says so.

Set by the executor: ``BOOK_READS_LOG`` (the page's log) and ``BOOK_KNOWN_ROOTS`` (the page's
own folders, ``os.pathsep``-separated).
"""

import importlib.util
import os
import sys
from contextlib import suppress

# The system's folders: their files are the machine's, read by every program (fonts, time
# zones, /proc); a change there is a change of machine, which the key does not promise to see.
_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/run")
# What the key holds of a plain folder on PYTHONPATH (execution/kernel_inputs.py's
# path_entry_digest): its modules and .pth files, not the data files beside them.
_IMPORTED = (".py", ".pyc", ".pth", ".so")
# Audit events that name a file or folder a cell reads from, by the position of its path.
_READ_EVENTS = {"open": 0, "os.listdir": 0, "os.scandir": 0, "ctypes.dlopen": 0, "sqlite3.connect": 0}


def _roots(paths) -> tuple:
    """Each folder as given and as resolved, ending in a separator."""
    return tuple({os.path.join(form(r), "") for r in paths for form in (os.path.abspath, os.path.realpath)})


def _writes_only(mode, flags) -> bool:
    """Whether an ``open`` audit event's mode (open()'s) or flags (os.open's) only write."""
    if isinstance(mode, str):
        return "r" not in mode and "+" not in mode
    return isinstance(flags, int) and flags & os.O_ACCMODE == os.O_WRONLY


def _install() -> None:
    log_path = os.environ.get("BOOK_READS_LOG")
    if not log_path:
        return
    own = _roots(r for r in os.environ.get("BOOK_KNOWN_ROOTS", "").split(os.pathsep) if r)
    entries = [r for r in os.environ.get("PYTHONPATH", "").split(os.pathsep) if r]
    # An entry that is a file (a zip) is keyed whole; of a folder, plain or of installed packages
    # (the GPU job's wheels), only its modules are, and the names of its packages' metadata
    # (execution/kernel_inputs.py's path_entry_digest): a data file there is noted (attack 12,
    # cases 3 and 32; attack 13, case 5b).
    whole = [r for r in entries if os.path.isfile(r)]
    modules_only = _roots(r for r in entries if r not in whole)
    entry_folders = {os.path.realpath(r) for r in entries if r not in whole}
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    known = _roots((*_SYSTEM, *prefixes, *whole)) + own
    # Opened before the hook exists, so the hook's own writes are not audited; O_APPEND keeps
    # the entries of the kernel's threads whole.
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    noted = set()
    swept = set()  # the module files imported() has looked at: each once

    def write(path: str) -> None:
        if path not in noted:
            noted.add(path)
            os.write(log, path.encode(errors="surrogateescape") + b"\0")

    def note(path, listed: bool = False) -> None:
        if isinstance(path, int):  # a file descriptor: its path was noted when it was opened
            return
        # Where the path leads, links and ".." followed in order: "/proc/self/root/<file>", or
        # "link/../<file>" in the page's own folder, named a file outside by a path inside
        # (attack 12, cases 2, 12, 31).
        given = os.path.abspath(os.fsdecode(path))
        target = os.path.realpath(given)
        within = os.path.join(target, "")
        if within.startswith(known):
            return
        # In a folder on PYTHONPATH, a module (and a folder the import system lists: the entry,
        # a package; or one that is not there, as torch looks for CUDA's libraries on every
        # entry) is keyed, a data file (or a folder of them) is not: it is noted.
        if within.startswith(modules_only) and (
                target.endswith(_IMPORTED) if not listed else
                target in entry_folders or not os.path.isdir(target)
                or os.path.isfile(os.path.join(target, "__init__.py"))):
            return
        write(target)
        # A link on the way, outside the page's folders: pointed elsewhere, it changes what
        # the page reads while its old target stays the same (attack 13, case 1).
        if given != target and not os.path.join(given, "").startswith(known):
            write(given)
        # A module loaded from its .pyc, which the import system checks against the source's
        # time (attack 13, case 4c: exec_module of a spec from a file location).
        if target.endswith(".pyc") and os.path.basename(os.path.dirname(target)) == "__pycache__":
            with suppress(ValueError):
                write(importlib.util.source_from_cache(target))

    def hook(event: str, args: tuple) -> None:
        position = _READ_EVENTS.get(event)
        if position is not None and args:
            path = args[position]
            if event == "open" and _writes_only(*args[1:3]):
                return  # a file written, not read (the import system's .pyc.<id> while it writes one)
            if event in ("os.listdir", "os.scandir") and path is None:
                path = "."  # the working folder, which a cell may have changed
            if isinstance(path, str | bytes | os.PathLike):
                note(path, listed=event in ("os.listdir", "os.scandir"))

    def imported(*_) -> None:
        """After each cell: the files of the modules imported from outside the known folders."""
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path not in swept:
                swept.add(path)
                note(path)

    sys.addaudithook(hook)
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:  # in a kernel: after each cell
        shell.events.register("post_run_cell", imported)


_install()
