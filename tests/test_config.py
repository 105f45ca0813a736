"""The book's settings are checked before anything runs, page sources are plain UTF-8, and
every address made from a page name is percent-encoded (book_extensions/configuration/settings.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from books import FIXTURES, ROOT, build_book


def conf_with(tmp_path: Path, change: str) -> Path:
    """A folder holding the book's conf.py with ``change`` appended: what --confdir names.

    The paths conf.py's folder anchors still lead into the repository, so that only the
    change can stop a build."""
    folder = tmp_path / "conf"
    folder.mkdir()
    anchored = "".join(f"{name} = {str(ROOT / value)!r}\n" for name, value in [
        ("html_favicon", "book_extensions/static/favicon.svg"), ("book_results_dir", "results"),
        ("book_releases_file", "torch-releases.txt")])
    (folder / "conf.py").write_text(
        (ROOT / "conf.py").read_text(encoding="utf8") + "\n" + anchored + change + "\n", encoding="utf8")
    return folder


def refused(build, *lines: str) -> None:
    """The build stopped before Sphinx, saying exactly ``lines``."""
    assert build.returncode == 2, build.output
    assert build.output.strip().splitlines() == [f"error: {line}" for line in lines]


@pytest.mark.fixture
@pytest.mark.parametrize(("change", "problem"), [
    ('book_languages[1].pop("sphinx")', "book_languages[1] has no 'sphinx' key"),
    ('book_languages[0]["hreflng"] = "en"',
     "book_languages[0] has an unknown key 'hreflng' (a language has: code, sphinx, hreflang, name, project, "
     "author, sentence_separator, list_separator, typography)"),
    ('book_languages[1]["name"] = 3', "book_languages[1]['name'] must be a string, not int (3)"),
    ('book_languages[1]["code"] = "en"', "book_languages[1] repeats the code 'en' of book_languages[0]"),
    ('book_languages[1]["typography"] = "CJK"', "book_languages[1]['typography'] must be '' or 'cjk', not 'CJK'"),
    ('book_languages = {"en": "English"}',
     "book_languages must be a list of one dict per language, the default first, not {'en': 'English'}"),
    # An interface language the book's strings are not translated into is refused, naming the
    # catalog to add: else its pages would silently get an English interface.
    ('book_languages[1].update(sphinx="fr", hreflang="fr")',
     "book_languages[1]['sphinx'] is 'fr', but the book's interface exists only in en, zh_CN: add "
     "book_extensions/locale/fr/LC_MESSAGES/book.po (translate zh_CN's), or use one of those"),
    # A new language's entry copied from English: French pages, an English interface.
    ('book_languages.append(dict(book_languages[0], code="fr", hreflang="fr", name="Français"))',
     ("book_languages[2] has hreflang 'fr' but sphinx 'en': both name the language of its pages "
      "(sphinx's is the language of its interface)",
      "book_languages[2] repeats the sphinx 'en' of book_languages[0]")),
    # Sphinx's doctest builder's default: a wrong exception message, or "...", would pass.
    ("import doctest; doctest_default_flags = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL",
     "doctest_default_flags turns on ELLIPSIS and IGNORE_EXCEPTION_DETAIL and leaves out DONT_ACCEPT_TRUE_FOR_1 (True "
     "would pass for 1) for every doctest (40): set it to doctest.DONT_ACCEPT_TRUE_FOR_1, and relax only the example "
     "that needs it (# doctest: +ELLIPSIS)"),
    # Attack 9, case 22: no flags at all let True pass for 1.
    ("doctest_default_flags = 0",
     "doctest_default_flags leaves out DONT_ACCEPT_TRUE_FOR_1 (True would pass for 1) for every doctest (0): set it to "
     "doctest.DONT_ACCEPT_TRUE_FOR_1, and relax only the example that needs it (# doctest: +ELLIPSIS)"),
    ('book_repository = "https://github.com/owner/book"',
     "book_repository must be 'owner/name' of a GitHub repository, or empty, not 'https://github.com/owner/book'"),
])
def test_a_bad_setting_is_one_line_naming_conf_py_and_the_key(tmp_path, change, problem):
    confdir = conf_with(tmp_path, change)
    build = build_book(FIXTURES / "good" / "docs", tmp_path, "html", "--language", "en", "--confdir", str(confdir))
    problems = (problem,) if isinstance(problem, str) else problem
    refused(build, *(f"{confdir / 'conf.py'}: {line}" for line in problems))


@pytest.mark.fixture
def test_a_missing_language_folder_is_one_line_naming_it(tmp_path):
    docs = tmp_path / "docs"
    (docs / "en").mkdir(parents=True)
    for page in (FIXTURES / "good" / "docs" / "en").iterdir():
        (docs / "en" / page.name).write_bytes(page.read_bytes())
    build = build_book(docs, tmp_path / "work", "html")
    refused(build, f"{docs / 'zh'}: no such folder, but conf.py's book_languages declares 'zh': "
                   "add its pages there, or build the other languages with --language")


@pytest.mark.fixture
@pytest.mark.parametrize("mode", ["force", "off"])
def test_the_execution_mode_is_the_books_to_set(tmp_path, mode):
    build = build_book(FIXTURES / "good" / "docs", tmp_path, "html", "--language", "en",
                       sphinx=("-D", f"nb_execution_mode={mode}"))
    refused(build, f"-D nb_execution_mode={mode}: nb_execution_mode is the book's to set ('cache'), not "
                   f"{mode!r}: every page runs through its execution cache; to execute pages again, give the "
                   "build another --cache-root or run `make clean-cache`")


@pytest.mark.fixture
def test_sphinx_build_run_by_hand_checks_the_settings_too(tmp_path):
    # Without the driver: the check is the config-inited handler's, before any page runs.
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(ROOT), "-D", "nb_execution_mode=off",
         "-D", f"book_cache_root={tmp_path / 'cache'}", str(FIXTURES / "good" / "docs" / "en"), str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert ("ConfigError: -D nb_execution_mode=off: nb_execution_mode is the book's to set ('cache'), "
            "not 'off'") in result.stderr
    assert not (tmp_path / "out" / "index.html").exists()


def test_every_setting_the_extensions_register_is_declared_and_checked_in_one_place():
    from dataclasses import fields

    from book_extensions.configuration.settings import BookConfig

    declared = {f.name for f in fields(BookConfig)}
    registered = {name for path in (ROOT / "book_extensions").rglob("*.py")
                  for name in re.findall(r"add_config_value\(\s*[\"'](\w+)", path.read_text(encoding="utf8"))}
    assert registered <= declared, registered - declared


def test_the_languages_are_handed_out_as_typed_records():
    # conf.py declares dicts (what languages exist is configuration); the code reads records.
    from dataclasses import FrozenInstanceError

    from book_extensions.configuration.settings import Language, check_settings, read

    languages = read(ROOT).book_languages
    assert [type(language) for language in languages] == [Language, Language]
    assert [(language.code, language.sphinx, language.typography) for language in languages] == [
        ("en", "en", ""), ("zh", "zh_CN", "cjk")]
    with pytest.raises(FrozenInstanceError):
        languages[0].code = "fr"

    class Config(dict):  # what check_settings reads of Sphinx's: values by name, the -D overrides
        overrides: dict = {}

    declared = [{"code": "en", "sphinx": "en", "hreflang": "en", "name": "English", "project": "P",
                 "author": "A", "sentence_separator": " ", "list_separator": ", "}]
    config = Config(book_languages=declared)
    check_settings(type("App", (), {"confdir": str(ROOT)})(), config)
    assert config.book_languages == [Language(**declared[0])]  # a list still: Sphinx's type for it


def test_a_page_with_a_byte_order_mark_is_refused_for_what_it_is(build_fixture):
    # Sphinx reads it; the book's other readers would not see its front matter.
    build = build_fixture("config_bom", "html", "--language", "en")
    assert build.returncode == 1, build.output
    warnings = [line for line in build.output.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, warnings
    assert "en/bom.md:1: WARNING: starts with a byte-order mark: save the page as UTF-8 without BOM" in warnings[0]


def test_addresses_made_from_page_names_are_percent_encoded(build_fixture):
    build = build_fixture("config_urls", "html", sphinx=(
        "-D", "book_repository=owner/book", "-D", "book_base_url=https://example.org/book"))
    assert build.returncode == 0, build.output
    site = build.site()
    tensor = "%E5%BC%A0%E9%87%8F"  # 张量
    page = (site / "zh" / "张量.html").read_text(encoding="utf8")
    for expected in [
        f'hreflang="en" href="https://example.org/book/en/{tensor}.html"',
        f'hreflang="zh-CN" href="https://example.org/book/zh/{tensor}.html"',
        f'hreflang="x-default" href="https://example.org/book/en/{tensor}.html"',
        f'href="_notebooks/{tensor}.ipynb"',
        f'href="https://colab.research.google.com/github/owner/book/blob/notebooks/zh/{tensor}.ipynb"',
        f'href="https://github.com/owner/book/edit/main/docs/zh/{tensor}.md"',
    ]:
        assert expected in page, expected
    assert 'href="https://example.org/book/zh/my%20page.html"' in (site / "en" / "my page.html").read_text(
        encoding="utf8")
    assert (site / "zh" / "_notebooks" / "张量.ipynb").is_file()  # where the encoded link leads
    sitemap = (site / "sitemap.xml").read_text(encoding="utf8")
    assert f"<loc>https://example.org/book/zh/{tensor}.html</loc>" in sitemap
    assert "<loc>https://example.org/book/en/my%20page.html</loc>" in sitemap
    # Nowhere an address with a space or a character outside ASCII.
    for path in [site / "sitemap.xml", *site.glob("*/*.html")]:
        addresses = re.findall(r'(?:href|src)="([^"]*)"|<loc>([^<]*)</loc>', path.read_text(encoding="utf8"))
        bad = [a for pair in addresses for a in pair if a and (" " in a or not a.isascii())]
        assert not bad, (path, bad)


def test_a_compiled_catalog_that_is_not_its_po_is_compiled_again_whatever_its_time(tmp_path):
    # A .po restored with an older time (cp -p, tar) must not leave the .mo of another text.
    import os
    from types import SimpleNamespace

    from book_extensions.configuration import languages

    catalogs = languages.compile_theme_catalogs(SimpleNamespace(doctreedir=str(tmp_path)))
    compiled = sorted(catalogs.rglob("*.mo"))
    assert compiled
    good = compiled[0].read_bytes()
    compiled[0].write_bytes(b"stale")
    os.utime(compiled[0], (4_000_000_000, 4_000_000_000))  # newer than any .po
    languages.compile_theme_catalogs(SimpleNamespace(doctreedir=str(tmp_path)))
    assert compiled[0].read_bytes() == good


def test_a_compiled_catalog_older_than_its_po_is_dated_anew_so_sphinx_leaves_it(tmp_path, monkeypatch):
    # Sphinx compiles a .mo older than its .po again, with other bytes than ours: the book's
    # own sources would then change under a build (the offline editions' stamps went stale).
    import os
    import shutil

    from book_extensions.commands import build
    from book_extensions.paths import PACKAGE

    shutil.copytree(PACKAGE / "locale", tmp_path / "locale")
    monkeypatch.setattr(build, "PACKAGE", tmp_path)
    build.compile_sphinx_catalogs()
    po = next((tmp_path / "locale").glob("*/LC_MESSAGES/book.po"))
    mo = po.with_suffix(".mo")
    compiled = mo.read_bytes()
    os.utime(mo, (1_000_000_000, 1_000_000_000))  # as a checkout leaves it: the .po newer
    build.compile_sphinx_catalogs()
    assert mo.read_bytes() == compiled and mo.stat().st_mtime_ns >= po.stat().st_mtime_ns


@pytest.mark.unit
@pytest.mark.parametrize(("override", "problem"), [
    # The pages would show no outputs while --record recorded them all.
    ("nb_remove_code_outputs=1", "nb_remove_code_outputs is the book's to leave off: every page shows its "
                                 "cells' outputs, and the record of the build holds what the pages show"),
    ("nb_remove_code_outputs=yes", "nb_remove_code_outputs must be True or False, not str ('yes')"),
    # A cell's warnings would vanish from its page.
    ("nb_output_stderr=remove", "nb_output_stderr is the book's to set ('show'), not 'remove': what a cell "
                                "prints to stderr (a warning) is shown with its other output"),
])
def test_what_every_page_shows_is_the_books_to_set(override, problem):
    from book_extensions.configuration import settings

    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=["-D", override]) == [f"-D {override}: {problem}"]
    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=["-D", "nb_remove_code_outputs=0"]) == []


@pytest.mark.unit
@pytest.mark.parametrize("override", ["suppress_warnings=book", "nb_metadata_key=book_page",
                                      "html_extra_path=extra", "exclude_patterns=second.md"])
def test_a_sphinx_or_myst_nb_setting_the_book_does_not_check_is_refused(override):
    # Attack 4, cases 14, 15, 17, 18: each passed to Sphinx unseen by the checks (every book
    # warning silenced, a page's execution settings under another key, a crash report, files
    # the digest of the site's inputs never read).
    from book_extensions.configuration import settings

    name = override.partition("=")[0]
    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=["-D", override]) == [
        f"-D {override}: the build takes -D only for the settings conf.py's BookConfig declares and checks "
        f"(book_*, nb_execution_timeout…), not {name}: set it in conf.py"]
    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=["-D", "nb_execution_timeout=60"]) == []


@pytest.mark.unit
@pytest.mark.parametrize("args", [["-qDsuppress_warnings=book"], ["--def", "suppress_warnings=book"],
                                  ["--define=suppress_warnings=book"], ["-nD", "suppress_warnings=book"]])
def test_a_setting_is_found_however_sphinx_build_reads_its_arguments(args):
    # Attack 5, cases 12, 13: a -D folded into other short options, or abbreviated as argparse
    # allows, reached Sphinx unchecked: Sphinx's own parser reads the arguments here too.
    from book_extensions.configuration import settings

    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=args) == [
        "-D suppress_warnings=book: the build takes -D only for the settings conf.py's BookConfig declares and "
        "checks (book_*, nb_execution_timeout…), not suppress_warnings: set it in conf.py"]


@pytest.mark.unit
@pytest.mark.parametrize(("args", "problem"), [
    # Attack 5, cases 14, 32, 33, 34, 37: each reached Sphinx after the driver's own options,
    # and built from another conf.py, published a single-page site and recorded it, or hid why
    # the build failed.
    (["-c", "/elsewhere"], "-c/--conf-dir: the build reads conf.py from --confdir"),
    (["-b", "singlehtml"], "-b/--builder: the build's first argument names the builder (html, doctest…)"),
    (["-C"], "-C/--isolated: the build reads conf.py from --confdir"),
    (["-d", "/tmp/trees"], "-d/--doctree-dir: the build keeps its doctrees in <out>/<device>/doctrees"),
    (["-j", "4"], "-j/--jobs: give the build --jobs (before --)"),
    (["-Q"], "-Q/--silent: it hides the warnings that fail the build: -q shows only those"),
    (["-w", "warnings.txt"], "-w/--warning-file: the build's warnings are in its output"),
    (["-A", "title=x"], "-A/--html-define: every page's context is conf.py's"),
    (["-t", "draft"], "-t/--tag: every page's content is conf.py's: `only` directives see its tags"),
    (["-P"], "-P/--pdb: the build runs unattended"),
    (["p.md"], "p.md: the build reads every page: name no pages"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["-j", "x"], "argument --jobs/-j: invalid jobs_argument value: 'x'"),
    (["--hel"], "-h and --version print and stop"),
    (["-D", "nb_execution_timeout"], "-D nb_execution_timeout: -D takes name=value"),
])
def test_only_sphinx_build_options_that_change_what_it_says_pass(args, problem):
    from book_extensions.configuration import settings

    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=args) == [
        f"after --: {problem}; sphinx-build takes -D (the settings conf.py's BookConfig declares), "
        "-n, -v, -q, -T, -N, --color, -E, -a, -W, --keep-going, --exception-on-warning"]


@pytest.mark.unit
def test_sphinx_reads_a_few_pages_in_one_process_and_more_in_parallel():
    # Forking readers for a page or two cost a fixture book's build 6 % more CPU than one
    # process (five alternating builds of tests/fixtures/good): the suite is CPU-bound.
    from book_extensions.commands.build import SERIAL_READ, jobs_for, parse_args

    few = {f"p{n}.md": "old" for n in range(SERIAL_READ)}
    more = {**few, "extra.md": "old"}
    edited = {**more, "p0.md": "new"}
    assert jobs_for(parse_args([]), True, {}, few) == "1"
    assert jobs_for(parse_args([]), True, few, more) == "auto"  # -E reads every page
    assert jobs_for(parse_args([]), False, more, edited) == "1"  # one page changed
    assert jobs_for(parse_args([]), False, {}, more) == "auto"
    assert jobs_for(parse_args(["-j", "2"]), True, {}, few) == "2"


@pytest.mark.unit
@pytest.mark.parametrize("args", [[], ["-n"], ["-vv"], ["-T", "--keep-going"], ["-N"], ["--color"], ["-E", "-a"],
                                  ["-q", "-W"], ["--exception-on-warning"], ["-nD", "nb_execution_timeout=60"]])
def test_sphinx_build_options_that_change_what_it_says_pass(args):
    from book_extensions.configuration import settings

    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=args) == []


@pytest.mark.unit
def test_an_option_a_newer_sphinx_build_adds_is_refused_until_read(monkeypatch):
    import sphinx.cmd.build

    from book_extensions.configuration import settings

    parser = sphinx.cmd.build.get_parser()
    parser.add_argument("--new-thing", action="store_true")
    monkeypatch.setattr(sphinx.cmd.build, "get_parser", lambda: parser)
    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=[]) == [
        f"after --: new_thing: an option of sphinx-build the build does not know; {settings.PASSED_HELP}"]


@pytest.mark.unit
@pytest.mark.parametrize(("override", "how"), [
    ("book_cache_root=/elsewhere", "give the build --cache-root"), ("book_device=cuda", "give the build --device"),
    ("book_reading_after=/tmp/x", "the order in which languages read"), ("language=zh_CN", "give the build --language")])
def test_a_setting_the_build_gives_sphinx_itself_is_refused(override, how):
    # Attack 6, cases 1-3: the driver locked and checked its own cache while Sphinx used
    # another, two builds shared one cache; a -D device or turn crashed Sphinx or hung it.
    from book_extensions.configuration import settings

    name = override.partition("=")[0]
    assert settings.problems(ROOT, ROOT / "docs", sphinx_args=["-D", override]) == [
        f"-D {override}: the build sets {name} itself ({how})"]
