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
(``/usr``, ``/etc``, ``/proc``...). One line a path, in the page's log; the executor digests each
noted path when the page ends and keeps the digests with the page's cached outputs, so that
a later build whose digests differ executes the page again (and Sphinx reads it again).

What a C library or another program a cell runs reads passes no audit hook: those reads
stay unkeyed (CONTRIBUTING says so).

Set by the executor: ``BOOK_READS_LOG`` (the page's log) and ``BOOK_KNOWN_ROOTS`` (the page's
own folders, ``os.pathsep``-separated).
"""

import os
import sys

# The system's folders: their files are the machine's, read by every program (fonts, time
# zones, /proc); a change there is a change of machine, which the key does not promise to see.
_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/run")
# Audit events that list a folder: its names can be a page's output too.
_LISTINGS = ("os.listdir", "os.scandir")


def _install() -> None:
    log_path = os.environ.get("BOOK_READS_LOG")
    if not log_path:
        return
    own = [r for r in os.environ.get("BOOK_KNOWN_ROOTS", "").split(os.pathsep) if r]
    python_path = [r for r in os.environ.get("PYTHONPATH", "").split(os.pathsep) if r]
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    known = tuple(os.path.join(os.path.realpath(r), "") for r in (*_SYSTEM, *prefixes, *python_path, *own))
    known += tuple(os.path.join(os.path.abspath(r), "") for r in (*prefixes, *python_path, *own))
    # Opened before the hook exists, so the hook's own writes are not audited; O_APPEND keeps
    # the lines of the kernel's threads whole.
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    noted = set()

    def note(path) -> None:
        if isinstance(path, int):  # a file descriptor: its path was noted when it was opened
            return
        path = os.path.abspath(os.fsdecode(path))
        if path in noted or os.path.join(path, "").startswith(known):
            return
        noted.add(path)
        os.write(log, f"{path}\n".encode(errors="surrogateescape"))

    def hook(event: str, args: tuple) -> None:
        if event == "open" or event in _LISTINGS:
            if args and args[0] is not None:
                note(args[0])

    sys.addaudithook(hook)


_install()
