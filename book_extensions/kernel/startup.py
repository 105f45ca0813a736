"""Run by every notebook kernel of the book before the page's first cell.

The build points ``PYTHONSTARTUP`` here, so pages stay as a reader would write them:
no device plumbing and no output tweaks in visible code. The execution cache key
includes a hash of this file, so changing it re-executes every page.
"""

import os
import sys
import warnings

from IPython import get_ipython

# A traceback's frames point into the kernel's temporary files and the build
# machine's virtualenv; the book shows the exception line, as readers quote it.
get_ipython().run_line_magic("xmode", "Minimal")


def _format_warning(message, category, filename, lineno, line=None):
    # The default format starts with the path of the file that warned.
    return f"{category.__name__}: {message}\n"


warnings.formatwarning = _format_warning

# ipykernel sends what a cell prints in chunks, every 0.2 s; where a chunk ends depends
# on timing, so two runs could record a cell's output differently. Flush once, when the
# cell ends, instead.
for _stream in (sys.stdout, sys.stderr):
    if hasattr(_stream, "flush_interval"):
        _stream.flush_interval = 3600.0

# Files a page writes get the same permissions whatever the build's umask (a cell may show
# them), and a page sees the same open-file limit whatever the shell's `ulimit -n`.
os.umask(0o022)
try:
    import resource as _resource

    _hard = _resource.getrlimit(_resource.RLIMIT_NOFILE)[1]
    _resource.setrlimit(_resource.RLIMIT_NOFILE, (1024 if _hard == _resource.RLIM_INFINITY else min(1024, _hard), _hard))
    del _resource, _hard
except (ImportError, ValueError, OSError):  # not POSIX, or not allowed: left as it is
    pass

_device = os.environ.get("BOOK_DEVICE", "cpu")
if _device != "cpu":
    import torch

    torch.set_default_device(_device)

del os, sys, warnings, get_ipython, _format_warning, _device, _stream

# Notes the files the page writes in the book's repository, so that the build blames the
# page that wrote them (kernel/writes.py); binds no name a cell could use.
__import__("book_extensions.kernel.writes")
# Notes the files the page reads outside the folders the cache key covers, so that a change
# to one executes the page again (kernel/reads.py).
__import__("book_extensions.kernel.reads")
