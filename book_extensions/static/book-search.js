/* The book's search ranking, on top of Sphinx's searchtools.js (the search page only).
 *
 * Sphinx lists only the pages that hold every word of the query and orders them by their
 * single best word. Readers paste whole error messages, which carry their own tensor and
 * layer names that no page has, and ask questions ("how to freeze a layer", "怎么冻结某一层").
 * So this ranks every page that holds most of the query's weight with BM25 (word counts
 * from searchcounts.js, written by book_extensions/search.py), adds weight where a section
 * heading is quoted by the query or names it, and links such a result to that section.
 * Chinese queries are cut into the index's own words; excerpts come from the article, not
 * from the theme's menus. tests/test_browser_search.py holds the readers' queries.
 */
"use strict";
(() => {
  if (typeof Search === "undefined" || typeof Stemmer === "undefined") return;

  const K1 = 1.2; // BM25's usual constants
  const B = 0.75;
  const IN_HEADING = 1; // a query word in one of the page's section headings: this much more
  const IN_TITLE = 2; // ... in the page's title
  const QUOTED = 4; // the query quotes a heading (a pasted error message quotes the atlas's)
  const NAMED = 2; // a heading names all the query
  const ENOUGH = 0.8; // "all", for the two above
  const MIN_SHARE = 0.5; // the least share of the query's weight a listed page holds
  const EXCERPT = 240; // characters, as Sphinx's excerpts

  const HAN = "\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff";
  const IS_HAN = new RegExp(`[${HAN}]`, "u");
  const SCRIPT_RUNS = new RegExp(`[${HAN}]+|[^${HAN}]+`, "gu");
  const NOT_WORD = /[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/u; // searchtools' own split

  // Words that ask about something rather than name it; they weigh nothing.
  const ASKING = [
    "how", "why", "what", "when", "which", "do", "does", "should", "vs", "versus",
    "between", "difference", "differences", "different",
    "怎么", "怎样", "如何", "为什么", "为何", "什么", "还是", "区别", "差别", "不同", "哪个",
    "哪些", "有没有", "是不是",
  ];
  const stemmer = new Stemmer();
  const stem = (word) => stemmer.stemWord(word.toLowerCase());
  const asking = new Set([...ASKING, ...ASKING.map(stem)]);

  const index = () => Search._index;
  const has = (table, word) => Object.prototype.hasOwnProperty.call(table, word);
  const docsOf = (entry) => (entry === undefined ? [] : Array.isArray(entry) ? entry : [entry]);

  // Chinese has no spaces: cut a run into the longest words that the index holds (jieba
  // cut the pages; the browser has no jieba, but the index's words are jieba's words).
  let chineseWords = null;
  const cutChinese = (run) => {
    if (!index()) return [run];
    if (!chineseWords) {
      const words = [...Object.keys(index().terms), ...Object.keys(index().titleterms)];
      const han = new Set(words.filter((word) => IS_HAN.test(word)));
      chineseWords = { han, longest: Math.max(2, ...[...han].map((word) => word.length)) };
    }
    const words = [];
    for (let at = 0; at < run.length; ) {
      let length = Math.min(chineseWords.longest, run.length - at);
      while (length > 1 && !chineseWords.han.has(run.substr(at, length))) length--;
      if (length > 1) words.push(run.substr(at, length));
      at += length;
    }
    return words;
  };

  // searchtools' split, then Chinese runs cut into words ("detach和data区别": 4 words).
  window.splitQuery = (query) =>
    query
      .split(NOT_WORD)
      .filter((part) => part)
      .flatMap((part) => part.match(SCRIPT_RUNS))
      .flatMap((part) => (IS_HAN.test(part) ? cutChinese(part) : [part]));

  const wordsOf = (text) =>
    new Set(
      splitQuery(text)
        .filter((word) => !stopwords.has(word.toLowerCase()) && !/^\d+$/.test(word))
        .map(stem)
        .filter((word) => !asking.has(word)),
    );

  // Which pages hold a word, and with which weight (idf); partial matches as Sphinx's.
  const postings = (word) => {
    const { terms, titleterms } = index();
    let body = docsOf(terms[word]);
    let titled = docsOf(titleterms[word]);
    let partial = false;
    if (!body.length && !titled.length && word.length > 2 && !IS_HAN.test(word)) {
      const matching = (table) => Object.keys(table).filter((key) => key.includes(word));
      body = [...new Set(matching(terms).flatMap((key) => docsOf(terms[key])))];
      titled = [...new Set(matching(titleterms).flatMap((key) => docsOf(titleterms[key])))];
      partial = true;
    }
    const docs = new Set([...body, ...titled]);
    const total = index().docnames.length;
    const idf = Math.log(1 + (total - docs.size + 0.5) / (docs.size + 0.5));
    return { docs, titled: new Set(titled), idf: partial ? idf / 2 : idf };
  };

  let headingWords = null; // [heading, [[doc, anchor]], Set of its words]
  let titleWords = null; // per page, the words of its title
  const headings = () => {
    if (!headingWords) {
      headingWords = Object.entries(index().alltitles).map(([heading, places]) => [
        heading, places, wordsOf(heading),
      ]);
      titleWords = index().titles.map(wordsOf);
    }
    return headingWords;
  };

  const share = (words, weights, among) => {
    const all = [...words].reduce((sum, word) => sum + (weights.get(word) || 0), 0);
    const held = [...words].filter(among).reduce((sum, word) => sum + (weights.get(word) || 0), 0);
    return all ? [held / all, held] : [0, 0];
  };

  Search._performSearch = (query, searchTerms, excludedTerms) => {
    const { docnames, filenames, titles } = index();
    const counts = (window.bookSearchCounts || { pages: {} }).pages;
    const lengths = docnames.map((name) => (counts[name] || {}).length || 0);
    const average = lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.filter((n) => n).length) || 1;

    let words = [...searchTerms].filter((word) => !asking.has(word));
    if (!words.length) words = [...searchTerms]; // nothing but asking words: keep them
    const weights = new Map();
    const scores = new Map(); // doc -> {score, held}
    let queryWeight = 0;
    headings();
    for (const word of new Set(words)) {
      const { docs, titled, idf } = postings(word);
      if (!docs.size) continue; // a word of the reader's own code: no page has it
      weights.set(word, idf);
      queryWeight += idf;
      for (const doc of docs) {
        const count = ((counts[docnames[doc]] || {}).counts || {})[word] || 1;
        const norm = K1 * (1 - B + (B * (lengths[doc] || average)) / average);
        let score = (idf * count * (K1 + 1)) / (count + norm);
        if (titled.has(doc)) score += idf * IN_HEADING;
        if (titleWords[doc].has(word)) score += idf * IN_TITLE;
        const entry = scores.get(doc) || { score: 0, held: 0 };
        entry.score += score;
        entry.held += idf;
        scores.set(doc, entry);
      }
    }

    // Headings: the query quotes one (a pasted message), or one names all of the query.
    const best = new Map(); // doc -> {bonus, heading, anchor}
    const queryWords = new Set(weights.keys());
    const idfs = new Map(weights);
    const idf = (word) => (idfs.has(word) ? idfs : idfs.set(word, postings(word).idf)).get(word);
    for (const [heading, places, words] of headings()) {
      const all = [...words];
      const headingWeights = new Map(all.map((word) => [word, idf(word)]));
      // A Chinese heading quotes the English message in brackets: each script counts alone.
      const scripts = [all, all.filter((w) => !IS_HAN.test(w)), all.filter((w) => IS_HAN.test(w))];
      let bonus = 0;
      for (const part of scripts) {
        if (part.length < 2) continue;
        const [quoted, held] = share(part, headingWeights, (word) => queryWords.has(word));
        if (quoted >= ENOUGH) bonus = Math.max(bonus, QUOTED * held);
      }
      const [named, held] = share(queryWords, weights, (word) => words.has(word));
      if (named >= ENOUGH) bonus = Math.max(bonus, NAMED * held);
      if (!bonus) continue;
      for (const [doc, anchor] of places) {
        if ((best.get(doc) || { bonus: 0 }).bonus < bonus) best.set(doc, { bonus, heading, anchor });
      }
    }

    const excluded = [...excludedTerms].flatMap((word) => [...postings(word).docs]);
    const results = [];
    for (const [doc, { score, held }] of scores) {
      const section = best.get(doc);
      const coverage = queryWeight ? held / queryWeight : 0;
      if ((coverage < MIN_SHARE && !section) || excluded.includes(doc)) continue;
      const inSection = section && section.anchor;
      results.push([
        docnames[doc],
        inSection ? `${titles[doc]} > ${section.heading}` : titles[doc],
        inSection ? `#${section.anchor}` : "",
        null,
        (score + (section ? section.bonus : 0)) * coverage,
        filenames[doc],
        inSection ? "title" : "text",
      ]);
    }
    // searchtools shows the last one first.
    return results.sort((a, b) => a[4] - b[4] || (a[1] < b[1] ? 1 : -1));
  };

  // Excerpts: the article's text (or the section's), not the theme's buttons and menus.
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    const article = page.querySelector("article.bd-article") || page.querySelector('[role="main"]');
    if (!article) return "";
    article
      .querySelectorAll(".headerlink, script, style, button, nav, .no-search")
      .forEach((element) => element.remove());
    const section = anchor ? page.getElementById(anchor.slice(1)) : null;
    const text = (section && article.contains(section) ? section : article).textContent;
    return text.replace(/\s+/g, " ").trim();
  };

  // The excerpt shows the stretch of text with the most of the query's words.
  Search.makeSearchSummary = (htmlText, keywords, anchor) => {
    const text = Search.htmlToText(htmlText, anchor);
    if (!text) return null;
    const lower = text.toLowerCase();
    const words = [...keywords].filter((word) => !asking.has(word)).map((word) => word.toLowerCase());
    const hits = [];
    for (const word of words) {
      for (let at = lower.indexOf(word); at > -1 && hits.length < 2000; at = lower.indexOf(word, at + 1)) {
        hits.push([at, word]);
      }
    }
    hits.sort((a, b) => a[0] - b[0]);
    let start = 0;
    let most = 0;
    for (const [at] of hits) {
      const from = Math.max(0, at - 40);
      const inside = new Set(hits.filter(([p]) => p >= from && p < from + EXCERPT).map(([, w]) => w));
      if (inside.size > most) [most, start] = [inside.size, from];
    }
    const summary = document.createElement("p");
    summary.classList.add("context");
    summary.textContent =
      (start ? "…" : "") + text.substr(start, EXCERPT).trim() + (start + EXCERPT < text.length ? "…" : "");
    return summary;
  };
})();
