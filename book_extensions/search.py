"""The book's search: Sphinx's own index and search page, ranked for how readers search.

Readers paste whole error messages and ask "no_grad vs inference_mode" or "怎么冻结某一层";
Sphinx's searchtools wants every word of the query on a page and then sorts pages by
their single best word. This module keeps Sphinx's index and search page and adds

- how often each indexed word occurs on each page (``_static/searchcounts.js``), so
  that the browser can rank with BM25;
- ``book-search.js`` on the search page only: a ranking that lets a pasted message match
  although the reader's own tensor or layer names are not in the book, boosts pages whose
  section heading the query quotes or names, cuts Chinese queries into the index's own
  words, and takes result excerpts from the article instead of the theme's menus;
- ``book-search.css`` on every page: the search box's icon beside the text, not over it;
- the Chinese index cut by jieba with the book's terms (docs/search_terms.zh.txt).

Pagefind (extended, with its own Chinese segmentation) was measured on the same queries:
out of the box it put fewer of them in the top three (it too wants every word of the
query), and it would replace the theme's search box and add a binary to the toolchain.

The tests are tests/test_browser_search.py, with the readers' queries in
tests/test_search_queries.toml.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.search.zh import SearchChinese

ZH_SEARCH_TERMS = "search_terms.zh.txt"
COUNTS_FILE = "searchcounts.js"
COUNTS_PREFIX = "window.bookSearchCounts = "


class LazyChineseSearch(SearchChinese):
    """Sphinx's Chinese search, with two changes.

    It loads jieba's dictionary only when a page is indexed (the stock class loads
    it, 0.6 s, on every build), and it keeps one-letter Latin words: the browser
    splits a pasted "Can't call numpy()" into can + t + call + numpy and wants
    every word, so an index without "t" finds nothing.
    """

    # Sphinx 9.0 names the browser's stemmer after language_name ("ChineseStemmer"),
    # but ships the English one for Chinese: without this, search.html and every
    # page's search box fail with "ChineseStemmer is not defined".
    language_name = "English"

    def __init__(self, options: dict[str, str]) -> None:
        self._user_dict = options.get("dict")
        super().__init__({"dict": ""})  # an empty path: the parent loads nothing

    def split(self, input: str) -> list[str]:
        if self._user_dict:
            from jieba import load_userdict

            load_userdict(self._user_dict)
            self._user_dict = None
        return super().split(input)

    def word_filter(self, stemmed_word: str) -> bool:
        return len(stemmed_word) > 1 or stemmed_word.isascii()


def use_search_terms(app: Sphinx, config: Config) -> None:
    terms = Path(app.srcdir).parent / ZH_SEARCH_TERMS
    if config.language.startswith("zh") and terms.is_file():
        # jieba splits 计算图 into 计算 + 图 unless told the book's terms. The file's hash
        # is an option too: editing the terms then re-indexes every page.
        digest = hashlib.sha256(terms.read_bytes()).hexdigest()[:16]
        config.html_search_options = {**(config.html_search_options or {}),
                                       "dict": str(terms), "dict_sha256": digest}


def word_counts(indexer, doctree: nodes.document) -> Counter:
    """Each index word of the page and how often it occurs, as IndexBuilder.feed words it."""
    lang = indexer.lang
    counts: Counter = Counter()
    # The collector that IndexBuilder.feed itself uses (private, so the same words by
    # construction; tests/test_browser_search.py checks the two agree).
    for word in indexer._word_collector(doctree).words:
        stemmed = lang.stem(word).lower()
        if not lang.word_filter(stemmed) and lang.word_filter(word):
            stemmed = word
        if lang.word_filter(stemmed):
            counts[stemmed] += 1
    return counts


def builder_counts(app: Sphinx) -> dict | None:
    """This build's per-page counts, starting from the previous build's file."""
    if getattr(app.builder, "indexer", None) is None:
        return None
    if not hasattr(app.builder, "book_search_counts"):
        previous = Path(app.outdir) / "_static" / COUNTS_FILE
        pages = {}
        if previous.is_file():
            text = previous.read_text(encoding="utf8")
            if text.startswith(COUNTS_PREFIX):
                pages = json.loads(text[len(COUNTS_PREFIX):].rstrip().rstrip(";"))["pages"]
        app.builder.book_search_counts = pages
    return app.builder.book_search_counts


def count_while_indexing(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Count each page's words when the html builder indexes it, from the same doctree.

    The builder makes a new indexer for each build, before it resolves the first page;
    indexing runs in the main process even when pages are written in parallel, and
    after the toctrees are filled in (which doctree-resolved comes before).
    """
    pages = builder_counts(app)
    indexer = app.builder.indexer if pages is not None else None
    if indexer is None or getattr(indexer, "book_counting", False):
        return
    feed = indexer.feed

    def feed_and_count(docname, filename, title, doctree):
        feed(docname, filename, title, doctree)
        if title:  # a page without a title, or marked no-search, is fed empty
            pages[docname] = page_entry(word_counts(indexer, doctree))
        else:
            pages.pop(docname, None)

    indexer.feed = feed_and_count
    indexer.book_counting = True


def page_entry(counts: Counter) -> dict:
    # A word met once needs no entry: the index already says the page has it.
    return {"length": sum(counts.values()),
            "counts": {w: n for w, n in sorted(counts.items()) if n > 1}}


def write_counts(app: Sphinx, exception: Exception | None) -> None:
    pages = builder_counts(app) if exception is None else None
    if pages is None:
        return
    indexed = {name for name, title in app.builder.indexer._titles.items() if title}
    for name in sorted(indexed - set(pages)):
        # Written by an earlier build that left no counts: count its stored doctree.
        pages[name] = page_entry(word_counts(app.builder.indexer, app.env.get_doctree(name)))
    kept = {name: pages[name] for name in sorted(pages) if name in indexed}
    target = Path(app.outdir) / "_static" / COUNTS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"pages": kept}, ensure_ascii=False, separators=(",", ":"))
    target.write_text(f"{COUNTS_PREFIX}{data};\n", encoding="utf8")


def add_search_page_scripts(app: Sphinx, pagename: str, templatename, context, doctree) -> None:
    # Only the search page searches: the theme's search box on other pages submits to it.
    if pagename == "search":
        app.add_js_file(COUNTS_FILE, loading_method="defer")
        app.add_js_file("book-search.js", loading_method="defer")


def setup(app: Sphinx) -> None:
    app.add_search_language(LazyChineseSearch)
    app.connect("config-inited", use_search_terms)
    app.connect("doctree-resolved", count_while_indexing)
    app.connect("html-page-context", add_search_page_scripts)
    app.connect("build-finished", write_counts)
    app.add_css_file("book-search.css")
