"""The book's settings: declared once, read from conf.py in one place, checked before anything runs.

:class:`BookConfig` is every setting the book's extensions read (name, default, type, what a
change makes Sphinx do again, and what a valid value is), after MyST-NB's ``NbParserConfig``;
:class:`Language` is one language of the book. conf.py declares the languages as plain dicts
(what languages exist is configuration); once checked, the book's code reads each as a
:class:`Language` record, never as a dict. This module

- reads conf.py for the build driver and the tools, as Sphinx does (:func:`read`, which
  honours ``--confdir``), with :func:`book_languages` and :func:`reference_language` on top;
- says, before the driver starts Sphinx, everything that would stop the build: a bad
  setting, an execution-mode override in the ``-D`` arguments, a language folder missing
  from docs/ (:func:`problems`);
- as the first of the book's extensions (``book_extensions.setup``), registers the settings
  and checks them all at config-inited, before any other handler reads them, for
  sphinx-build run by hand; then ``config.book_languages`` holds :class:`Language` records.

Each problem is one line that names conf.py (or the ``-D`` override) and the key.
"""

from __future__ import annotations

import doctest
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from ..paths import PACKAGE, ROOT, shown


class BookConfigError(Exception):
    """conf.py (or a -D override) sets what the book cannot be built with; one line per problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def interface_languages() -> list[str]:
    """The Sphinx languages the book's own strings exist in: English, and each catalogue in locale/."""
    return ["en", *sorted(po.parents[1].name for po in (PACKAGE / "locale").glob("*/LC_MESSAGES/book.po"))]


# --- what a valid value is: each check returns what is wrong, or None ------------------

Check = Callable[[Any], "str | None"]


def matching(pattern: str, what: str) -> Check:
    return lambda value: None if re.fullmatch(pattern, value) else f"must be {what}, not {value!r}"


def one_of(*allowed: str) -> Check:
    what = " or ".join(repr(a) for a in allowed)
    return lambda value: None if value in allowed else f"must be {what}, not {value!r}"


def positive(value: int) -> str | None:
    return None if value > 0 else f"must be more than 0, not {value}"


def not_empty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


def in_interface_languages(value: str) -> str | None:
    known = interface_languages()
    if value in known:
        return None
    # Sphinx would build it, with the book's own strings in English and nothing said.
    return (f"is {value!r}, but the book's interface exists only in {', '.join(known)}: add "
            f"book_extensions/locale/{value}/LC_MESSAGES/book.po (translate {known[-1]}'s), or use one of those")


def outputs_shown(value: bool) -> str | None:
    # The pages show every output, as the record of the build (--record) holds it.
    return None if not value else ("is the book's to leave off: every page shows its cells' outputs, "
                                   "and the record of the build holds what the pages show")


def stderr_shown(value: str) -> str | None:
    # A warning a cell prints is part of what the book shows (and of what it records).
    return None if value == "show" else (f"is the book's to set ('show'), not {value!r}: "
                                         "what a cell prints to stderr (a warning) is shown with its other output")


def cache_mode(value: str) -> str | None:
    if value == "cache":
        return None
    # execution/runner.py's PageClient is jupyter-cache's client: any other mode bypasses it.
    return (f"is the book's to set ('cache'), not {value!r}: every page runs through its execution "
            "cache; to execute pages again, give the build another --cache-root or run `make clean-cache`")


# doctest's option flags that let an example pass with other output than it shows.
RELAXING_DOCTEST_FLAGS = ("ELLIPSIS", "IGNORE_EXCEPTION_DETAIL", "NORMALIZE_WHITESPACE", "SKIP")


def exact_doctests(value: int) -> str | None:
    relaxing = [name for name in RELAXING_DOCTEST_FLAGS if value & doctest.OPTIONFLAGS_BY_NAME[name]]
    parts = [f"turns on {' and '.join(relaxing)}"] if relaxing else []
    if not value & doctest.DONT_ACCEPT_TRUE_FOR_1:
        # Without it True passes where the page says 1 (attack 9, case 22: 0 was accepted).
        parts.append("leaves out DONT_ACCEPT_TRUE_FOR_1 (True would pass for 1)")
    if not parts:
        return None
    # "Check yourself" states the exact message: a relaxation belongs to the block that needs it.
    return (f"{' and '.join(parts)} for every doctest ({value}): set it to "
            "doctest.DONT_ACCEPT_TRUE_FOR_1, and relax only the example that needs it (# doctest: +ELLIPSIS)")


