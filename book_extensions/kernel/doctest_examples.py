"""Runs the "Check yourself" doctests' examples, in a process of their own; the build compares.

Started by the doctest builder (:mod:`..execution.doctests`) with a page kernel's environment
and rights (:mod:`.sandbox`). It reads one request per line on its standard input, a JSON
object ``{"id", "namespace", "source", "name"}``, runs ``source`` as doctest does (compiled
as one interactive statement, in the namespace named ``namespace``, made empty the first time,
what it prints captured) and answers on the descriptor given as its one argument, one JSON
line per request: ``{"id", "printed", "exception"}``, where ``exception`` is null or
``{"message", "traceback"}``: the exception's last line or lines as doctest compares them, and
the whole traceback for the report. Whatever an example writes to the descriptors 1 and 2
goes to the build's log of this process, not into an answer.

It judges nothing: what it answers is compared with the page in the builder's process, which
no example can reach, and an answer must carry the id of the request it answers, which an
example does not know before it runs.
"""

import __future__

import io
import json
import os
import sys
import traceback


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
    """The compiler flags of the ``from __future__`` imports an earlier example made."""
    return sum(feature.compiler_flag for name in __future__.all_feature_names
               if namespace.get(name) is (feature := getattr(__future__, name)))


def run(source: str, name: str, namespace: dict) -> dict:
    printed = io.StringIO()
    real = sys.stdout
    sys.stdout = printed
    try:
        exec(compile(source, name, "single", future_flags(namespace), True), namespace)  # noqa: S102
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


def answer_requests(answers_fd: int) -> None:
    answers = os.fdopen(answers_fd, "w", encoding="utf8")
    requests = sys.stdin
    # What an example prints past sys.stdout goes to the log, never to the answers or the requests.
    sys.stdin = open(os.devnull, encoding="utf8")  # noqa: SIM115
    os.dup2(2, 1)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
    os.umask(0o022)
    device = os.environ.get("BOOK_DEVICE", "cpu")
    if device != "cpu":  # as a page's kernel does (startup.py)
        import torch

        torch.set_default_device(device)
    namespaces: dict[str, dict] = {}
    for line in requests:
        request = json.loads(line)
        namespace = namespaces.setdefault(request["namespace"], {})  # as Sphinx's doctest builder
        answer = run(request["source"], request["name"], namespace)
        answers.write(json.dumps({"id": request["id"], **answer}) + "\n")
        answers.flush()

