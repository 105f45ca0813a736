"""What an exercise declares about its answer, and whether torch's real output supports it.

An exercise (the ``{exercise}`` directive, :mod:`..site.exercises`) asks what a code cell does
and offers two to four choices. Its options are the language-neutral part, identical in every
language (parity compares them, :mod:`.parity`)::

    id: data-shares-storage        # unique in the book: the exercise's anchor and its name in messages
    misconception: data-is-detach  # a key of docs/exercises.toml's [misconceptions]
    answer: B                      # the right choice's letter
    A: prints ^tensor\\(\\[1\\., 2\\.\\]
    B: |
      prints requires_grad=True
      not-prints grad_fn

Each choice, by its letter, holds one or more conditions, one a line, all of which must hold
for the output to support that choice:

- ``prints <regex>``: the regular expression (Python's ``re``, multiline) is found in what the
  cell shows: its printed text (stdout and stderr), its results' plain text, and its error's
  ``Type: message`` line;
- ``not-prints <regex>``: it is not found there;
- ``raises <ExceptionType>``: the cell raised that exception (its class name, as the error
  line shows it); ``raises nothing``: the cell raised nothing.

Exactly the declared choice must be supported: a build whose output supports another choice
too, or not the declared one, fails in one line naming the page and the exercise.

Standard library only: parity and the build driver's input checks read it without Sphinx.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

LETTERS = "ABCD"
KINDS = ("prints", "not-prints", "raises")
IDENTIFIER = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
EXCEPTION_NAME = re.compile(r"[A-Za-z_][\w.]*")
MISCONCEPTIONS_FILE = "exercises.toml"  # in docs/, beside the term lists


@dataclass(frozen=True)
class Condition:
    kind: str  # one of KINDS
    argument: str

    def holds(self, shown: str, raised: str | None) -> bool:
        if self.kind == "prints":
            return re.search(self.argument, shown, re.M) is not None
        if self.kind == "not-prints":
            return re.search(self.argument, shown, re.M) is None
        if self.argument == "nothing":
            return raised is None
        return raised == self.argument


@dataclass(frozen=True)
class Declaration:
    """An exercise's options, checked."""

    id: str
    misconception: str
    answer: str  # a letter
    choices: tuple[tuple[Condition, ...], ...]  # per letter, in order

    @property
    def letters(self) -> str:
        return LETTERS[:len(self.choices)]


class DeclarationError(ValueError):
    """One line saying what is wrong with an exercise's options."""


def ends_at_a_tensors_parenthesis(pattern: str) -> bool:
    """Whether ``pattern`` matches a tensor's repr through its closing parenthesis, with no room
    for the device: the same cell prints ``tensor([0.], device='cuda:0')`` in the GPU job."""
    return "tensor\\(" in pattern and "device" not in pattern and re.search(r"\\\)\$?$", pattern) is not None


def conditions(text: str, letter: str) -> tuple[Condition, ...]:
    found = []
    for line in str(text).splitlines():
        line = line.strip()
        if not line:
            continue
        kind, _, argument = line.partition(" ")
        argument = argument.strip()
        if kind not in KINDS or not argument:
            raise DeclarationError(f"choice {letter}: {line!r} is not '<kind> <argument>' with a kind of "
                                   f"{', '.join(KINDS)}")
        if kind == "raises":
            if argument != "nothing" and not EXCEPTION_NAME.fullmatch(argument):
                raise DeclarationError(f"choice {letter}: raises {argument!r} is not an exception's name (or 'nothing')")
        else:
            try:
                re.compile(argument)
            except re.error as error:
                raise DeclarationError(f"choice {letter}: {kind} {argument!r} is not a regular expression ({error})") from None
            if ends_at_a_tensors_parenthesis(argument):
                raise DeclarationError(
                    f"choice {letter}: {kind} {argument!r} reads a tensor up to its closing parenthesis, which "
                    "fails on CUDA (device='cuda:0' comes before it): end the pattern at the values, or allow "
                    "the device: (, device='[^']*')?")
        found.append(Condition(kind, argument))
    if not found:
        raise DeclarationError(f"choice {letter} declares no condition (prints, not-prints or raises)")
    return tuple(found)


def declaration(options: dict, misconceptions: dict | None = None) -> Declaration:
    """The exercise's options checked (``misconceptions``: the known ids, when they are known);
    :class:`DeclarationError` names the first problem."""
    allowed = {"id", "misconception", "answer", *LETTERS}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise DeclarationError(f"unknown option {unknown[0]!r} (options: id, misconception, answer, A to D)")
    ident = str(options.get("id") or "")
    if not IDENTIFIER.fullmatch(ident):
        raise DeclarationError(f"id {ident!r} must be lower-case words joined by hyphens (data-shares-storage)")
    misconception = str(options.get("misconception") or "")
    if not misconception:
        raise DeclarationError(f"exercise {ident!r} names no misconception")
    if misconceptions is not None and misconception not in misconceptions:
        raise DeclarationError(f"exercise {ident!r}: misconception {misconception!r} is not in docs/{MISCONCEPTIONS_FILE}")
    letters = [letter for letter in LETTERS if letter in options]
    if letters != list(LETTERS[:len(letters)]) or not 2 <= len(letters) <= 4:
        raise DeclarationError(f"exercise {ident!r}: choices must be A, B and up to C, D in order, "
                               f"2 to 4 of them (found {', '.join(letters) or 'none'})")
    answer = str(options.get("answer") or "")
    if answer not in letters:
        raise DeclarationError(f"exercise {ident!r}: answer {answer!r} is not one of its choices ({', '.join(letters)})")
    try:
        choices = tuple(conditions(options[letter], letter) for letter in letters)
    except DeclarationError as error:
        raise DeclarationError(f"exercise {ident!r}: {error}") from None
    return Declaration(ident, misconception, answer, choices)


