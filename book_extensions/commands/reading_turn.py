"""The reading turn: the languages of an html build run their Sphinx at once, but read their
pages (where pages execute) one after the other, in conf.py's order (:class:`ReadingTurn`)."""

from __future__ import annotations

import os
from pathlib import Path


class ReadingTurn:
    """Languages build at once, but read their pages one after the other, in conf.py's order.

    Reading is where pages execute, and every language's pages are one execution: the first
    language runs a changed page and the others take its outputs from the cache, instead of
    running it at once. The rest (starting Sphinx, writing, the steps after) overlaps. Each
    language's Sphinx holds its turn, a lock the driver takes before any of them starts,
    until it has read its pages; it waits for the turn before its own to be given up (the
    previous language read, failed or was unchanged) before it reads
    (:func:`..execution.page_execution.wait_for_reading_turn`). Sphinx is told both through
    settings (configuration/settings.py's ``book_reading_turn_fd`` and ``book_reading_after``),
    passed with -D: :meth:`settings`."""

    def __init__(self, path: Path, after: Path | None) -> None:
        import fcntl

        self.path, self.after = path, after
        self.fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)  # this build holds the output folder: nobody else waits

    def fds(self) -> tuple[int, ...]:
        return () if self.fd is None else (self.fd,)

    def settings(self) -> dict[str, str]:
        """The settings that tell Sphinx its turn: the lock it holds (this descriptor, passed
        to it), and the lock file of the language before it ("": none)."""
        return {"book_reading_turn_fd": "" if self.fd is None else str(self.fd),
                "book_reading_after": "" if self.after is None else str(self.after)}

    def overrides(self) -> list[str]:
        return [argument for name, value in self.settings().items() for argument in ("-D", f"{name}={value}")]

    def handed_over(self) -> None:
        """Sphinx holds the lock now (the same open file): it ends with its reading, or its life."""
        self.give_up()

    def give_up(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