def setting(default: Any = MISSING, *, types: type, rebuild: str = "env", check: Check | None = None,
            registered_by: str = "", default_factory: Callable[[], Any] | None = None):
    """A field of :class:`BookConfig`: ``registered_by`` names the extension that owns a setting
    that is not the book's own (myst-nb's ``nb_*``)."""
    metadata = {"types": types, "rebuild": rebuild, "check": check, "registered_by": registered_by}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


# --- one entry of book_languages -----------------------------------------------------

@dataclass(frozen=True)
class Language:
    """One language of the book. Its fields are the keys of an entry of conf.py's
    ``book_languages``, every one a string, all but ``typography`` required: what
    :func:`language_problems` checks an entry against before it becomes this record."""

    # Its folder under docs/ and in the site, so part of every URL of the language.
    code: str = setting(types=str, check=matching(r"[a-z0-9]+(-[a-z0-9]+)*",
                                                  "a folder name of lowercase letters, digits and hyphens"))
    # Sphinx's language: its catalogues and the book's (locale/<sphinx>/).
    sphinx: str = setting(types=str, check=in_interface_languages)
    # The BCP 47 tag of hreflang links and lang attributes.
    hreflang: str = setting(types=str, check=matching(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*",
                                                      "a BCP 47 language tag such as 'en' or 'zh-CN'"))
    name: str = setting(types=str, check=not_empty)  # in the language switch
    project: str = setting(types=str, check=not_empty)  # the book's title in this language
    author: str = setting(types=str, check=not_empty)
    sentence_separator: str = setting(types=str)  # between two sentences
    list_separator: str = setting(types=str)  # between list items
    # "cjk": the edition's spacing and punctuation are checked (checks/typography.py).
    typography: str = setting("", types=str, check=one_of("", "cjk"))


def language_problems(languages: Any) -> list[str]:
    """What is wrong with ``book_languages``: each line starts with ``book_languages``."""
    if not isinstance(languages, list) or not languages:
        return ["book_languages must be a list of one dict per language, the default first, "
                f"not {languages!r}"]
    keys = {f.name: f for f in fields(Language)}
    required = [name for name, f in keys.items() if f.default is MISSING]
    found, seen = [], {}
    for index, entry in enumerate(languages):
        where = f"book_languages[{index}]"
        if not isinstance(entry, dict):
            found.append(f"{where} must be a dict of the language's settings, not {type(entry).__name__}")
            continue
        found += [f"{where} has no {key!r} key" for key in required if key not in entry]
        found += [f"{where} has an unknown key {key!r} (a language has: {', '.join(keys)})"
                  for key in entry if key not in keys]
        for key, value in entry.items():
            if key not in keys:
                continue
            problem = value_problem(keys[key], value)
            if problem:
                found.append(f"{where}[{key!r}] {problem}")
        tag, interface = entry.get("hreflang"), entry.get("sphinx")
        if isinstance(tag, str) and isinstance(interface, str) and \
                tag.lower().split("-")[0] != interface.lower().split("_")[0]:
            # A new language's entry copied from another: its pages, another interface.
            found.append(f"{where} has hreflang {tag!r} but sphinx {interface!r}: both name the language "
                         "of its pages (sphinx's is the language of its interface)")
        for key in ("code", "sphinx"):
            value = entry.get(key)
            if isinstance(value, str) and (key, value) in seen:
                found.append(f"{where} repeats the {key} {value!r} of book_languages[{seen[key, value]}]")
            seen.setdefault((key, value), index)
    return found


# --- the book's settings ------------------------------------------------------------