# --- what a cell shows ---------------------------------------------------------


def shown_text(outputs: list[dict]) -> tuple[str, str | None]:
    """What an executed cell shows, as text (streams, results' plain text, the error's line), and
    the name of the exception it raised (None if none)."""
    texts, raised = [], None
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(as_string(output.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            texts.append(as_string(output.get("data", {}).get("text/plain", "")))
        elif kind == "error":
            raised = raised or output.get("ename")
            texts.append(f"{output.get('ename')}: {output.get('evalue')}\n")
    return "".join(t if t.endswith("\n") else t + "\n" for t in texts if t), raised


def as_string(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def supported(declared: Declaration, outputs: list[dict]) -> str:
    """The letters of the choices that the outputs support."""
    shown, raised = shown_text(outputs)
    return "".join(letter for letter, conds in zip(declared.letters, declared.choices)
                   if all(c.holds(shown, raised) for c in conds))


def verdict(declared: Declaration, outputs: list[dict]) -> str | None:
    """Why the output does not make exactly the declared choice right, in one clause; None when it does."""
    found = supported(declared, outputs)
    if found == declared.answer:
        return None
    if declared.answer not in found:
        others = f"it supports {join(found)}" if found else "it supports none of the choices"
        return f"the output no longer supports the declared answer {declared.answer} ({others})"
    return (f"the output supports {join(found)}, not only the declared answer {declared.answer}: "
            "make the other choices' conditions exclude it")


def join(letters: str) -> str:
    return letters if len(letters) == 1 else ", ".join(letters[:-1]) + " and " + letters[-1]


# --- docs/exercises.toml ------------------------------------------------------


def titles_of(kind: str, ident: str, table, languages: list[str], extra_keys: tuple[str, ...] = ()) -> dict:
    """A [<kind>.<id>] table's titles, one per language of the book; ValueError names the problem."""
    if not IDENTIFIER.fullmatch(ident):
        raise ValueError(f"{kind} {ident!r}: its id must be lower-case words joined by hyphens")
    if not isinstance(table, dict):
        raise ValueError(f"{kind} {ident!r} must be a table of titles by language")
    extra = sorted(set(table) - set(languages) - set(extra_keys))
    if extra:
        raise ValueError(f"{kind} {ident!r}: {extra[0]!r} is not a language of the book")
    for language in languages:
        title = table.get(language)
        if not isinstance(title, str) or not title.strip():
            raise ValueError(f"{kind} {ident!r} has no {language} title")
    return dict(table)


def load_misconceptions(path: Path, languages: list[str]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """The misconceptions, in the file's order: id → {language: title, and "topic" when it has
    one}, and the topics the index of exercises groups them under, in the file's order: id →
    {language: title}; ValueError names the problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"cannot be read: {error}") from None
    unknown = sorted(set(data) - {"misconceptions", "topics"})
    if unknown:
        raise ValueError(f"unknown table {unknown[0]!r}: the file holds [topics.<id>] and [misconceptions.<id>] tables")
    topics = data.get("topics", {})
    if not isinstance(topics, dict):
        raise ValueError("topics must be [topics.<id>] tables")
    topics = {ident: titles_of("topic", ident, table, languages) for ident, table in topics.items()}
    table = data.get("misconceptions", {})
    if not isinstance(table, dict) or not table:
        raise ValueError("no [misconceptions.<id>] table")
    found = {}
    for ident, titles in table.items():
        found[ident] = titles_of("misconception", ident, titles, languages, ("topic",))
        topic = titles.get("topic")
        if topic is not None and topic not in topics:
            raise ValueError(f"misconception {ident!r}: its topic {topic!r} is not a [topics.<id>] table")
    return found, topics


def misconceptions_problems(path: Path, languages: list[str], name: str) -> list[str]:
    """The file's problem, one line naming it ([] when it is right or absent)."""
    if not path.is_file():
        return []
    try:
        load_misconceptions(path, languages)
    except ValueError as error:
        return [f"{name}: {error}"]
    return []


# --- the directive's source, as parity reads it ------------------------------


def source_options(content: str) -> dict[str, str]:
    """A ``{exercise}`` fence's options, read from its content as MyST reads them (a ``---``
    block, or ``:key: value`` lines), without Sphinx: what parity compares between languages."""
    from myst_parser.parsers.options import options_to_tokens

    lines = content.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], start=1) if line.startswith("---")), len(lines))
        block = "\n".join(lines[1:end])
    else:
        taken = []
        for line in lines:  # MyST's option lines: a colon first, not a colon fence
            if not line.lstrip().startswith(":") or line.lstrip().startswith(":::"):
                break
            taken.append(line.lstrip()[1:])
        block = "\n".join(taken)
    tokens, _ = options_to_tokens(block)
    return {key.value: (value.value if value is not None else "") for key, value in tokens}
