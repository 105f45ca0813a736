"""The site root's files (language chooser, 404, robots.txt, sitemap.xml), rendered from
their templates, exactly as tests/fixtures/root_files/ holds them: with and without a base
URL, a page name that needs percent-encoding, a page one language lacks, and strings that
need escaping in HTML and XML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from books import FIXTURES

from book_extensions.configuration.settings import Language
from book_extensions.site import root_files
from book_extensions.site.meta_and_footer import MANIFEST

LANGUAGES = [
    Language(code="en", sphinx="en", hreflang="en", name="English", project="Cutting the Graph",
             author="A & B", sentence_separator=" ", list_separator=", "),
    Language(code="zh", sphinx="zh_CN", hreflang="zh-CN", name="简体中文", project="切断计算图",
             author="A & B", sentence_separator=" ", list_separator=", "),
    Language(code="fr-x", sphinx="en", hreflang="fr", name="Français <d'accord>", project="L'arbre & \"le\" graphe",
             author="A & B", sentence_separator=" ", list_separator=", "),
]


def written(tmp_path: Path, base: str, hidden: tuple[str, ...] = ()) -> Path:
    site, doctrees, docs = tmp_path / "site", tmp_path / "doctrees", tmp_path / "docs"
    site.mkdir()
    for lang in LANGUAGES:
        (doctrees / lang.code).mkdir(parents=True)
        (doctrees / lang.code / MANIFEST).write_text(json.dumps({
            "code": lang.code, "base_url": base, "root_title": f"Root <{lang.project}>",
            "not_found": f"Not found: {lang.name}'s page", "not_found_link": "Start & go",
            **({"hidden": list(hidden)} if hidden else {})}))  # absent: a manifest from before "hidden"
        (docs / lang.code).mkdir(parents=True)
        for page in ["index", "a page", "章节"] + (["only-en"] if lang.code == "en" else []):
            (docs / lang.code / f"{page}.md").write_text("# x\n")
    assert root_files.write(site, doctrees, LANGUAGES, docs) is None
    return site


@pytest.mark.parametrize("case, base", [("with-base", "https://example.org/book"), ("without-base", "")])
def test_the_root_files_are_rendered_as_expected(tmp_path, case, base):
    site, expected = written(tmp_path, base), FIXTURES / "root_files" / case
    assert sorted(p.name for p in site.iterdir()) == sorted(p.name for p in expected.iterdir())
    for path in expected.iterdir():
        assert (site / path.name).read_text(encoding="utf8") == path.read_text(encoding="utf8"), path.name


def test_a_language_without_its_manifest_leaves_no_root_file(tmp_path):
    site = written(tmp_path, "https://example.org/book")
    (tmp_path / "doctrees" / "zh" / MANIFEST).unlink()
    problem = root_files.write(site, tmp_path / "doctrees", LANGUAGES, tmp_path / "docs")
    assert problem == "it waits for: zh"
    assert list(site.iterdir()) == []


def test_a_page_the_languages_hide_is_not_in_the_sitemap(tmp_path):
    """The device page, left out of the tables of contents until a CUDA run is recorded, is
    named in each language's manifest as hidden: the sitemap leaves it out, as a page and as
    an alternate."""
    sitemap = (written(tmp_path, "https://example.org/book", hidden=("a page",)) / "sitemap.xml").read_text()
    assert "a%20page" not in sitemap
    assert "en/only-en.html" in sitemap and "%E7%AB%A0%E8%8A%82" in sitemap  # the others stay
