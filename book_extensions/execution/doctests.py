"""The "Check yourself" doctests: the ``doctest`` directive and the builder that checks them.

Each page's examples run in a process of their own (:mod:`.doctest_examples`), forked
from one that imported torch and runs no example, all with a page kernel's environment and
rights (:mod:`..kernel.sandbox`): an example can neither change the book's sources, the cache
or the site, nor reach another page's examples or the process that judges them. That process
is this one: it sends each example, compares what the example printed or raised with what the
page shows (Python's ``doctest.OutputChecker``, with ``doctest_default_flags`` and the block's
and the example's own options), and reports each difference as a warning naming the page and
line, and in ``output.txt``, whose count of failures the build driver reads too. An example
that ends its page's process, outlasts the build's timeout, or answers out of turn fails where
it stands, and the page's later examples do not run.

Why not ``sphinx.ext.doctest``: it runs the examples in Sphinx's own process, where one example
can forge the verdict on all (write the summary and end the process, or patch the runner:
attack 7, cases 1 and 2). The directive is its ``doctest`` for what the book uses
(``:options:``); the other directives of that extension are not registered, and a page that
uses one fails on it.

A page's blocks share one namespace, in the order they appear (as Sphinx's "default" group);
pages never share one, nor a process.
"""

from __future__ import annotations

import doctest
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.builders import Builder
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from .. import build_state
from ..kernel import sandbox
from . import doctest_examples, processes

logger = logging.getLogger(__name__)

# Where the examples' process keeps its files: in the builder's doctrees, emptied by each build.
FOLDER = "book-doctest-process"
SUMMARY = "Doctest summary"


