"""The "Check yourself" doctests: the ``doctest`` directive and the builder that checks them.

A block's examples run in a process of their own (:mod:`..kernel.doctest_examples`), started
with a page kernel's environment and rights: it may write only its own folders
(:mod:`..kernel.sandbox`), so an example can neither change the book's sources, the cache or
the site, nor reach the process that judges it. That process is this one: it sends each
example, compares what the example printed or raised with what the page shows (Python's
``doctest.OutputChecker``, with conf.py's ``doctest_default_flags`` and the block's and the
example's own options), and reports each difference as a warning naming the page and line,
which fails the build. An example that ends its process, or outlasts the build's timeout, fails
where it stands; the examples after it run in a new process.

Why not ``sphinx.ext.doctest``: it runs the examples in Sphinx's own process, where one example
can forge the verdict on all of them (write the summary and end the process, or patch the
runner: attack 7, cases 1 and 2). The directive is the same as its ``doctest`` for what the
book uses (``:options:``); the other directives of that extension are not registered, and a
page that uses one fails on it.

Each page's blocks share one namespace, in the order they appear (as Sphinx's "default" group);
pages never share one. The summary goes to ``output.txt`` in the builder's folder.
"""

from __future__ import annotations

import doctest
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
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


class ExamplesProcess:
    """The process that runs examples (:mod:`..kernel.doctest_examples`), started when first
    needed and again after one ends it. Its files (its working folder, its log) are kept in
    ``folder``, emptied now; ``environment`` gives its whole environment given that folder's
    scratch folder (a page kernel's: :meth:`.PageRunner.page_environment`), and in the
    sandbox it may write there, in ``writable`` and nowhere else."""

    def __init__(self, folder: Path, environment: Callable[[str], dict[str, str]], writable: list[str]) -> None:
        self.folder, self.environment, self.writable = folder, environment, writable
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.process: subprocess.Popen | None = None
        self.answers = None
        self.log = folder / "examples.log"

    def start(self) -> None:
        scratch = Path(tempfile.mkdtemp(prefix="examples-", dir=self.folder))
        (scratch / "work").mkdir()
        environment = self.environment(str(scratch))
        # The examples' writes are refused by the sandbox, not noted in a page's log.
        environment.pop("BOOK_WRITES_LOG", None)
        environment.pop("BOOK_WATCHED_ROOTS", None)
        command = [sys.executable, "-c", "import sys; from book_extensions.kernel.doctest_examples import answer_requests; "
                   "answer_requests(int(sys.argv[1]))"]
        if not sandbox.turned_off():
            command = sandbox.wrapped(sys.executable, [str(scratch), *self.writable], command)
        read_end, write_end = os.pipe()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([*command, str(write_end)], stdin=subprocess.PIPE, stdout=log,
                                            stderr=log, cwd=scratch / "work", env=environment,
                                            pass_fds=(write_end,), start_new_session=True)
        os.close(write_end)
        self.answers = os.fdopen(read_end, "rb")

    def run(self, namespace: str, source: str, name: str, timeout: float) -> dict | str:
        """What the example printed or raised, or why there is no answer."""
        if self.process is None:
            self.start()
        request = {"id": secrets.token_hex(16), "namespace": namespace, "source": source, "name": name}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            return self.ended()
        line = self.answer(timeout)
        if line is None:
            self.stop()
            return f"the example ran longer than the {timeout:g} s timeout"
        if not line:
            return self.ended()
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("id") != request["id"]:
            self.stop()
            return "the examples' process answered something else than this example's outcome"
        return answer

    def answer(self, timeout: float) -> bytes | None:
        """The next line of the answers, b"" at their end, None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.answers], [], [], left)[0]:
                return None
            chunk = os.read(self.answers.fileno(), 1 << 16)
            if not chunk:
                return b""
            line += chunk
        return line

    def ended(self) -> str:
        status = self.stop(wait=True)
        return f"the example ended the examples' process (exit status {status})"

    def stop(self, wait: bool = False) -> int | None:
        """End the process (``wait``: once it has read its last request, as at the end of a
        build), and whatever an example started and left running; its exit status."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        with suppress(OSError):
            process.stdin.close()
        status = None
        if wait:
            with suppress(subprocess.TimeoutExpired):
                status = process.wait(timeout=5)
        with suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        if status is None:
            status = process.wait()
        self.answers.close()
        return status


