"""Predict-then-reveal exercises whose answers are torch's real outputs, checked at every build.

A page writes an exercise as a ``{exercise}`` directive followed by the code cell it asks about::

    ```{exercise}
    ---
    id: data-shares-storage
    misconception: data-is-detach
    answer: B
    A: prints ^tensor\\(\\[1\\., 2\\.\\]
    B: prints ^tensor\\(\\[0\\., 2\\.\\]
    ---
    What does the cell print?

    - `tensor([1., 2.])`: ...
    - `tensor([0., 2.])`: ...

    The explanation, with a link to its section.
    ```

    ```{code-cell} ipython3
    ---
    tags: [exercise]
    ---
    ...
    ```

The options are the language-neutral part (what each choice's output must show:
:mod:`..checks.exercise_answers`), the same in every language (:mod:`..checks.parity` compares
them); the body is the language's: the question, one bullet list of the choices' texts (in the
order of the options' letters) and the explanation after it. The code cell right after it, tagged
``exercise`` (and, when it raises, declaring ``expect_error`` as any cell must), is pulled into
the exercise: its code under the question, its output (with the folds of what older releases
printed, :mod:`..records.release_changes`) into the reveal, under "what torch <version> prints"
(the version the page's provenance names, never typed).

When the page is read, after its cells executed, each choice's conditions are evaluated against
the cell's real output; a build whose output does not support the declared answer, or supports
another choice too, fails with one line naming the page (and line) and the exercise.

On the web an exercise is a form: the choices are radio buttons in a fieldset, a "Check" button
commits the choice (not a change of the radio, which arrow keys make while a keyboard reader
moves through the choices), feedback says right or wrong in a live region, and the answer is a
``<details>`` that ``book.js`` hides until a choice is checked. Without JavaScript the answer is a
closed ``<details>``, which every browser opens by click or keyboard. The reader's choice is kept
only in the browser's ``localStorage``, by exercise id (so it follows the reader to the other
language), and "Try again" forgets it. In the offline editions (:mod:`..editions.offline_builders`)
the choices are a lettered list and the answers are collected at the end of each chapter.

``docs/exercises.toml`` names the misconceptions the wrong choices stand for, with a title per
language; the ``{exercise-index}`` directive lists every exercise of the book, grouped by them, so
that a teacher can assign them.

Why a small directive of our own rather than sphinx-exercise, sphinx-design or
sphinx-togglebutton: none of them knows about executed cells, so the checked answer, the output
moved into the reveal and the offline answers would be ours anyway; sphinx-exercise's solutions
are separate directives (which would put the language-neutral part in two places) and its
"hidden" solutions are removed, not folded; sphinx-togglebutton's fold needs its JavaScript (no
answer without it); sphinx-design brings a stylesheet and a script to every page. Each would be
a new pin in requirements.txt and the toolchain (rebuilt by every session), for less than this
module does with a ``<details>`` and forty lines of book.js.
"""

from __future__ import annotations

import functools
from html import escape
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ..checks.exercise_answers import (
    LETTERS,
    MISCONCEPTIONS_FILE,
    DeclarationError,
    declaration,
    load_misconceptions,
    verdict,
)
from ..configuration.languages import current_language
from ..configuration.messages import message
from ..execution import page_state
from .readable_layout import as_container, as_paragraph, break_inline_code, end_container, end_paragraph

logger = logging.getLogger(__name__)

TAG = "exercise"  # the tag of an exercise's code cell
OFFLINE_BUILDERS = ("singlehtml", "epub")


def misconceptions(app: Sphinx) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """docs/exercises.toml's misconceptions and topics (checked before Sphinx starts:
    configuration/input_files.py); empty without the file."""
    path = Path(app.srcdir).parent / MISCONCEPTIONS_FILE
    if not path.is_file():
        return {}, {}
    return misconceptions_file(path, path.stat().st_mtime_ns, tuple(language.code for language in app.config.book_languages))


@functools.lru_cache(maxsize=4)
def misconceptions_file(path: Path, mtime_ns: int, languages: tuple[str, ...]) -> tuple[dict, dict]:
    """The file read once while it stays the same (every exercise of every page asks)."""
    try:
        return load_misconceptions(path, list(languages))
    except ValueError:
        return {}, {}  # the build driver names the problem before Sphinx starts


# --- nodes ---------------------------------------------------------------------


class exercise(nodes.General, nodes.Element):
    """One exercise: title, question, the cell's code, the choices, the answer."""