class DoctestDirective(SphinxDirective):
    """```{doctest}``: an interactive session whose outputs the doctest build checks. Shown as
    a ``pycon`` block (Sphinx's ``trim_doctest_flags`` takes ``# doctest:`` marks and
    ``<BLANKLINE>`` off the page); the examples, and ``:options:`` (``+ELLIPSIS`` and the like,
    for the whole block), are kept on the node for the builder."""

    has_content = True
    option_spec = {"options": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        options = {}
        for option in self.options.get("options", "").replace(",", " ").split():
            if option[:1] not in ("+", "-") or option[1:] not in doctest.OPTIONFLAGS_BY_NAME:
                return [self.state.document.reporter.warning(
                    f"a doctest block's :options: takes doctest's flags, each after + or -, not {option!r}",
                    line=self.lineno)]
            options[doctest.OPTIONFLAGS_BY_NAME[option[1:]]] = option[0] == "+"
        node = nodes.literal_block(code, code, language="pycon")
        self.set_source_info(node)
        node["book_doctest"] = {"code": code, "options": options, "line": self.content_line()}
        return [node]


    def content_line(self) -> int:
        """The page's line of the block's first content line: after the fence and the options
        (MyST gives every directive a content offset of 0)."""
        lines, content = self.block_text.splitlines(), list(self.content)
        for start in range(1, len(lines)):
            if lines[start:start + len(content)] == content:
                return self.lineno + start
        return self.lineno


@dataclass
class Tally:
    examples: int = 0
    failures: int = 0
    pages: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # each failed example's report


# What a page's examples' process answers is at most this long (a page's cells have the
# build's output limit; an answer is JSON, with a traceback).
ANSWER_LIMIT = 16 * 1024 * 1024


class ExamplesServer:
    """The process that forks a process for each page's examples
    (:func:`.doctest_examples.serve_pages`), started when first needed and again after
    it ended. Its files (its working folder, its log) are kept in ``folder``, emptied now;
    ``environment`` gives its whole environment given its scratch folder (a page kernel's:
    :meth:`.PageRunner.page_environment`); in the sandbox it may write there, in
    ``writable`` and nowhere else."""

    def __init__(self, folder: Path, environment: Callable[[str], dict[str, str]], writable: list[str]) -> None:
        self.folder, self.environment, self.writable = folder, environment, writable
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.log = folder / "examples.log"

    def start(self) -> None:
        scratch = Path(tempfile.mkdtemp(prefix="examples-", dir=self.folder))
        (scratch / "work").mkdir()
        environment = self.environment(str(scratch))
        # The examples' writes are refused by the sandbox, not noted in a page's log.
        environment.pop("BOOK_WRITES_LOG", None)
        environment.pop("BOOK_WATCHED_ROOTS", None)
        environment.pop("BOOK_READS_LOG", None)  # not cached: nothing to key
        environment.pop("BOOK_KNOWN_ROOTS", None)
        # Its text, not its module: a page's kernel cannot import it (so the cache is not keyed on it).
        program = Path(doctest_examples.__file__).read_text(encoding="utf8") + "\nserve_pages(int(sys.argv[1]))\n"
        command = [sys.executable, "-c", program]
        if not sandbox.turned_off():
            command = sandbox.wrapped(sys.executable, [str(scratch), *self.writable], command)
        self.control, theirs = socket.socketpair()
        try:
            with self.log.open("ab") as log:
                self.process = subprocess.Popen(
                    [*command, str(theirs.fileno())], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    cwd=scratch / "work", env=environment, pass_fds=(theirs.fileno(),), start_new_session=True,
                    preexec_fn=processes.end_with_parent)
        finally:
            theirs.close()

    @contextmanager
    def page(self) -> Iterator[PageExamples]:
        """A process of its own for one page's examples, ended with the page."""
        ours, theirs = socket.socketpair()
        examples = PageExamples(self, ours)
        try:
            for _ in (1, 2):  # a server that an earlier page ended is started again
                if self.process is None or self.process.poll() is not None:
                    self.stop()
                    self.start()
                try:
                    socket.send_fds(self.control, [b"page"], [theirs.fileno()])
                except OSError:
                    continue
                theirs.close()
                examples.started()
                break
            else:
                examples.lost = "the examples' process did not start" + self.why_not_started()
            yield examples
        finally:
            theirs.close()
            examples.stop()

    def end_leftovers(self, page_pid: int | None) -> list[str]:
        """End what a page's examples left running (the server's descendants once the page's
        process ``page_pid`` is gone); "<pid> (<command>)" of each."""
        import psutil

        if self.process is None:
            return []
        try:
            server = psutil.Process(self.process.pid)
            deadline = time.monotonic() + 5
            while True:  # the page's process itself, killed, may take a moment to go
                left = [child for child in server.children(recursive=True)
                        if child.status() != psutil.STATUS_ZOMBIE]
                if page_pid not in [child.pid for child in left] or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        except psutil.Error:
            return []
        left = [child for child in left if child.pid != page_pid]
        named = []
        for child in left:
            with suppress(psutil.Error):
                named.append(f"{child.pid} ({(processes.command_line(child.cmdline()) or child.name())[:80]})")
                child.kill()
        psutil.wait_procs(left, timeout=5)  # gone before the next page starts
        return named

    def why_not_started(self) -> str:
        """The last line of the log, for a message."""
        try:
            lines = self.log.read_text(encoding="utf8", errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return f"; its log {self.log}" + (f" ends: {lines[-1][:200]}" if lines else " is empty")

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        self.control.close()  # it ends at the end of its requests
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class PageExamples:
    """One page's process, on ``connection``: its examples in order, each answered or failed."""

    def __init__(self, server: ExamplesServer, connection: socket.socket) -> None:
        self.server, self.connection = server, connection
        self.pid: int | None = None
        self.buffer = bytearray()
        self.lost: str | None = None  # why the process cannot answer any more

    def started(self) -> None:
        line = self.line(60)
        try:
            self.pid = int(json.loads(line)["pid"]) if line else None
        except (ValueError, KeyError, TypeError, RecursionError):
            self.pid = None
        if self.pid is None:
            self.lost = "the examples' process did not start" + self.server.why_not_started()

    def run(self, block: int, source: str, name: str, timeout: float) -> dict | str:
        """What the example printed or raised, or why there is no answer."""
        if self.lost:
            return self.lost
        request = {"id": secrets.token_hex(16), "block": block, "source": source, "name": name}
        try:
            self.connection.sendall(json.dumps(request).encode() + b"\n")
        except OSError:
            return self.lose("the example ended its page's process")
        line = self.line(timeout)
        if line is None:
            return self.lose(f"the example ran longer than the {timeout:g} s timeout")
        if line == b"":
            return self.lose("the example ended its page's process")
        if line == b"too long":
            return self.lose(f"the example's answer was longer than {ANSWER_LIMIT} bytes")
        answer = valid_answer(line, request["id"])
        if answer is None:
            return self.lose("the page's process answered other than with this example's outcome")
        return answer

    def lose(self, why: str) -> str:
        self.lost = why
        self.stop()
        return why

    def line(self, timeout: float) -> bytes | None:
        """The next line it answers; b"" at their end, b"too long" past ANSWER_LIMIT, None after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if len(self.buffer) > ANSWER_LIMIT:
                return b"too long"
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.connection], [], [], left)[0]:
                return None
            chunk = self.connection.recv(1 << 20)
            if not chunk:
                return b""
            self.buffer += chunk
        end = self.buffer.index(b"\n") + 1
        line = bytes(self.buffer[:end])
        del self.buffer[:end]
        return line

    def stop(self) -> None:
        """End the page's process and whatever its examples started in its process group."""
        self.connection.close()
        if self.pid is not None:
            with suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)


def valid_answer(line: bytes, request_id: str) -> dict | None:
    """The answer on ``line`` to the request ``request_id``, or None if it is not one."""
    try:
        answer = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(answer, dict) and answer.get("id") == request_id and isinstance(answer.get("printed"), str)):
        return None
    exception = answer.get("exception")
    if exception is not None and not (isinstance(exception, dict)
                                      and all(isinstance(exception.get(key), str) for key in ("message", "traceback"))):
        return None
    return answer