@dataclass(frozen=True)
class BookConfig:
    """Every setting the book's extensions and tools read, as conf.py (and -D) set it."""

    # conf.py's dicts, checked by language_problems, as Language records.
    book_languages: list[Language] = setting(types=list, default_factory=list)
    # The offline editions' file names: <slug>-<code>.pdf / .epub.
    book_slug: str = setting("book", types=str, check=matching(r"[a-z0-9]+(-[a-z0-9]+)*",
                                                               "lowercase letters, digits and hyphens"))
    # The site's public address; empty: links stay relative.
    book_base_url: str = setting("", types=str, rebuild="html",
                                 check=matching(r"(https?://[^\s\"'<>]+)?", "an http(s) address, or empty"))
    # "owner/name" on GitHub: Colab, report and edit links.
    book_repository: str = setting("", types=str, check=matching(r"([\w.-]+/[\w.-]+)?",
                                                                  "'owner/name' of a GitHub repository, or empty"))
    book_device_page: str = setting("", types=str)  # site/device_page.py
    book_results_dir: str = setting("results", types=str, check=not_empty)  # records, beside conf.py
    book_releases_file: str = setting("torch-releases.txt", types=str, check=not_empty)  # records/release_changes.py
    book_device: str = setting(types=str, check=one_of("cpu", "cuda"),
                               default_factory=lambda: os.environ.get("BOOK_DEVICE", "cpu"))
    # Relative to conf.py's folder; the build driver passes an absolute one.
    book_cache_root: str = setting(".jupyter_cache", types=str, rebuild="", check=not_empty)
    # The build driver's, for languages built at once (commands/reading_turn.py's ReadingTurn): the
    # descriptor of the lock this language holds until it has read its pages, and the lock file
    # of the language before it, given up once that one has read. Empty: no turn (one language,
    # sphinx-build by hand). Their values change from build to build: they never make Sphinx
    # read or write a page again.
    book_reading_turn_fd: str = setting("", types=str, rebuild="", check=matching(r"\d*", "a descriptor number, or empty"))
    book_reading_after: str = setting("", types=str, rebuild="")
    # Per code cell: the largest output of the book is about 15,000 characters (a figure).
    book_output_limit: int = setting(100_000, types=int, check=positive)
    nb_execution_mode: str = setting("cache", types=str, check=cache_mode, registered_by="myst_nb")
    nb_execution_timeout: int = setting(30, types=int, check=positive, registered_by="myst_nb")
    nb_remove_code_outputs: bool = setting(False, types=bool, check=outputs_shown, registered_by="myst_nb")
    nb_output_stderr: str = setting("show", types=str, check=stderr_shown, registered_by="myst_nb")
    # The doctest builder's flags for every example (execution/doctests.py): exact, as "Check
    # yourself" states the exact message (Sphinx's own doctest builder relaxed every example).
    doctest_default_flags: int = setting(doctest.DONT_ACCEPT_TRUE_FOR_1, types=int, check=exact_doctests)


TYPE_NAMES = {str: "a string", int: "a whole number", list: "a list", bool: "True or False"}


def value_problem(setting: Field, value: Any) -> str | None:
    """What is wrong with ``value`` for ``setting`` (a field of BookConfig or Language), or None."""
    expected, check = setting.metadata["types"], setting.metadata["check"]
    # bool is an int to Python, not to a reader of conf.py.
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        return f"must be {TYPE_NAMES[expected]}, not {type(value).__name__} ({value!r})"
    return check(value) if check else None


def checked(values: Mapping[str, Any], source: Callable[[str], str]) -> BookConfig:
    """The settings in ``values`` (missing ones take their defaults), or BookConfigError.

    ``source(name)`` says where a value came from: "conf.py", or "-D name=value".
    """
    found = [f"{source('book_languages')}: {problem}"
             for problem in language_problems(values.get("book_languages"))]
    for f in fields(BookConfig):
        problem = f.name != "book_languages" and f.name in values and value_problem(f, values[f.name])
        if problem:
            found.append(f"{source(f.name)}: {f.name} {problem}")
    if found:
        raise BookConfigError(found)
    given = {f.name: values[f.name] for f in fields(BookConfig) if f.name in values}
    return BookConfig(**{**given, "book_languages": [Language(**entry) for entry in given["book_languages"]]})


# --- conf.py, read by the driver and the tools ----------------------------------------

# The settings the build driver gives Sphinx itself, and how to choose them.
DRIVER_SETTINGS = {"book_device": "give the build --device", "book_cache_root": "give the build --cache-root",
                   "book_reading_turn_fd": "the order in which languages read", "book_reading_after":
                   "the order in which languages read", "language": "give the build --language"}