class exercise_question(nodes.General, nodes.Element):
    pass


class exercise_choices(nodes.General, nodes.Element):
    """The choices: a form of radio buttons on the web, a lettered list offline."""


class exercise_choice(nodes.General, nodes.Element):
    pass


class exercise_answer(nodes.General, nodes.Element):
    """The reveal: a ``<details>`` on the web, its summary the first child."""


class exercise_summary(nodes.General, nodes.TextElement):
    pass


class Exercise(SphinxDirective):
    has_content = True
    option_spec = {name: directives.unchanged for name in ("id", "misconception", "answer", *LETTERS)}

    def run(self) -> list[nodes.Node]:
        location = (self.env.docname, self.lineno)
        known = misconceptions(self.env.app)[0] or None
        try:
            declared = declaration(self.options, known)
        except DeclarationError as error:
            logger.warning(str(error), location=location, type="book", subtype="exercise")
            return []
        body = self.parse_content_to_nodes()
        lists = [i for i, node in enumerate(body) if isinstance(node, nodes.bullet_list)]
        problem = None
        if len(lists) != 1:
            problem = f"its text holds {len(lists)} bullet lists; it needs one, the choices' texts"
        elif len(body[lists[0]]) != len(declared.choices):
            problem = (f"its list has {len(body[lists[0]])} choices, its options {len(declared.choices)} "
                       f"({declared.letters})")
        elif not lists[0]:
            problem = "it asks no question before its list of choices"
        elif lists[0] == len(body) - 1:
            problem = "it explains nothing after its list of choices"
        elif any(len(item) != 1 or not isinstance(item[0], nodes.paragraph) for item in body[lists[0]]):
            problem = "each choice must be one paragraph"
        if problem:
            logger.warning(f"exercise {declared.id!r}: {problem}", location=location, type="book", subtype="exercise")
            return []
        at = lists[0]
        node = exercise("", ids=[f"exercise-{declared.id}"], exercise_id=declared.id, answer=declared.answer,
                        misconception=declared.misconception, options=dict(self.options))
        self.set_source_info(node)
        node += exercise_question("", *body[:at])
        choices = exercise_choices("")
        for letter, item in zip(declared.letters, body[at]):
            choices += exercise_choice("", *item[0].children, letter=letter)
        node += choices
        node += exercise_answer("", *body[at + 1:])
        return [node]


# --- the cell pulled in, and the answer checked -----------------------------------


def is_code_cell(node) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"