def compare(example: doctest.Example, answer: dict, flags: int) -> str | None:
    """doctest's comparison of one example's answer with the page: None when it holds, else the
    report (what was expected, what came)."""
    checker = doctest.OutputChecker()
    exception = answer["exception"]
    if exception is None:
        if checker.check_output(example.want, answer["printed"], flags):
            return None
        return checker.output_difference(example, answer["printed"], flags)
    if example.exc_msg is None:
        return "Exception raised:\n" + _indented(exception["traceback"])
    if checker.check_output(example.exc_msg, exception["message"], flags):
        return None
    if flags & doctest.IGNORE_EXCEPTION_DETAIL and checker.check_output(
            _type_only(example.exc_msg), _type_only(exception["message"]), flags):
        return None
    return checker.output_difference(example, answer["printed"] + exception["traceback"], flags)


def _type_only(message: str) -> str:
    """An exception's type without its module and its message, as doctest's
    IGNORE_EXCEPTION_DETAIL compares it (its first line only)."""
    first = message.split("\n", 1)[0]
    return first.split(":", 1)[0].rsplit(".", 1)[-1]


def _indented(text: str) -> str:
    return "".join(f"    {line}" for line in text.splitlines(keepends=True))


class DoctestBuilder(Builder):
    """``-b doctest``: every example of every page, run and compared (see the module)."""

    name = "doctest"
    epilog = "The doctests' summary is in %(outdir)s/output.txt."

    def init(self) -> None:
        self.tally = Tally()
        page_runner = build_state.run(self.env.app).page_runner
        self.examples = ExamplesServer(Path(self.doctreedir, FOLDER), page_runner.page_environment,
                                       [str(page_runner.temporary_folder()), "/dev"])
        self.parser = doctest.DocTestParser()

    def get_outdated_docs(self) -> set[str]:
        return set(self.env.found_docs)

    def get_target_uri(self, docname: str, typ: str | None = None) -> str:
        return ""

    def prepare_writing(self, docnames) -> None:
        pass

    def write_doc(self, docname: str, doctree: nodes.document) -> None:
        for unchecked in doctree.findall(nodes.doctest_block):  # reStructuredText's ">>>" paragraph
            self.fail(docname, unchecked.line, "a >>> block that is not a {doctest} block: nothing checks it; "
                                               "write it as a {doctest} block")
        blocks = [node for node in doctree.findall(nodes.literal_block) if "book_doctest" in node]
        if not blocks:
            return
        self.tally.pages.append(docname)
        with self.examples.page() as page_examples:
            for number, block in enumerate(blocks):
                if page_examples.lost:  # said once, at the example that lost it
                    break
                self.check_block(docname, number, block["book_doctest"], page_examples)
        left = self.examples.end_leftovers(page_examples.pid)
        if left:  # as a code cell's page fails for it
            self.fail(docname, blocks[0].line, f"the page's examples left processes running, now ended: {', '.join(left)}: "
                                               "an example ends what it starts")

    def check_block(self, docname: str, number: int, block: dict, page_examples: PageExamples) -> None:
        try:
            examples = self.parser.get_examples(block["code"], docname)
        except ValueError as error:
            self.fail(docname, block["line"], f"a doctest block cannot be read: {error}")
            return
        if not examples:
            self.fail(docname, block["line"], "a doctest block holds no example (no line starts with >>>)")
        for example in examples:
            flags = self.config.doctest_default_flags
            for flag, on in {**block["options"], **example.options}.items():
                flags = flags | flag if on else flags & ~flag
            if flags & doctest.SKIP:
                continue
            self.tally.examples += 1
            line = block["line"] + example.lineno
            answer = page_examples.run(number, example.source, f"<doctest {docname}.md:{line}>",
                                       float(self.config.nb_execution_timeout))
            if isinstance(answer, str):
                # The names the page made are gone with its process: its later examples would
                # fail for that alone, and are not run.
                report = f"{answer}; the page's examples after it did not run"
            else:
                report = compare(example, answer, flags)
            if report is not None:
                self.fail(docname, line, "a doctest failed:", f"Failed example:\n{_indented(example.source)}{report.rstrip()}")
            if page_examples.lost:
                return

    def fail(self, docname: str, line: int, what: str, detail: str = "") -> None:
        """A warning naming the page and line (the build fails on it), and the failure in the
        output, where the driver counts failures and commands/gpu_checks.py reads them (as
        Sphinx's doctest builder wrote them)."""
        self.tally.failures += 1
        logger.warning(f"{what}\n{detail}" if detail else what, location=(docname, line), type="book",
                       subtype="doctest")
        page = Path(self.env.doc2path(docname)).relative_to(self.srcdir).as_posix()
        self.tally.failed.append(f'File "{page}", line {line}, in default\n{detail or what}\n')

    def finish(self) -> None:
        self.examples.stop()
        tally = self.tally
        Path(self.outdir).mkdir(parents=True, exist_ok=True)
        Path(self.outdir, "output.txt").write_text(
            "".join(f"{'*' * 70}\n{failure}" for failure in tally.failed) +
            f"{SUMMARY}\n{'=' * len(SUMMARY)}\n{tally.examples:5} tests in {len(tally.pages)} pages\n"
            f"{tally.failures:5} failures\n", encoding="utf8", errors="backslashreplace")

    def cleanup(self) -> None:
        self.examples.stop()


def choose_outputs_as_html_does(app: Sphinx) -> None:
    """``builder-inited``: a page is resolved for this builder as for any other, and myst-nb,
    which picks each output's MIME type by the builder's name, has no list for this one (it
    shows no output, so any choice does): html's."""
    if app.builder.name == DoctestBuilder.name:
        from myst_nb.core.render import base_render_priority

        app.config.nb_mime_priority_overrides = [
            *app.config.nb_mime_priority_overrides,
            *((DoctestBuilder.name, mime, rank) for mime, rank in base_render_priority()["html"].items())]


def setup(app: Sphinx) -> None:
    app.add_directive("doctest", DoctestDirective)
    app.connect("builder-inited", choose_outputs_as_html_does)
    app.add_builder(DoctestBuilder)  # its flags: configuration/settings.py's doctest_default_flags