# sphinx-build's options that pass after ``--``, by the name its parser gives them: those that
# change what it says, or how much it rebuilds, never what it builds (-D only for BookConfig's).
PASSED_OPTIONS = {"define", "nitpicky", "verbosity", "quiet", "traceback", "color", "freshenv", "force_all",
                  "warningiserror", "keep_going", "exception_on_warning"}
PASSED_HELP = ("sphinx-build takes -D (the settings conf.py's BookConfig declares), -n, -v, -q, -T, -N, --color, "
               "-E, -a, -W, --keep-going, --exception-on-warning")
# Why each other option is the build's to set.
REFUSED_OPTIONS = {
    "builder": ("-b/--builder", "the build's first argument names the builder (html, doctest…)"),
    "jobs": ("-j/--jobs", "give the build --jobs (before --)"),
    "confdir": ("-c/--conf-dir", "the build reads conf.py from --confdir"),
    "noconfig": ("-C/--isolated", "the build reads conf.py from --confdir"),
    "doctreedir": ("-d/--doctree-dir", "the build keeps its doctrees in <out>/<device>/doctrees"),
    "really_quiet": ("-Q/--silent", "it hides the warnings that fail the build: -q shows only those"),
    "warnfile": ("-w/--warning-file", "the build's warnings are in its output"),
    "htmldefine": ("-A/--html-define", "every page's context is conf.py's"),
    "tags": ("-t/--tag", "every page's content is conf.py's: `only` directives see its tags"),
    "pdb": ("-P/--pdb", "the build runs unattended"),
}


def sphinx_options(sphinx_args: Sequence[str]):
    """sphinx-build's arguments after ``--``, read by its own parser (folded short options,
    abbreviations and all), or BookConfigError with one line: what cannot pass, and why."""
    import contextlib
    import io

    from sphinx.cmd.build import get_parser
    from sphinx.locale import init_console

    init_console()  # the parser's help text is translated, as sphinx-build's main() sets up

    def refuse(problem: str):
        raise BookConfigError([f"after --: {problem}; {PASSED_HELP}"])

    parser, said = get_parser(), io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            defaults = vars(parser.parse_args(["sources", "output"]))
            options = parser.parse_args(["sources", "output", *sphinx_args])
    except SystemExit:  # argparse's own words for what it cannot read, without the usage
        lines = said.getvalue().strip().splitlines()
        refuse(lines[-1].partition(": error: ")[2] if lines and ": error: " in lines[-1]
               else "-h and --version print and stop")
    if options.filenames:
        refuse(f"{options.filenames[0]}: the build reads every page: name no pages")
    for name, (option, why) in REFUSED_OPTIONS.items():
        if getattr(options, name) != defaults[name]:
            refuse(f"{option}: {why}")
    unlisted = sorted(defaults.keys() - PASSED_OPTIONS - REFUSED_OPTIONS.keys() - {"sourcedir", "outputdir", "filenames"})
    if unlisted:  # a newer Sphinx's option: passed on once someone has read what it does
        refuse(f"{unlisted[0]}: an option of sphinx-build the build does not know")
    for pair in options.define:
        if "=" not in pair:
            refuse(f"-D {pair}: -D takes name=value")
    return options