def attach(app: Sphinx, docname: str, doctree: nodes.document, notebook) -> int:
    """Pull each exercise's cell into it and check its answer against the cell's output, once
    the page executed (execution/page_execution.py); count the problems (each one warning)."""
    from ..execution.cache_key import torch_version

    problems = 0

    def warn(text: str, node) -> None:
        nonlocal problems
        problems += 1
        logger.warning(text, location=node, type="book", subtype="exercise")

    code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    number_of = {index: number for number, index in enumerate(code, start=1)}
    sequence = list(doctree.findall(lambda n: isinstance(n, exercise) or is_code_cell(n)))
    claimed = set()
    found = []
    for position, node in enumerate(sequence):
        if not isinstance(node, exercise):
            continue
        ident = node["exercise_id"]
        cell_node = sequence[position + 1] if position + 1 < len(sequence) else None
        if cell_node is None or not is_code_cell(cell_node):
            warn(f"exercise {ident!r} has no code cell right after it", node)
            continue
        cell = notebook.cells[cell_node["cell_index"]]
        number = number_of.get(cell_node["cell_index"])
        if TAG not in cell.metadata.get("tags", []):
            warn(f"exercise {ident!r}: code cell {number} after it is not tagged {TAG!r} (tags: [{TAG}])", node)
            continue
        claimed.add(cell_node["cell_index"])
        declared = declaration(node["options"])
        problem = verdict(declared, cell.get("outputs", []))
        if problem:
            warn(f"exercise {ident!r} (code cell {number}): {problem}", node)
        found.append((node, cell_node, declared))
    for index in code:
        if index not in claimed and TAG in notebook.cells[index].metadata.get("tags", []):
            cell_node = next((n for n in sequence if is_code_cell(n) and n["cell_index"] == index), doctree)
            warn(f"code cell {number_of[index]} is tagged {TAG!r} but no {{exercise}} comes right before it", cell_node)
    state = page_state.of(app.env, docname)
    state.exercises = []
    for number, (node, cell_node, declared) in enumerate(found, start=1):
        node["number"] = number
        # Out of the search index and its excerpts: an exercise is practice, not an answer to a
        # query (its words outranked the sections that answer, and its hidden answer made
        # excerpts of text the page does not show).
        node["classes"].append("no-search")
        title = message(app.config, "exercise_title").format(number=number)
        node.insert(0, nodes.paragraph(title, title, classes=["book-exercise-title"],
                                       ids=[f"exercise-{declared.id}-title"]))
        moved = [child for child in cell_node.children
                 if not (isinstance(child, nodes.container) and child.get("nb_element") == "cell_code_source")]
        for child in moved:
            cell_node.remove(child)
        cell_node.parent.remove(cell_node)
        node.insert(node.index(node.next_node(exercise_choices)), cell_node)
        answer = node.next_node(exercise_answer)
        summary = message(app.config, "exercise_summary").format(torch=torch_version())
        choice = node.next_node(lambda n, letter=declared.answer: isinstance(n, exercise_choice) and n["letter"] == letter)
        said = nodes.paragraph("", "", nodes.strong("", message(app.config, "exercise_answer").format(letter=declared.answer)),
                               *[child.deepcopy() for child in choice.children], classes=["book-exercise-right"])
        if not any(isinstance(m, nodes.container) and m.get("nb_element") == "cell_code_output" for m in moved):
            nothing = message(app.config, "releases_nothing")
            moved.insert(0, nodes.paragraph("", "", nodes.inline("", nothing, classes=["book-nothing"])))
        output = nodes.container("", *moved, classes=["book-exercise-output"])
        answer.insert(0, exercise_summary(summary, summary))
        answer.insert(1, said)
        answer.insert(2, output)
        question = node.next_node(exercise_question)
        # The question's first paragraph, whole and with its inline code, for the index of exercises
        # (written to stand on its own: CONTRIBUTING.md).
        first = question.next_node(nodes.paragraph)
        state.exercises.append({"id": declared.id, "misconception": declared.misconception, "number": number,
                                "question": [child.deepcopy() for child in first.children] if first else []})
    return problems


def unattached(app: Sphinx, doctree: nodes.document) -> None:
    """An exercise on a page that executed nothing (or did not finish) is checked against nothing."""
    if page_state.of(app.env).problems:
        return  # its execution failed, and was reported: the exercises are checked when it runs
    for node in doctree.findall(exercise):
        if "number" not in node:
            logger.warning(f"exercise {node['exercise_id']!r} was not checked: its page executed no code cell "
                           "for it", location=node, type="book", subtype="exercise")


def unique_ids(app: Sphinx, env) -> None:
    seen: dict[str, str] = {}
    for page, state in sorted(page_state.every(env).items()):
        for found in state.exercises:
            if found["id"] in seen:
                logger.warning(f"exercise {found['id']!r} is on {seen[found['id']]} and {page}: an id names one "
                               "exercise in the book", location=page, type="book", subtype="exercise")
            seen.setdefault(found["id"], page)


# --- HTML -----------------------------------------------------------------------


def _visit_exercise(self, node):
    ident = node["exercise_id"]
    offline = node.get("offline", False)
    marks = (" book-exercise-offline" if offline else "") + (" no-search" if "no-search" in node["classes"] else "")
    self.body.append(f'<div class="book-exercise{marks}" '
                     f'id="exercise-{escape(ident)}" data-exercise="{escape(ident)}" data-answer="{node["answer"]}" '
                     f'role="group" aria-labelledby="exercise-{escape(ident)}-title">')


def _depart_div(self, node):
    self.body.append("</div>")


def _visit_question(self, node):
    self.body.append('<div class="book-exercise-question">')


def _visit_choices(self, node):
    config = self.builder.config
    if node.parent.get("offline"):
        self.body.append('<ol class="book-exercise-choices" type="A">')
        return
    say = lambda key: escape(message(config, key), quote=True)  # noqa: E731
    self.body.append(
        f'<form class="book-exercise-form" data-right="{say("exercise_right")}" data-wrong="{say("exercise_wrong")}" '
        f'data-none="{say("exercise_choose")}"><fieldset class="book-exercise-choices">'
        f'<legend>{say("exercise_legend")}</legend>')


