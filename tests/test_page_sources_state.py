"""A page source check's memory is its build's: two Sphinx applications in one process
(sphinx.testing, as tests/test_in_process.py) do not see each other's pages."""

from __future__ import annotations


def test_broken_front_matter_in_one_language_does_not_quiet_the_other(sphinx_book):
    # The same page: broken YAML in English (said as what it is, not "not a MyST notebook"),
    # no front matter at all in Chinese, built after it in the same process.
    en = sphinx_book("front_matter_languages", "en")
    zh = sphinx_book("front_matter_languages", "zh")
    en_warnings, zh_warnings = en.warning.getvalue(), zh.warning.getvalue()
    assert "the front matter is not valid YAML" in en_warnings, en_warnings
    assert "not a MyST notebook" not in en_warnings, en_warnings
    assert "not a MyST notebook" in zh_warnings, zh_warnings
    assert en.statuscode == zh.statuscode == 1