def compare(example: doctest.Example, answer: dict, flags: int) -> str | None:
    """doctest's comparison of one example's answer with the page: None when it holds, else the
    report (what was expected, what came)."""
    checker = doctest.OutputChecker()
    exception = answer["exception"]
    if exception is None:
        if checker.check_output(example.want, answer["printed"], flags):
            return None
        return checker.output_difference(example, answer["printed"], flags)
    got = answer["printed"] + exception["traceback"]
    if example.exc_msg is None:
        return "Exception raised:\n" + _indented(exception["traceback"])
    if checker.check_output(example.exc_msg, exception["message"], flags):
        return None
    if flags & doctest.IGNORE_EXCEPTION_DETAIL and _kind(example.exc_msg) == _kind(exception["message"]):
        return None
    return checker.output_difference(example, got, flags)


def _kind(message: str) -> str:
    """An exception's type without its module, as IGNORE_EXCEPTION_DETAIL compares it."""
    return message.split(":", 1)[0].strip().rsplit(".", 1)[-1]


def _indented(text: str) -> str:
    return "".join(f"    {line}" for line in text.splitlines(keepends=True))


class DoctestBuilder(Builder):
    """``-b doctest``: every example of every page, run and compared (see the module)."""

    name = "doctest"
    epilog = "The doctests' summary is in %(outdir)s/output.txt."

    def init(self) -> None:
        self.tally = Tally()
        page_runner = build_state.run(self.env.app).page_runner
        self.examples = ExamplesProcess(Path(self.doctreedir, FOLDER), page_runner.page_environment,
                                        [str(page_runner.temporary_folder()), "/dev"])
        self.parser = doctest.DocTestParser()

    def get_outdated_docs(self) -> set[str]:
        return set(self.env.found_docs)

    def get_target_uri(self, docname: str, typ: str | None = None) -> str:
        return ""

    def prepare_writing(self, docnames) -> None:
        pass

    def write_doc(self, docname: str, doctree: nodes.document) -> None:
        blocks = [node for node in doctree.findall(nodes.literal_block) if "book_doctest" in node]
        if not blocks:
            return
        self.tally.pages.append(docname)
        timeout = float(self.config.nb_execution_timeout)
        namespace, lost = secrets.token_hex(8), False
        for block in blocks:
            data = block["book_doctest"]
            first = data["line"]
            try:
                examples = self.parser.get_examples(data["code"], docname)
            except ValueError as error:
                logger.warning(f"a doctest block cannot be read: {error}", location=(docname, first),
                               type="book", subtype="doctest")
                self.tally.failures += 1
                continue
            for number, example in enumerate(examples):
                if lost:
                    break
                flags = self.config.doctest_default_flags
                for flag, on in {**data["options"], **example.options}.items():
                    flags = flags | flag if on else flags & ~flag
                if flags & doctest.SKIP:
                    continue
                self.tally.examples += 1
                line = first + example.lineno
                answer = self.examples.run(namespace, example.source, f"<doctest {docname}[{number}]>", timeout)
                if isinstance(answer, str):
                    # The names the page made are gone with the process: the page's later
                    # examples would fail for that alone, so they are not run.
                    report, lost = answer + "; the page's examples after it did not run", True
                else:
                    report = compare(example, answer, flags)
                if report is not None:
                    self.tally.failures += 1
                    failure = f"Failed example:\n{_indented(example.source)}{report.rstrip()}\n"
                    logger.warning(f"a doctest failed:\n{failure.rstrip()}", location=(docname, line), type="book",
                                   subtype="doctest")
                    # As Sphinx's doctest builder wrote it, which commands/gpu_checks.py reads.
                    page = Path(self.env.doc2path(docname)).relative_to(self.srcdir).as_posix()
                    self.tally.failed.append(f'File "{page}", line {line}, in default\n{failure}')

    def finish(self) -> None:
        self.examples.stop(wait=True)
        tally = self.tally
        Path(self.outdir).mkdir(parents=True, exist_ok=True)
        Path(self.outdir, "output.txt").write_text(
            "".join(f"{'*' * 70}\n{failure}" for failure in tally.failed) +
            f"{SUMMARY}\n{'=' * len(SUMMARY)}\n{tally.examples:5} tests in {len(tally.pages)} pages\n"
            f"{tally.failures:5} failures\n", encoding="utf8")


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
