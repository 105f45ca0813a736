"""The book's search: Sphinx's own index and search page, ranked for how readers search.

Readers paste whole error messages and ask "no_grad vs inference_mode" or "怎么冻结某一层";
Sphinx's searchtools wants every word of the query on a page and then sorts pages by
their single best word. This module keeps Sphinx's index and search page and adds

- how often each indexed word occurs on each page (``_static/searchcounts.js``), so
  that the browser can rank with BM25; the same file carries the language's synonyms
  (a term list's variants and the words readers type for its terms, docs/terms.zh.toml)
  and names the home page, which ranks below every chapter unless the query names it, and
  carries the search page's status lines in the book's words (configuration/messages.py);
- ``book-search.js`` on the search page only: a ranking that lets a pasted message match
  although the reader's own tensor or layer names are not in the book, boosts pages whose
  section heading the query quotes or names, cuts Chinese queries into the index's own
  words, and shows each result as the section that holds the query, with an excerpt
  around it and whole words highlighted;
- ``book-search.css`` on every page: the search box's icon beside the text, not over it;
- the Chinese index cut by jieba with the book's terms (docs/search_terms.zh.txt, and
  the term list's words);
- one search box per page: the theme's second one in an otherwise empty top bar is
  left out, and Sphinx's search scripts and index load on the search page only
  (templates/layout.html), not in the head of every chapter.

The contents lists (toctrees) are not indexed: the home page would otherwise hold the
headings of every chapter and answer every query with a dump of them. Nor is the code a
page shows (cells' inputs, included programs): the prose says what it does, its outputs
(errors, warnings, values) stay indexed, and flattened code made excerpts of code and
outweighed the prose of the section it stands in. The provenance page's table of pages
is not indexed either (every chapter's title, with "execution (s) 7.0" as the excerpt).

Pagefind (extended, with its own Chinese segmentation) was measured on the same queries:
out of the box it put fewer of them in the top three (it too wants every word of the
query), and it would replace the theme's search box and add a binary to the toolchain.

The tests are tests/test_browser_search.py, with the readers' queries in
tests/test_search_queries.toml.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import tomllib
from collections import Counter
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.search.zh import SearchChinese

from .. import build_state
from ..checks.prose import TERMS
from ..myst_source import HAN

ZH_SEARCH_TERMS = "search_terms.zh.txt"
# Whitespace-separated words of two letters or more: four in inline code make a quotation.
PHRASE_WORD = re.compile(r"(?:(?<=\s)|^)[^\W\d_]{2,}(?:['’][^\W\d_]+)?(?=\s|$)")
QUOTE_WORDS = 4
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
HAN_ONLY = re.compile(f"[{HAN}]+")
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
        self._words = options.get("words", "").split()
        super().__init__({"dict": ""})  # an empty path: the parent loads nothing

    def split(self, input: str) -> list[str]:
        if self._user_dict or self._words:
            from jieba import add_word, load_userdict

            quiet_jieba()  # this may load jieba's dictionary first (no warm-up without a reading turn)
            if self._user_dict:
                load_userdict(self._user_dict)
            for word in self._words:
                add_word(word, 1000)  # as search_terms.zh.txt weighs its words
            self._user_dict, self._words = None, []
        return super().split(input)

    def word_filter(self, stemmed_word: str) -> bool:
        return len(stemmed_word) > 1 or stemmed_word.isascii()


def quiet_jieba():
    """jieba, its progress lines silenced (they would break a quiet build's output): whichever
    use loads its dictionary first."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def chinese_words(app: Sphinx, text: str) -> list[str]:
    """``text`` cut into words by jieba, told the book's terms as the Chinese search is (so
    that 计算图 stays one word)."""
    jieba = quiet_jieba()
    language = getattr(getattr(app.builder, "indexer", None), "lang", None)
    if isinstance(language, LazyChineseSearch):
        language.split("")  # its first call adds the book's terms to jieba's dictionary
    return jieba.lcut(text)


def warm_up_segmenter(app: Sphinx) -> None:
    """For a Chinese build, load jieba's dictionary (0.6 s) in a thread now: called while the
    build waits for its reading turn (execution/page_execution.py), time it otherwise spends
    idle; its pages are indexed later, and jieba's own lock makes that wait for the load."""
    if (app.config.language or "").split("_")[0] != LazyChineseSearch.lang:
        return

    def load() -> None:
        quiet_jieba().initialize()

    threading.Thread(target=load, daemon=True).start()


def term_list(app: Sphinx) -> dict:
    """The language's term list (docs/terms.<code>.toml; checks/prose.py checks it), or {}."""
    path = Path(app.srcdir).parent / TERMS.format(code=Path(app.srcdir).name)
    return tomllib.loads(path.read_text(encoding="utf8")) if path.is_file() else {}


def synonyms(terms: dict) -> dict[str, str]:
    """What a reader may type for each of the book's words, mapped to the word.

    A term's variants (the words the edition does not use) and the term list's [search]
    table (words readers type that the book does not use, or rarely). Only words of
    Han characters: the browser cuts Chinese queries into words, and replaces these.
    """
    found = {variant: entry["use"] for entry in terms.get("term", []) for variant in entry.get("not", ())}
    found.update(terms.get("search", {}))
    return {word: use for word, use in sorted(found.items())
            if HAN_ONLY.fullmatch(word) and HAN_ONLY.fullmatch(use.replace(" ", ""))}


def use_search_terms(app: Sphinx, config: Config) -> None:
    terms = Path(app.srcdir).parent / ZH_SEARCH_TERMS
    if config.language.startswith("zh") and terms.is_file():
        # jieba splits 计算图 into 计算 + 图 unless told the book's terms: those of
        # search_terms.zh.txt and of the term list. The hash of both is an option too:
        # editing them then re-indexes every page.
        listed = sorted({entry["use"] for entry in term_list(app).get("term", [])
                         if HAN_ONLY.fullmatch(entry["use"])})
        digest = hashlib.sha256(terms.read_bytes() + " ".join(listed).encode()).hexdigest()[:16]
        config.html_search_options = {**(config.html_search_options or {}),
                                       "dict": str(terms), "words": " ".join(listed),
                                       "dict_sha256": digest}


# The languages of code a page shows as its source (a cell's input is marked as a whole).
CODE_LANGUAGES = {"python", "python3", "py", "ipython", "ipython3"}


def is_code(node: nodes.Element) -> bool:
    """A cell's input, or a program's source shown outside a cell (a literalinclude).

    Not a cell's output (what it printed: the messages readers paste), nor a "Check
    yourself" doctest (pycon: the chapter's facts with the values they print, which rank
    the page; book-search.js leaves them out of the sections it links to), nor a block of
    another language (a message quoted as text).
    """
    if isinstance(node, nodes.container):
        return "cell_input" in node["classes"]
    if not isinstance(node, nodes.literal_block) or node.get("language") not in CODE_LANGUAGES:
        return False
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.container) and {"cell_input", "cell_output"} & set(parent["classes"]):
            return False  # a cell's input is marked as a whole; an output is no code
        parent = parent.parent
    return True


