"""A language's term list (``docs/terms.<code>.toml``) read and checked: one line naming the
file and the entry when it is not one. Without Sphinx's application, so that the build driver
checks the file before Sphinx starts (configuration/input_files.py); :mod:`.prose` applies it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sphinx.errors import ConfigError


@dataclass(frozen=True)
class Pattern:
    """A misuse that no fixed string names: ``find`` (a regular expression) in a sentence,
    unless the match lies inside a match of one of ``allowed`` (the phrases in which it is
    right), and, with ``near``, only where ``near`` also matches in the same sentence, at most
    ``within`` characters away (anywhere in the sentence when ``within`` is None)."""

    find: re.Pattern
    near: re.Pattern | None = None
    within: int | None = None
    allowed: tuple[re.Pattern, ...] = ()
    label: str = ""  # a short name for the misuse, for whoever reads the term list
    advice: str = ""  # what to write instead, for the warning ("" : the term itself)

    def matches(self, sentence: str):
        """The matches of this pattern in one sentence."""
        allowed = [(m.start(), m.end()) for rule in self.allowed for m in rule.finditer(sentence)]
        nears = [(m.start(), m.end()) for m in self.near.finditer(sentence)] if self.near else []
        for m in self.find.finditer(sentence):
            if m.start() == m.end() or any(a <= m.start() and m.end() <= b for a, b in allowed):
                continue
            if self.near is not None and not any(
                    (b <= m.start() or a >= m.end())  # the other word, not the match itself
                    and (self.within is None or max(a - m.end(), m.start() - b) <= self.within)
                    for a, b in nears):
                continue
            yield m


@dataclass(frozen=True)
class Term:
    use: str  # the edition's word
    meaning: str  # what it names, in the reference language (English): the message's, the en glossary's
    variants: tuple[str, ...]  # words the edition does not use for it
    allow: tuple[str, ...] = ()  # phrases that contain a variant in another sense
    patterns: tuple[Pattern, ...] = ()
    meanings: dict[str, str] = field(default_factory=dict, hash=False, compare=False)  # by language code

    def meaning_in(self, language: str) -> str:
        return self.meanings.get(language, self.meaning)


TERM_KEYS = {"use", "meaning", "not", "allow", "pattern"}
PATTERN_KEYS = {"find", "near", "within", "except", "label", "advice"}


def load_terms(path: Path) -> list[Term]:
    """The term list of one language; a file that is not one is a one-line ConfigError
    naming the file and, where one entry is wrong, that entry."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf8"))
        entries = data["term"]
        if not isinstance(entries, list):
            raise TypeError("'term' is not a list of [[term]] tables")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError) as error:
        cause = f"missing {error}" if isinstance(error, KeyError) else str(error).splitlines()[0]
        raise ConfigError(f"{path}: not a term list ([[term]] entries with use, meaning and not): {cause}") from None
    return [term_of(path, number, entry) for number, entry in enumerate(entries, start=1)]


def term_of(path: Path, number: int, entry) -> Term:
    name = f"[[term]] {entry.get('use')!r}" if isinstance(entry, dict) and isinstance(entry.get("use"), str) \
        else f"[[term]] number {number}"

    def refuse(problem: str):
        raise ConfigError(f"{path}: the entry {name}: {problem}")

    if not isinstance(entry, dict):
        refuse("not a table")
    unknown = sorted(key for key in entry if key not in TERM_KEYS and not re.fullmatch(r"meaning_[a-z]{2,3}", key))
    if unknown:
        refuse(f"unknown key {unknown[0]!r} (known: use, meaning, meaning_<language>, not, allow, pattern)")
    for key in ("use", "meaning"):
        if key not in entry:
            refuse(f"missing {key!r}")
    texts = {key: entry[key] for key in entry if key in ("use", "meaning") or key.startswith("meaning_")}
    if not all(isinstance(text, str) and text.strip() for text in texts.values()):
        refuse("use and meaning must be non-empty strings")
    variants, allow = entry.get("not", []), entry.get("allow", [])
    if not all(isinstance(words, list) and all(isinstance(w, str) and w for w in words) for words in (variants, allow)):
        refuse("'not' and 'allow' must be lists of non-empty strings")
    tables = entry.get("pattern", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        refuse("'pattern' must be [[term.pattern]] tables")
    patterns = tuple(pattern_of(refuse, number, table) for number, table in enumerate(tables, start=1))
    if not variants and not patterns:
        refuse("needs a non-empty list 'not' of words, or a [[term.pattern]]")
    return Term(entry["use"], entry["meaning"], tuple(variants), tuple(allow), patterns,
                {key.removeprefix("meaning_"): text for key, text in texts.items() if key.startswith("meaning_")})


def pattern_of(refuse, number: int, table: dict) -> Pattern:
    where = f"pattern {number}"
    unknown = sorted(set(table) - PATTERN_KEYS)
    if unknown:
        refuse(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(PATTERN_KEYS))})")
    if "find" not in table:
        refuse(f"{where}: missing 'find'")

    def compiled(key: str, source) -> re.Pattern:
        if not isinstance(source, str) or not source:
            refuse(f"{where}: {key!r} must be a non-empty regular expression")
        try:
            return re.compile(source)
        except re.error as error:
            refuse(f"{where}: {key!r} is not a regular expression ({error})")

    allowed = table.get("except", [])
    if not isinstance(allowed, list):
        refuse(f"{where}: 'except' must be a list of regular expressions")
    within = table.get("within")
    if within is not None and (not isinstance(within, int) or isinstance(within, bool) or within < 0):
        refuse(f"{where}: 'within' must be a number of characters (0 or more)")
    if within is not None and "near" not in table:
        refuse(f"{where}: 'within' needs 'near'")
    for key in ("label", "advice"):
        if not isinstance(table.get(key, ""), str):
            refuse(f"{where}: {key!r} must be a string")
    return Pattern(compiled("find", table["find"]),
                   compiled("near", table["near"]) if "near" in table else None, within,
                   tuple(compiled("except", source) for source in allowed),
                   table.get("label", ""), table.get("advice", ""))
