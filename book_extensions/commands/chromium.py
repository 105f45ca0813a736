"""Chromium for the book's tools and tests: where it is, how it starts, and a local server.

The browser tests, the benchmarks (weight, lighthouse) and the PDF edition all drive the
same Chromium with the same flags, and open the built site from the same server.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# Headless Chromium on a machine whose network is closed, as root.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str:
    """$CHROMIUM (GitHub's runners carry Google Chrome), else Debian's chromium."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A browser that moves on to the next page drops the responses it no longer needs.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(site: Path, handler: type[QuietHandler] = QuietHandler) -> Iterator[str]:
    """Serve a built site on 127.0.0.1 with ``handler``; yields its base URL."""
    server = QuietServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
