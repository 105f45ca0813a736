"""Runs the "Check yourself" doctests' examples, in processes of their own; the build compares.

The doctest builder (:mod:`.doctests`) runs this file's text (``python -c``: the repository is
not on a kernel's path) with a page kernel's environment and rights (:mod:`..kernel.sandbox`), as
:func:`serve_pages`. That process runs no example: it imports torch once, then, for each page,
receives a socket on its control socket and forks a process that serves the page on it and
nothing else, so no example can reach another page's examples, their answers or their judge.

A page's process answers first with its process id (``{"pid"}``, its own process group, which
the builder ends with the page), then reads one request per line, ``{"id", "block", "source",
"name"}``, runs ``source`` as doctest does (one interactive statement, in the page's one
namespace, what it prints captured, ``from __future__`` imports of earlier blocks in force)
and answers each with one line, ``{"id", "printed", "exception"}``: ``exception`` is null or
``{"message", "traceback"}``, the exception's lines as doctest compares them and the whole
traceback for the report. What an example writes to the descriptors 1 and 2 goes to the
build's log of these processes, never into an answer.

It judges nothing: Sphinx's process compares each answer with the page. Examples of one page
share a process, as they share a namespace: one of them could answer for those after it on
the same page, never for another page's.
"""

import __future__

import ctypes
import io
import json
import os
import signal
import socket
import sys
import tempfile
import traceback

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def exception_message(kind: type, value: BaseException) -> str:
    """The exception as doctest compares it: from the line that names its type to the end (its
    message, and any notes); a SyntaxError's caret lines and the like are left out."""
    lines = traceback.format_exception_only(kind, value)
    names = (kind.__qualname__, f"{kind.__module__}.{kind.__qualname__}")
    for index, line in enumerate(lines):
        if line.rstrip("\n") in names or line.startswith(tuple(f"{name}:" for name in names)):
            return "".join(lines[index:])
    return lines[-1]


def future_flags(namespace: dict) -> int:
    """The compiler flags of the ``from __future__`` imports an earlier block made (doctest
    reads them once per block)."""
    return sum(feature.compiler_flag for name in __future__.all_feature_names
               if namespace.get(name) is (feature := getattr(__future__, name)))


def run(source: str, name: str, namespace: dict, flags: int) -> dict:
    printed = io.StringIO()
    real = sys.stdout
    sys.stdout = printed
    try:
        exec(compile(source, name, "single", flags, True), namespace)  # noqa: S102
        exception = None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # as doctest does: SystemExit is an example's outcome too
        exception = {"message": exception_message(type(error), error),
                     "traceback": "".join(traceback.format_exception(type(error), error, error.__traceback__.tb_next))}
    finally:
        sys.stdout = real
    text = printed.getvalue()
    # doctest's rule: anything printed ends with a newline.
    return {"printed": text if not text or text.endswith("\n") else text + "\n", "exception": exception}


def serve_page(connection: socket.socket) -> None:
    """One page's examples, in order, on ``connection``, until the builder closes it."""
    stream = connection.makefile("rwb")
    stream.write(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    stream.flush()
    namespace, block, flags = {}, None, 0  # as Sphinx's doctest builder: an empty namespace
    for line in stream:
        request = json.loads(line)
        if request["block"] != block:
            block, flags = request["block"], future_flags(namespace)
        answer = run(request["source"], request["name"], namespace, flags)
        stream.write(json.dumps({"id": request["id"], **answer}).encode() + b"\n")
        stream.flush()


def serve_pages(control_fd: int) -> None:
    """Fork a process per page socket received on ``control_fd``, until it closes."""
    control = socket.socket(fileno=control_fd)
    # What an example prints past sys.stdout goes to the log, never to an answer.
    sys.stdin = open(os.devnull, encoding="utf8")  # noqa: SIM115
    os.dup2(2, 1)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
    os.umask(0o022)
    try:  # imported once, here, so that each page's process starts with it loaded
        import torch

        device = os.environ.get("BOOK_DEVICE", "cpu")
        if device != "cpu":  # as a page's kernel does (startup.py)
            torch.set_default_device(device)
        # An optimizer's first step imports about a second's worth of modules (torch.compile's,
        # which it is wrapped in): once here rather than on every page that steps one.
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1).step()
    except ImportError:
        pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the pages' processes end without a wait
    # What an example starts in a session of its own outlives its page's process group: orphaned,
    # it comes to this process, where the builder finds it once the page has ended (its page then
    # fails) instead of leaving it to run into the next page's (attack 9, cases 5 and 6).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    work = os.getcwd()
    while True:
        message, fds, _, _ = socket.recv_fds(control, 16, 1)
        if not message:
            return
        if os.fork() == 0:
            try:
                control.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an example's subprocesses are waited for
                os.setpgid(0, 0)
                ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                os.chdir(tempfile.mkdtemp(prefix="page-", dir=work))
                serve_page(socket.socket(fileno=fds[0]))
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
