"""Names the files a page's kernel writes in the book's repository; the executor loads it.

A page may write only in its working folder. The executor compares the repository's
files before and after each page, which sees every change but cannot tell, when pages
run at the same time (parallel readers), which of them made it. This audit hook
(:func:`sys.addaudithook`) notes every file under the watched folders that the kernel opens
for writing, renames, removes or creates, or whose mode, owner or times it changes, one line
per path, in the page's own log (which, in the sandbox, no other page's kernel can write):
the message of every page that saw the change then names the page that made it. A note
excuses nothing (a write the sandbox refused is noted too): each page that saw a change fails.

Writes by other programs a cell runs (a shell command) pass no audit hook: for those the
comparison alone tells, and names nobody.

Set by the executor: ``BOOK_WRITES_LOG`` (the page's log) and ``BOOK_WATCHED_ROOTS`` (the
folders, ``os.pathsep``-separated).
"""

import os
import sys

# Flags of an open() that can change a file.
_CHANGES = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# Audit events that change what is at a path: the positions of those paths in their arguments.
_CHANGED_PATHS = {"os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.truncate": (0,),
                  "os.utime": (0,), "shutil.rmtree": (0,), "os.rename": (0, 1), "os.link": (1,),
                  "os.symlink": (1,), "os.chmod": (0,), "os.chown": (0,), "os.chflags": (0,)}


def _install() -> None:
    log_path = os.environ.get("BOOK_WRITES_LOG")
    roots = tuple(os.path.join(r, "") for r in os.environ.get("BOOK_WATCHED_ROOTS", "").split(os.pathsep) if r)
    if not (log_path and roots):
        return
    # Opened before the hook exists, so the hook's own writes are not audited; O_APPEND keeps
    # the lines of the kernel's threads whole.
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(path) -> None:
        if isinstance(path, int):  # a file descriptor: its path was noted when it was opened
            return
        path = os.path.abspath(os.fsdecode(path))
        if path.startswith(roots):
            os.write(log, f"{path}\n".encode(errors="surrogateescape"))

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            if args[2] & _CHANGES:
                note(args[0])
        elif event in _CHANGED_PATHS:
            for position in _CHANGED_PATHS[event]:
                note(args[position])

    sys.addaudithook(hook)


_install()
