"""Reading a built site the way a browser and a reader would (used by several tests)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import snowballstemmer

# Latin words the Chinese interface may show: key names, product names, and the
# local label of the torch version ("2.13.0+cpu").
# The licence names (CC BY-SA 4.0, MIT-0) stay as written: they are names, not English.
# notebook is the Chinese edition's own word for the file (docs/terms.zh.toml refuses 笔记本).
ALLOWED_IN_ZH = {"Ctrl", "PyTorch", "torch", "CPU", "GPU", "PDF", "cpu", "CC", "BY", "SA", "MIT", "notebook"}

# searchtools.js splits a query on anything that is not a letter, digit or "_".
QUERY_SPLIT = re.compile(r"[^\w]+")


def load_search_index(site_language_dir: Path) -> dict:
    text = (site_language_dir / "searchindex.js").read_text(encoding="utf8")
    return json.loads(text[text.index("(") + 1: text.rindex(")")])


def stopwords(site_language_dir: Path) -> set[str]:
    text = (site_language_dir / "_static" / "language_data.js").read_text(encoding="utf8")
    match = re.search(r"stopwords = new Set\((\[.*?\])\)", text, re.S)
    return set(json.loads(match.group(1))) if match else set()


def search(site_language_dir: Path, query: str) -> set[str]:
    """Pages whose text or title holds every word of ``query``, as Sphinx's search finds them."""
    index = load_search_index(site_language_dir)
    stemmer = snowballstemmer.stemmer("english")
    skip = stopwords(site_language_dir)
    found: set[str] | None = None
    for word in filter(None, QUERY_SPLIT.split(query.lower().strip())):
        if word in skip or word.isdigit():
            continue  # searchtools.js drops these too
        word = stemmer.stemWord(word)
        hits: set[int] = set()
        for table in ("terms", "titleterms"):
            entry = index[table].get(word, [])
            hits |= {entry} if isinstance(entry, int) else set(entry)
        pages = {index["docnames"][i] for i in hits}
        found = pages if found is None else found & pages
    return found or set()


class VisibleText(HTMLParser):
    """Interface text of a page: visible text and labelling attributes, skipping
    code, outputs, scripts, and anything marked as another language."""

    SKIP_TAGS = {"script", "style", "pre", "code", "kbd", "noscript", "svg"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
            "source", "track", "wbr"}
    LABELS = ("title", "aria-label", "placeholder", "alt")

    def __init__(self, language: str, skip_tags: frozenset = frozenset()) -> None:
        super().__init__(convert_charrefs=True)
        self.language = language
        self.skip_tags = self.SKIP_TAGS | skip_tags
        self.stack: list[bool] = []  # per open element: is it skipped?
        self.texts: list[str] = []

    def skipping(self) -> bool:
        return any(self.stack)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        lang = values.get("lang")
        skip = (tag in self.skip_tags or "cell" in classes or "highlight" in classes
                or (lang is not None and tag != "html" and not lang.startswith(self.language)))
        if not self.skipping() and not skip:
            self.texts += [values[a] for a in self.LABELS if values.get(a)]
        if tag not in self.VOID:
            self.stack.append(skip)

    def handle_startendtag(self, tag, attrs):
        if not self.skipping():
            values = dict(attrs)
            self.texts += [values[a] for a in self.LABELS if values.get(a)]

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if not self.skipping() and data.strip():
            self.texts.append(data.strip())


def english_words(html_file: Path, language: str, allowed: set[str],
                  skip_tags: frozenset = frozenset()) -> set[str]:
    """Words of two or more Latin letters in the page's interface, less ``allowed``."""
    parser = VisibleText(language, skip_tags)
    parser.feed(html_file.read_text(encoding="utf8"))
    words = {w for text in parser.texts for w in re.findall(r"[A-Za-z]{2,}", text)}
    return words - allowed