def _depart_choices(self, node):
    if node.parent.get("offline"):
        self.body.append("</ol>")
        return
    config = self.builder.config
    self.body.append(
        '</fieldset><p class="book-exercise-buttons">'
        f'<button type="submit" class="book-exercise-check" hidden>{escape(message(config, "exercise_check"))}</button>'
        f'<button type="button" class="book-exercise-reset" hidden>{escape(message(config, "exercise_reset"))}</button>'
        '</p><p class="book-exercise-feedback" role="status"></p></form>')


def _visit_choice(self, node):
    exercise_node = node.parent.parent
    letter = node["letter"]
    if exercise_node.get("offline"):
        self.body.append(f'<li class="book-exercise-choice" value="{LETTERS.index(letter) + 1}">')
        return
    ident = escape(exercise_node["exercise_id"])
    self.body.append(f'<label class="book-exercise-choice"><input type="radio" name="exercise-{ident}" '
                     f'value="{letter}"><span class="book-exercise-letter">{letter}</span> <span>')


def _depart_choice(self, node):
    self.body.append("</li>" if node.parent.parent.get("offline") else "</span></label>")


def _visit_answer(self, node):
    self.body.append('<details class="book-exercise-answer">')


def _depart_answer(self, node):
    self.body.append("</details>")


def _visit_summary(self, node):
    self.body.append(f"<summary>{escape(node.astext())}</summary>")
    raise nodes.SkipNode


# --- the offline editions: answers at the end of each chapter -------------------


class AnswersAtChapterEnd(SphinxPostTransform):
    """Paper cannot hide an answer: each exercise's answer goes to the end of its chapter (a page
    of the book: the singlehtml build inlines each as a ``start_of_file``), under a heading, with
    links both ways; the choices become a lettered list."""

    default_priority = 190  # before offline_builders.ShowHiddenCells (198), so moved cells are unfolded too
    builders = OFFLINE_BUILDERS

    def run(self, **kwargs) -> None:
        config = self.app.config
        chapters: dict[int, tuple[nodes.Element, list]] = {}
        for node in list(self.document.findall(exercise)):
            if "number" not in node:
                continue
            node["offline"] = True
            chapter = next((a for a in ancestors(node) if isinstance(a, addnodes.start_of_file)), self.document)
            answer = node.next_node(exercise_answer)
            ident = node["exercise_id"]
            later = message(config, "exercise_answer_later")
            node.replace(answer, nodes.paragraph("", "", nodes.reference("", later, refid=f"answer-{ident}",
                                                                         internal=True),
                                                 classes=["book-exercise-later"]))
            title = message(config, "exercise_title").format(number=node["number"])
            back = nodes.paragraph("", "", nodes.reference("", title, refid=f"exercise-{ident}", internal=True),
                                   classes=["book-exercise-title"])
            content = [child for child in answer.children if not isinstance(child, exercise_summary)]
            chapters.setdefault(id(chapter), (chapter, []))[1].append(
                nodes.container("", back, *content, ids=[f"answer-{ident}"], classes=["book-exercise-answer"]))
        for chapter, answers in chapters.values():
            heading = message(config, "exercise_answers_heading")
            block = [nodes.rubric(heading, heading, classes=["book-exercise-answers"]), *answers]
            # The root page of the single-page build holds the other chapters (its table of
            # contents, inlined): its answers go before them.
            inlined = next(chapter.findall(addnodes.start_of_file), None) if chapter is self.document else None
            holder = next((a for a in ancestors(inlined) if isinstance(a, nodes.compound)), None) if inlined else None
            if holder is not None:
                holder.parent[holder.parent.index(holder):holder.parent.index(holder)] = block
            else:
                chapter.extend(block)


def ancestors(node):
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


# --- the index of exercises, by misconception ------------------------------------


class exercise_index_placeholder(nodes.General, nodes.Element):
    pass