def override_pairs(sphinx_args: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The ``-D name=value`` (``--define``) settings among sphinx-build's arguments, as it reads them."""
    return tuple(tuple(pair.split("=", 1)) for pair in sphinx_options(sphinx_args).define)


def read(confdir: Path = ROOT, overrides: Sequence[tuple[str, str]] = ()) -> BookConfig:
    """conf.py's settings, with ``-D`` ``overrides`` as Sphinx applies them, checked; read once."""
    return read_resolved(Path(confdir).resolve(), tuple(overrides))


@cache
def read_resolved(confdir: Path, overrides: tuple[tuple[str, str], ...]) -> BookConfig:
    from sphinx.config import eval_config_file
    from sphinx.errors import ConfigError
    from sphinx.util.tags import Tags

    path = Path(confdir, "conf.py")
    if not path.is_file():
        raise BookConfigError([f"{shown(path, Path.cwd())}: no such file (--confdir names the folder of the book's conf.py)"])
    try:
        namespace = eval_config_file(path, Tags())
    except ConfigError as error:
        raise BookConfigError([f"{shown(path, Path.cwd())}: {str(error).strip().splitlines()[-1]}"]) from None
    types = {f.name: f.metadata["types"] for f in fields(BookConfig)}
    given = dict(overrides)
    for name, value in given.items():
        # Sphinx turns a -D value into the setting's type, like this.
        if types.get(name) is int:
            namespace[name] = int(value) if re.fullmatch(r"-?\d+", value) else value
        elif types.get(name) is bool:
            namespace[name] = {"0": False, "1": True}.get(value, value)
        elif name in types:
            namespace[name] = value
    return checked(namespace, lambda name: f"-D {name}={given[name]}" if name in given else shown(path, Path.cwd()))


def book_languages(confdir: Path = ROOT) -> list[Language]:
    """The book's languages, in conf.py's order (the one list everything reads)."""
    return read(confdir).book_languages


def reference_language(confdir: Path = ROOT) -> str:
    """The first declared language's code: the one others are compared with, and records are read from."""
    return book_languages(confdir)[0].code


def problems(confdir: Path, docs: Path, languages: Sequence[str] | None = None,
             sphinx_args: Sequence[str] = ()) -> list[str]:
    """Why a build of ``languages`` (default: all) from ``docs`` cannot start, one line each."""
    try:
        overrides = override_pairs(sphinx_args)
    except BookConfigError as error:
        return error.problems
    # The driver's own: it locks, checks and names the cache, the device and the reading turns
    # it gives Sphinx, and another value would reach Sphinx unlocked and unchecked (attack 6, 1-3).
    owned = [f"-D {name}={value}: the build sets {name} itself ({DRIVER_SETTINGS[name]})"
             for name, value in overrides if name in DRIVER_SETTINGS]
    if owned:
        return owned
    declared = {f.name for f in fields(BookConfig)}
    # Any other setting of Sphinx or myst-nb could change what every page shows or how it is
    # checked (suppress_warnings, nb_metadata_key, language, html_extra_path…), unseen by the
    # checks and by the digest of what the site was built from.
    unknown = [f"-D {name}={value}: the build takes -D only for the settings conf.py's BookConfig declares "
               f"and checks (book_*, nb_execution_timeout…), not {name}: set it in conf.py"
               for name, value in overrides if name not in declared]
    if unknown:
        return unknown
    try:
        settings = read(confdir, overrides)
    except BookConfigError as error:
        return error.problems
    if not Path(docs).is_dir():
        return [f"{shown(Path(docs), Path.cwd())}: no such folder (--docs names the folder with one folder per language)"]
    declared = [language.code for language in settings.book_languages]
    return [f"{shown(Path(docs, code), Path.cwd())}: no such folder, but conf.py's book_languages declares {code!r}: "
            "add its pages there, or build the other languages with --language"
            for code in declared if (languages is None or code in languages) and not Path(docs, code).is_dir()]


# --- the Sphinx extension ---------------------------------------------------------------

def check_settings(app, config) -> None:
    """Every setting checked before the other extensions' config-inited handlers read one;
    then the languages are :class:`Language` records for them."""
    from sphinx.errors import ConfigError

    values = {f.name: config[f.name] for f in fields(BookConfig) if f.name in config}
    conf = shown(Path(app.confdir, "conf.py"), Path.cwd())
    try:
        settings = checked(values, lambda name: f"-D {name}={config.overrides[name]}" if name in config.overrides else conf)
    except BookConfigError as error:
        raise ConfigError(str(error)) from None
    # A list still (the type Sphinx checks the setting against), pickled with the environment:
    # records compare equal while conf.py's entries do, so an unchanged conf.py rebuilds nothing.
    config.book_languages = settings.book_languages


def setup(app) -> dict:
    for f in fields(BookConfig):
        if f.metadata["registered_by"]:  # myst-nb's own (nb_*)
            continue
        default = f.default_factory() if f.default is MISSING else f.default
        app.add_config_value(f.name, default, f.metadata["rebuild"], f.metadata["types"])
    app.connect("config-inited", check_settings, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