def unindexed_contents(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Leave the contents lists and the code out of the index (Sphinx skips what is marked
    no-search, and the search page leaves it out of its excerpts).

    The home page's lists hold every chapter's headings: indexed, they made a short page
    that matches every query, with a list of headings as its excerpt. A program's source,
    flattened, made excerpts of code, and its docstrings and names outweighed the prose
    of the section it stands in: "梯度累积 loss 除以" landed on the DDP section, whose
    program's docstring says 梯度累积 and 损失 more often than the section that answers.
    The prose says what the code does, and the outputs (an error's message, a warning,
    the values printed) stay indexed: readers paste them.
    """
    if getattr(app.builder, "indexer", None) is None:
        return  # a builder without search (the offline editions)
    for wrapper in doctree.findall(nodes.compound):
        if "toctree-wrapper" in wrapper["classes"] and "no-search" not in wrapper["classes"]:
            wrapper["classes"].append("no-search")
    for code in list(doctree.findall(is_code)):
        if "no-search" not in code["classes"]:
            code["classes"].append("no-search")


def word_counts(indexer, doctree: nodes.document) -> Counter:
    """Each index word of the page and how often it occurs, as IndexBuilder.feed words it."""
    lang = indexer.lang
    counts: Counter = Counter()
    # Each word's index word, once a build: stemming every occurrence was most of the
    # time a prose edit's rebuild spent counting.
    index_words: dict[str, str | None] = indexer.__dict__.setdefault("book_index_words", {})
    # The collector that IndexBuilder.feed itself uses (private, so the same words by
    # construction; tests/test_browser_search.py checks the two agree).
    for word in indexer._word_collector(doctree).words:
        if word not in index_words:
            stemmed = lang.stem(word).lower()
            if not lang.word_filter(stemmed) and lang.word_filter(word):
                stemmed = word
            index_words[word] = stemmed if lang.word_filter(stemmed) else None
        if index_words[word] is not None:
            counts[index_words[word]] += 1
    return counts


def builder_counts(app: Sphinx) -> dict | None:
    """This build's per-page counts, starting from the previous build's file."""
    if getattr(app.builder, "indexer", None) is None:
        return None
    state = build_state.run(app)
    if state.search_counts is None:
        previous = Path(app.outdir) / "_static" / COUNTS_FILE
        pages = {}
        if previous.is_file():
            text = previous.read_text(encoding="utf8")
            if text.startswith(COUNTS_PREFIX):
                pages = json.loads(text[len(COUNTS_PREFIX):].rstrip().rstrip(";"))["pages"]
            # Entries of an earlier format ({word: count}) are counted again.
            pages = {name: entry for name, entry in pages.items()
                     if all(isinstance(words, str) for words in entry.get("counts", {}).values())}
        state.search_counts = pages
    return state.search_counts


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
            pages[docname] = page_entry(word_counts(indexer, doctree), quotations(doctree))
        else:
            pages.pop(docname, None)

    indexer.feed = feed_and_count
    indexer.book_counting = True


def quotations(doctree: nodes.document) -> list[list[str]]:
    """[section id, text] for each inline literal of a section that reads as a phrase.

    The error atlas quotes each message under its heading (`modified by an inplace
    operation`); a reader pastes the whole message, and the browser ranks a section whose
    quotation the query holds as it ranks one whose heading the query quotes. Code
    (`loss = criterion(out, y)`) has too few words to count.
    """
    found: list[list[str]] = []
    for literal in doctree.findall(nodes.literal):
        parent = literal.parent
        while parent is not None and not isinstance(parent, nodes.section | nodes.title):
            parent = parent.parent
        if not (isinstance(parent, nodes.section) and parent["ids"]):
            continue  # in a heading it is in the index's titles already
        # The whole message, and each of its sentences: a reader often pastes only the first
        # ("None of the inputs have requires_grad=True" of a warning that goes on).
        text = literal.astext()
        sentences = SENTENCE_END.split(text)
        for quote in [text, *(sentences if len(sentences) > 1 else [])]:
            if len(PHRASE_WORD.findall(quote)) >= QUOTE_WORDS and [parent["ids"][0], quote] not in found:
                found.append([parent["ids"][0], quote])
    return found


def page_entry(counts: Counter, quotes: list[list[str]]) -> dict:
    # A word met once needs no entry: the index already says the page has it. The others are
    # grouped by count, each group's words in one string ({"2": "graph leaf"}): a third of the
    # bytes of {"graph": 2, "leaf": 2}, on the search page's first load (book-search.js expands it).
    grouped: dict[int, list[str]] = {}
    for word, n in sorted(counts.items()):
        if n > 1 and " " not in word:
            grouped.setdefault(n, []).append(word)
    entry = {"length": sum(counts.values()), "counts": {str(n): " ".join(words) for n, words in sorted(grouped.items())}}
    return {**entry, "quotes": quotes} if quotes else entry


def expanded_counts(entry: dict) -> dict[str, int]:
    """A page entry's counts as {word: count} (what book-search.js makes of them)."""
    return {word: int(n) for n, words in entry.get("counts", {}).items() for word in words.split(" ")}


def status_messages(app: Sphinx) -> dict[str, str]:
    """The search page's status lines in the book's words (configuration/messages.py), which
    book-search.js shows instead of searchtools.js's: Sphinx's own ask the reader to select
    "categories" the site does not have, and its Chinese says 您 where the book says 你."""
    from ..configuration.messages import message

    return {name: message(app.config, f"search_{name}") for name in ("preparing", "searching", "none", "one", "many")}


def write_counts(app: Sphinx) -> None:
    pages = builder_counts(app)
    if pages is None:  # a builder without a search index (singlehtml, epub)
        return
    indexed = {name for name, title in app.builder.indexer._titles.items() if title}
    for name in sorted(indexed - set(pages)):
        # Written by an earlier build that left no counts: count its stored doctree.
        doctree = app.env.get_doctree(name)
        pages[name] = page_entry(word_counts(app.builder.indexer, doctree), quotations(doctree))
    kept = {name: pages[name] for name in sorted(pages) if name in indexed}
    target = Path(app.outdir) / "_static" / COUNTS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"pages": kept, "home": app.config.root_doc, "synonyms": synonyms(term_list(app)),
                       "messages": status_messages(app)},
                      ensure_ascii=False, separators=(",", ":"))
    target.write_text(f"{COUNTS_PREFIX}{data};\n", encoding="utf8")


def add_search_page_scripts(app: Sphinx, pagename: str, templatename, context, doctree) -> None:
    # Only the search page searches: the theme's search box on other pages submits to it.
    if pagename == "search":
        # Written before the page links it: Sphinx adds the file's checksum to the link
        # (?v=) as it renders the page, and a file written after (build-finished) left the
        # link with the previous build's, so a browser kept last build's counts (attack 8,
        # case 6). Sphinx renders the search page once every page is indexed.
        write_counts(app)
        app.add_js_file(COUNTS_FILE, loading_method="defer")
        app.add_js_file("book-search.js", loading_method="defer")


def setup(app: Sphinx) -> None:
    app.add_search_language(LazyChineseSearch)
    app.connect("config-inited", use_search_terms)
    app.connect("doctree-resolved", unindexed_contents)
    app.connect("doctree-resolved", count_while_indexing)
    app.connect("html-page-context", add_search_page_scripts)
    app.add_css_file("book-search.css")