class ExerciseIndex(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        page_state.of(self.env).computed.add("exercise-index")
        self.env.note_dependency(str(Path(self.env.srcdir).parent / MISCONCEPTIONS_FILE))
        return [exercise_index_placeholder()]


def misconception_section(app: Sphinx, docname: str, ident: str, belief: str, found: list) -> nodes.container:
    """A misconception's label (the belief, marked as a myth) and its exercises, each linked
    with its chapter, number and question.

    A label, not a heading: the chapter's heading is the page's contents entry, and a belief
    runs to three or four lines on a phone, which no section title may take (issue 33)."""
    # A false statement on its own would read as the book's claim: quoted and marked, it is a myth.
    title = message(app.config, "exercise_misconception").format(misconception=belief)
    # no-search: a misconception is a false claim, no answer to a query, and each question is
    # indexed on its chapter's page, where it is answered (all of them together here made this
    # page a match for any query about the tools).
    part = nodes.container("", nodes.paragraph(title, title, classes=["book-misconception-title"]),
                           ids=[f"misconception-{ident}"], classes=["no-search", "book-misconception"])
    items = nodes.bullet_list()
    for page, entry in found:
        page_title = app.env.titles[page].astext() if page in app.env.titles else page
        text = message(app.config, "exercise_index_item").format(page=page_title, number=entry["number"])
        # An exercise's id is unique in the book (unique_ids): the single-page build links it alone.
        uri = ("" if app.builder.name == "singlehtml" else app.builder.get_relative_uri(docname, page)) \
            + f"#exercise-{entry['id']}"
        items += nodes.list_item("", nodes.paragraph("", "", nodes.reference(text, text, refuri=uri, internal=True),
                                                     nodes.Text(message(app.config, "exercise_index_sep")),
                                                     *[child.deepcopy() for child in entry["question"]]))
    part += items
    return part


def index_inputs(app: Sphinx, env) -> object:
    """What the index of exercises is filled with, beside titles (page_state.declare_write_inputs)."""
    from .provenance_page import reading_order

    found = [[page, [[entry["id"], entry["misconception"], entry["number"], [str(node) for node in entry["question"]]]
                     for entry in getattr(page_state.every(env).get(page), "exercises", [])]]
             for page in reading_order(env)]
    return [found, misconceptions(app)]


def fill_index(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    from .provenance_page import reading_order

    placeholders = list(doctree.findall(exercise_index_placeholder))
    if not placeholders:
        return
    code = current_language(app.config).code
    known, topics = misconceptions(app)
    by_misconception: dict[str, list] = {ident: [] for ident in known}
    for page in reading_order(app.env):
        state = page_state.every(app.env).get(page)
        for found in getattr(state, "exercises", []):
            by_misconception.setdefault(found["misconception"], []).append((page, found))
    # By topic (docs/exercises.toml's [topics], a heading each: the page's contents), then by
    # misconception, each with every exercise that tests it: a teacher finds a topic, then the
    # beliefs to assign. Misconceptions without a topic come first, under no heading.
    parts = {topic: nodes.section("", nodes.title(titles[code], titles[code]), ids=[f"topic-{topic}"],
                                  classes=["no-search", "book-exercise-topic"]) for topic, titles in topics.items()}
    loose = []
    for ident, found in by_misconception.items():
        if found:
            label = misconception_section(app, docname, ident, known.get(ident, {}).get(code, ident), found)
            topic = known.get(ident, {}).get("topic")
            if topic in parts:
                parts[topic] += label
            else:
                loose.append(label)
    out = loose + [part for part in parts.values() if len(part.children) > 1]
    if app.builder.format == "html":  # as ReadableLayout: the questions' code, copied before it ran
        for part in out:
            break_inline_code(part)
    for placeholder in placeholders:
        placeholder.replace_self([node.deepcopy() for node in out])


def setup(app: Sphinx) -> None:
    app.add_directive("exercise", Exercise)
    app.add_directive("exercise-index", ExerciseIndex)
    others = {builder: (as_container, end_container) for builder in ("latex", "text", "man", "texinfo")}
    app.add_node(exercise, html=(_visit_exercise, _depart_div), **others)
    app.add_node(exercise_question, html=(_visit_question, _depart_div), **others)
    app.add_node(exercise_choices, html=(_visit_choices, _depart_choices), **others)
    app.add_node(exercise_choice, html=(_visit_choice, _depart_choice),
                 **{builder: (as_paragraph, end_paragraph) for builder in others})
    app.add_node(exercise_answer, html=(_visit_answer, _depart_answer), **others)
    app.add_node(exercise_summary, html=(_visit_summary, None),
                 **{builder: (as_paragraph, end_paragraph) for builder in others})
    app.add_node(exercise_index_placeholder)
    app.add_post_transform(AnswersAtChapterEnd)
    app.connect("doctree-read", unattached, priority=600)  # after page_execution's handler
    app.connect("env-check-consistency", unique_ids)
    app.connect("doctree-resolved", fill_index)
    page_state.declare_write_inputs("exercise-index", index_inputs)
