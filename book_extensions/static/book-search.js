/* The book's search ranking, on top of Sphinx's searchtools.js (the search page only).
 *
 * Sphinx lists only the pages that hold every word of the query and orders them by their
 * single best word. Readers paste whole error messages, which carry their own tensor and
 * layer names that no page has, and ask questions ("how to freeze a layer", "怎么冻结某一层").
 * So this ranks every page that holds most of the query's weight with BM25 (word counts
 * from searchcounts.js, written by book_extensions/site/search.py), adds weight where the query
 * quotes a section's heading or the message it quotes (a pasted error), or a heading names
 * the query. The home page ranks below every chapter unless the query names its title.
 * Chinese queries are cut into the index's own words, and a word the book does not use is
 * replaced by the book's (显存 by 内存: the term list's variants and synonyms, also from
 * searchcounts.js). Each result links to the section of its page that scores best for the
 * query as the ranking scores pages (with the messages the section shows, and the longest
 * run of the query it holds word for word), with an excerpt of the article from that
 * section (not the theme's menus), and only whole words highlighted; a result's page is
 * fetched for that once the result nears the view. tests/test_browser_search.py holds the
 * readers' queries.
 */
"use strict";
(() => {
  if (typeof Search === "undefined" || typeof Stemmer === "undefined") return;

  const K1 = 1.2; // BM25's usual constants
  const B = 0.75;
  const IN_HEADING = 1; // a query word in one of the page's section headings: this much more
  const IN_TITLE = 2; // ... in the page's title
  const IN_MESSAGE = 2; // a query word in a message a section shows (an error): this much more
  const QUOTED = 4; // the query quotes a heading, or a message a section quotes (a pasted error)
  const NAMED = 2; // a heading names all the query
  const ENOUGH = 0.8; // "all", for the two above
  // The least share of the query's weight a listed page holds. A question carries words of
  // the asker's own that the book seldom uses ("network", "validation"): at a half, one such
  // word, rare and so heavy, kept the answering page off the list.
  const MIN_SHARE = 0.4;
  const EXCERPT = 240; // characters, as Sphinx's excerpts

  const HAN = "\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff";
  const IS_HAN = new RegExp(`[${HAN}]`, "u");
  const SCRIPT_RUNS = new RegExp(`[${HAN}]+|[^${HAN}]+`, "gu");
  const NOT_WORD = /[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/u; // searchtools' own split

  // Words that ask about something rather than name it; they weigh nothing.
  const ASKING = [
    "how", "why", "what", "when", "which", "do", "does", "should", "vs", "versus",
    "between", "difference", "differences", "different",
    "i", "me", "my", "we", "you", "your", "can", "could", "would", "need", "must", "whether",
    "where", "anyone", "someone", "please", "possible", "help", "solve", "problem", "issue",
    "doesn", "don", "isn", "didn",
    "怎么", "怎样", "如何", "为什么", "为何", "什么", "还是", "区别", "差别", "不同", "之间", "哪个",
    "哪些", "有没有", "是不是",
    // ... and the book's subject, which a question names without saying anything: with
    // the code out of the index, "PyTorch" is a rare word that outweighed "zero_grad".
    "pytorch",
  ];
  // Chinese words that only ask (要不要, 吗) or say when (的时候): a Chinese run is cut at
  // them before it is cut into the index's words, so that they neither match nor join
  // the words beside them. Cut whole, 要不要除以 held 不要, which matched the heading
  // 对不要求梯度的张量求梯度 and sent "梯度累积时 loss 要不要除以步数" to the error atlas.
  const FUNCTION_WORDS = [
    "需不需要", "可不可以", "要不要", "能不能", "会不会", "是不是", "有没有", "用不用", "该不该",
    "为什么", "怎么办", "怎么样", "的时候", "为何", "为啥", "怎么", "怎样", "如何",
    "是否", "可以", "应该", "到底", "时候", "请问", "请教", "一下", "什么", "需要", "能否",
    "这么", "那么", "问题", "吗", "呢", "吧", "啊", "呀",
  ];
  const FUNCTION_WORD = new RegExp([...new Set(FUNCTION_WORDS)].sort((a, b) => b.length - a.length).join("|"), "u");
  const stemmer = new Stemmer();
  const stem = (word) => stemmer.stemWord(word.toLowerCase());
  const asking = new Set([...ASKING, ...ASKING.map(stem)]);

  const index = () => Search._index;
  // searchcounts.js holds each page's counts grouped by count ({"2": "word word", "3": "word"}),
  // a third of the bytes of one entry per word; here they are turned into {word: count} once.
  const searchData = () => {
    const data = window.bookSearchCounts || { pages: {} };
    if (!data.byWord) {
      for (const page of Object.values(data.pages)) {
        const byWord = {};
        for (const [count, words] of Object.entries(page.counts || {})) {
          for (const word of words.split(" ")) byWord[word] = Number(count);
        }
        page.counts = byWord;
      }
      data.byWord = true;
    }
    return data;
  };
  // The status lines in the book's words (site/search.py): searchtools' own ask for
  // "categories" the site does not have.
  const said = searchData().messages || {};
  if (said.searching) Documentation.TRANSLATIONS["Searching"] = said.searching;
  if (said.preparing) Documentation.TRANSLATIONS["Preparing search..."] = said.preparing;
  const finish = (count) => {
    _finishSearch(count);
    const line = count === 0 ? said.none : count === 1 ? said.one : said.many;
    if (line) Search.status.innerText = line.replace("{count}", count);
  };
  const synonyms = () => searchData().synonyms || {};
  const has = (table, word) => Object.prototype.hasOwnProperty.call(table, word);
  const docsOf = (entry) => (entry === undefined ? [] : Array.isArray(entry) ? entry : [entry]);

  // Chinese has no spaces: cut a run into the longest words that the index holds (jieba
  // cut the pages; the browser has no jieba, but the index's words are jieba's words).
  // Longest words from the start and from the end can differ: 不下降 is 不下 + 降 from the
  // start, 不 + 下降 from the end. Of the two, the cut that keeps more of the run's
  // characters wins, then the one with fewer words, then the one from the end, which is
  // more often right for Chinese (bidirectional maximum matching).
  let chineseWords = null;
  const longestWords = (run, fromEnd) => {
    const { han, longest } = chineseWords;
    const words = [];
    for (let rest = run.length; rest > 0; ) {
      let length = Math.min(longest, rest);
      const at = (n) => (fromEnd ? rest - n : run.length - rest);
      while (length > 1 && !han.has(run.substr(at(length), length))) length--;
      if (length > 1) words.push(run.substr(at(length), length));
      rest -= length;
    }
    return fromEnd ? words.reverse() : words;
  };
  const cutChinese = (run) => {
    if (!index()) return [run];
    if (!chineseWords) {
      const words = [...Object.keys(index().terms), ...Object.keys(index().titleterms)];
      const han = new Set(words.filter((word) => IS_HAN.test(word)));
      chineseWords = { han, longest: Math.max(2, ...[...han].map((word) => word.length)) };
    }
    const [forward, backward] = [longestWords(run, false), longestWords(run, true)];
    const kept = (words) => words.join("").length;
    if (kept(forward) !== kept(backward)) return kept(forward) > kept(backward) ? forward : backward;
    if (forward.length !== backward.length) return forward.length < backward.length ? forward : backward;
    // As many characters in as many words, two ways (一直增加到: 一直 + 增加, or 一直 + 加到):
    // the words of both, each weighed by how rare it is like any other query word.
    return [...new Set([...forward, ...backward])];
  };

  // Words the book does not use replaced by the book's, before cutting: 就地修改 is then
  // 原地修改, one word of the index, not 原地 + 修改.
  let readersWords = null;
  const inBookWords = (run) => {
    if (!readersWords) {
      const words = Object.keys(synonyms()).sort((a, b) => b.length - a.length); // longest first
      readersWords = words.length ? new RegExp(words.join("|"), "gu") : /$^/u;
    }
    return run.replace(readersWords, (word) => synonyms()[word]);
  };

  // searchtools' split, then Chinese runs cut into words ("detach和data区别": 4 words).
  window.splitQuery = (query) =>
    query
      .split(NOT_WORD)
      .filter((part) => part)
      .flatMap((part) => part.match(SCRIPT_RUNS))
      .flatMap((part) => (IS_HAN.test(part) ? inBookWords(part).split(FUNCTION_WORD).filter((run) => run).flatMap(cutChinese) : [part]));

  const isFiller = (word) => stopwords.has(word.toLowerCase()) || /^\d+$/.test(word);
  // A text's words as the query's: stemmed, in order, without stopwords and asking words.
  const wordList = (text) =>
    splitQuery(text)
      .filter((word) => !isFiller(word))
      .map(stem)
      .filter((word) => !asking.has(word));
  const wordsOf = (text) => new Set(wordList(text));

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

  // [heading, [[doc, anchor]], Set of its words, only quoted]: each section heading, and
  // each message a section quotes in inline code (searchcounts.js), as if it were one.
  let headingWords = null;
  let titleWords = null; // per page, the words of its title
  const headings = () => {
    if (!headingWords) {
      const entries = Object.entries(index().alltitles);
      const headingOf = new Map(entries.flatMap(([heading, places]) =>
        places.map(([doc, anchor]) => [`${doc}#${anchor}`, heading])));
      const pages = searchData().pages;
      const quotes = index().docnames.flatMap((name, doc) =>
        ((pages[name] || {}).quotes || []).map(([anchor, text]) => [
          headingOf.get(`${doc}#${anchor}`) || index().titles[doc], [[doc, anchor]], wordsOf(text), true,
        ]));
      headingWords = [
        ...entries.map(([heading, places]) => [heading, places, wordsOf(heading), false]),
        ...quotes,
      ];
      titleWords = index().titles.map(wordsOf);
    }
    return headingWords;
  };

  // Whether a page's title holds a word. A Chinese title is one of the book's terms more
  // often than not (冻结参数), which a question splits (冻结部分参数 is 冻结 + 部分 + 参数):
  // a Chinese word inside a word of the title counts.
  const inTitle = (doc, word) =>
    titleWords[doc].has(word) || (IS_HAN.test(word) && [...titleWords[doc]].some((t) => t.length > word.length && t.includes(word)));

  const share = (words, weights, among) => {
    const all = [...words].reduce((sum, word) => sum + (weights.get(word) || 0), 0);
    const held = [...words].filter(among).reduce((sum, word) => sum + (weights.get(word) || 0), 0);
    return all ? [held / all, held] : [0, 0];
  };

  Search._performSearch = (query, searchTerms, excludedTerms) => {
    const { docnames, filenames, titles } = index();
    const counts = searchData().pages;
    const lengths = docnames.map((name) => (counts[name] || {}).length || 0);
    const average = lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.filter((n) => n).length) || 1;

    let words = [...searchTerms].filter((word) => !asking.has(word));
    if (!words.length) words = [...searchTerms]; // nothing but asking words: keep them
    const weights = new Map();
    const order = wordList(query); // the query's words in order, for phrases
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
        if (inTitle(doc, word)) score += idf * IN_TITLE;
        const entry = scores.get(doc) || { score: 0, held: 0 };
        entry.score += score;
        entry.held += idf;
        scores.set(doc, entry);
      }
    }

    // Headings: the query quotes one (a pasted message), or one names all of the query.
    const best = new Map(); // doc -> {bonus, heading, anchor}
    const bonuses = new Map(); // doc -> Map(anchor -> bonus): each section's, for showResult
    const queryWords = new Set(weights.keys());
    const idfs = new Map(weights);
    const idf = (word) => (idfs.has(word) ? idfs : idfs.set(word, postings(word).idf)).get(word);
    // How much a heading (its words) is quoted or named by the query: [bonus, listed].
    const headingBonus = (words, onlyQuoted) => {
      const all = [...words];
      const headingWeights = new Map(all.map((word) => [word, idf(word)]));
      // A Chinese heading quotes the English message in brackets: each script counts alone.
      const scripts = [all, all.filter((w) => !IS_HAN.test(w)), all.filter((w) => IS_HAN.test(w))];
      let bonus = 0;
      let listed = false; // the heading holds the query's words, but as one word
      for (const part of scripts) {
        if (part.length < 2) continue;
        const [quoted, held] = share(part, headingWeights, (word) => queryWords.has(word));
        // A quotation is two words at least: one rare word ("GPU" of "What needs a GPU")
        // can hold most of a short heading's weight on its own. That lists the page, at
        // that heading, but weighs nothing more than the word's own count.
        const inQuery = part.filter((word) => queryWords.has(word)).length;
        if (quoted >= ENOUGH && inQuery >= 2) bonus = Math.max(bonus, QUOTED * held);
        else if (quoted >= ENOUGH) listed = true;
      }
      return [bonus, listed];
    };
    for (const [heading, places, words, onlyQuoted] of headings()) {
      const [named, held] = share(queryWords, weights, (word) => words.has(word));
      const namedBonus = named >= ENOUGH && !onlyQuoted ? NAMED * held : 0;
      const quotedBonus = headingBonus(words, onlyQuoted);
      for (const [doc, anchor] of places) {
        // A section's heading that repeats its page's title ("DDP 下的梯度累积" on the page
        // 梯度累积) is not quoted by a query that names the page: the title's words, which
        // every section of the page is about, count for the page, not for the section.
        const repeated = !onlyQuoted && heading !== titles[doc] && [...words].some((word) => titleWords[doc].has(word));
        const [quoted, listed] = repeated
          ? headingBonus(new Set([...words].filter((word) => !titleWords[doc].has(word))), onlyQuoted)
          : quotedBonus;
        const bonus = Math.max(quoted, namedBonus);
        if (!bonus && !listed) continue;
        if ((best.get(doc) || { bonus: -1 }).bonus < bonus) best.set(doc, { bonus, heading, anchor });
        if (!bonuses.has(doc)) bonuses.set(doc, new Map());
        if (anchor && !onlyQuoted && (bonuses.get(doc).get(anchor) || 0) < bonus) bonuses.get(doc).set(anchor, bonus);
      }
    }

    const excluded = [...excludedTerms].flatMap((word) => [...postings(word).docs]);
    // The home page holds a little of every chapter; it outranks none unless asked for.
    const home = docnames.indexOf(searchData().home);
    const homeAsked = home > -1 && share(queryWords, weights, (word) => titleWords[home].has(word))[0] >= ENOUGH;
    const below = new Set();
    const results = [];
    for (const [doc, { score, held }] of scores) {
      const section = best.get(doc);
      const coverage = queryWeight ? held / queryWeight : 0;
      if ((coverage < MIN_SHARE && !section) || excluded.includes(doc)) continue;
      const inSection = section && section.anchor;
      if (doc === home && !homeAsked) below.add(results.length);
      results.push([
        docnames[doc],
        inSection && section.heading !== titles[doc] ? `${titles[doc]} > ${section.heading}` : titles[doc],
        inSection ? `#${section.anchor}` : "",
        null,
        (score + (section ? section.bonus : 0)) * coverage,
        filenames[doc],
        inSection ? "title" : "text",
        { weights, bonuses: bonuses.get(doc), order },
      ]);
    }
    // searchtools shows the last one first.
    const ranked = results.map((result, at) => [result, below.has(at)]);
    ranked.sort(([a, aBelow], [b, bBelow]) => bBelow - aBelow || a[4] - b[4] || (a[1] < b[1] ? 1 : -1));
    return ranked.map(([result]) => result);
  };

  // ---- Showing the results: Sphinx's list, each result as its section. ----

  // Where the query's words are in a text: whole words whose stem (or the word as typed) is
  // the query's, and the query's Chinese words wherever they stand, since Chinese has no
  // spaces. Sphinx highlights substrings ("G[loss]ary" for "loss").
  const TOKEN = /[\p{Letter}\p{Number}_]+/gu;
  const IDENTIFIER = /[^_]_+[^_]|\p{Ll}\p{Lu}/u; // snake_case or camelCase
  const PARTS = /\p{Lu}?\p{Ll}+|\p{Lu}+(?!\p{Ll})/gu;
  const stems = new Map();
  const stemOf = (word) => {
    if (!stems.has(word)) stems.set(word, stem(word));
    return stems.get(word);
  };
  const matcher = (searchTerms, highlightTerms) => {
    const wanted = [...searchTerms, ...highlightTerms].filter((word) => !asking.has(word));
    const latin = new Set(wanted.filter((word) => !IS_HAN.test(word)));
    const han = [...new Set(wanted.filter((word) => IS_HAN.test(word)))];
    return (text) => {
      const hits = []; // [start, end, the query word]
      for (const token of text.matchAll(TOKEN)) {
        for (const run of token[0].matchAll(SCRIPT_RUNS)) {
          const at = token.index + run.index;
          if (IS_HAN.test(run[0])) {
            for (const word of han) {
              for (let i = run[0].indexOf(word); i > -1; i = run[0].indexOf(word, i + 1)) {
                hits.push([at + i, at + i + word.length, word]);
              }
            }
          } else {
            // An identifier's leading and trailing underscores are not part of its name:
            // requires_grad_() is the in-place requires_grad, __init__ is init.
            const lower = run[0].toLowerCase().replace(/^_+(?=[^_])|(?<=[^_])_+$/g, "");
            const word = latin.has(lower) ? lower : stemOf(lower);
            if (latin.has(word)) hits.push([at, at + run[0].length, stemOf(lower)]);
            else if (IDENTIFIER.test(run[0])) {
              // The words of an identifier: "running mean" is in running_mean, "batch
              // norm" in BatchNorm1d. They count for the section, but are not marked
              // (a highlight marks whole words).
              for (const part of run[0].matchAll(PARTS)) {
                const lowerPart = part[0].toLowerCase();
                if (latin.has(lowerPart) || latin.has(stemOf(lowerPart))) {
                  hits.push([at + part.index, at + part.index + part[0].length, stemOf(lowerPart), true]);
                }
              }
            }
          }
        }
      }
      return hits.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    };
  };

  // A text with its hits between from and to as Sphinx's highlighted spans.
  const marked = (text, hits, from = 0, to = text.length) => {
    const fragment = document.createDocumentFragment();
    let at = from;
    for (const [start, end, , part] of hits) {
      if (part || start < at || end > to) continue; // overlapping Chinese words: the first, longest
      const span = document.createElement("span");
      span.classList.add("highlighted");
      span.textContent = text.slice(start, end);
      fragment.append(text.slice(at, start), span);
      at = end;
    }
    fragment.append(text.slice(at, to));
    return fragment;
  };

  // A message a page shows: a traceback's or a warning's text in a cell's output, or inline
  // code that reads as a phrase (four words of letters, as search.py's quotations).
  const MESSAGE = ".output.traceback, .output.stderr";
  const isMessage = (element) => {
    if (element.closest(MESSAGE)) return true;
    const code = element.closest("code");
    if (!code || code.closest("pre")) return false;
    if (code.bookPhrase === undefined) {
      code.bookPhrase = (code.textContent.match(/(?:^|(?<=\s))\p{L}{2,}(?:['’]\p{L}+)?(?=\s|$)/gu) || []).length >= 4;
    }
    return code.bookPhrase;
  };

  // The article's text (not the theme's buttons and menus), whitespace collapsed, and
  // where each of its sections starts.
  const articleText = (html) => {
    const page = new DOMParser().parseFromString(html, "text/html");
    const article = page.querySelector("article.bd-article") || page.querySelector('[role="main"]');
    if (!article) return null;
    article
      // The "Check yourself" doctests (pycon) rank the page, but a result links to the
      // section that explains, not to the quiz that restates it. A table cell's label (a
      // phone's card repeats its column's header, site/readable_layout.py) is not the page's
      // text: an excerpt ran it into the cell ("与源张量共享存储True").
      .querySelectorAll(".headerlink, script, style, button, nav, .no-search, .highlight-pycon, .book-cell-label")
      .forEach((element) => element.remove());
    let text = "";
    const starts = []; // [offset, innermost section], in reading order
    const messages = []; // [start, end] of each message shown: an error, a warning, a quotation
    const walker = page.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      let value = node.nodeValue.replace(/\s+/g, " ");
      if (!text || text.endsWith(" ")) value = value.replace(/^ /, "");
      if (!value) continue;
      const section = node.parentElement.closest("section[id]");
      if (!starts.length || starts.at(-1)[1] !== section) starts.push([text.length, section]);
      if (isMessage(node.parentElement)) messages.push([text.length, text.length + value.length]);
      text += value;
    }
    return { page, text, starts, messages };
  };

  // Where a section's text begins and ends.
  const extent = ({ text, starts }, section) => {
    const inside = starts.filter(([, element]) => element && section.contains(element));
    if (!inside.length) return [0, text.length];
    const after = starts.find(([at, element]) => at > inside[0][0] && !(element && section.contains(element)));
    return [inside[0][0], after ? after[0] : text.length];
  };

  // Each section's score for the query, as the ranking scores a page: BM25 over the words of
  // its own text (not its subsections'), its length against the page's sections' average;
  // a query word in its heading counts as in a page's headings, in a parent's heading half
  // that, and in a message it shows (a traceback, a warning, a quoted message) IN_MESSAGE
  // times; plus the ranking's bonus where the query quotes or names its heading, and the
  // weight of the longest run of the query's words that it holds in the query's order,
  // times the run's length less one (a pasted message is a long run).
  //
  // The page's share of the query does not multiply it, as it does a page's score: the page
  // holds the query already, and a word that only names the page's subject ("LoRA" on the
  // adapters page) would send every query to the one section that spells it out.
  const sectionScores = (found, hits, weights, bonuses, order) => {
    const { page, text, starts } = found;
    const own = new Map(); // section -> {length, counts}
    const entry = (section) => {
      if (!own.has(section)) own.set(section, { length: 0, counts: new Map() });
      return own.get(section);
    };
    const at = []; // starts[i]'s end
    starts.forEach(([start, section], i) => {
      const end = i + 1 < starts.length ? starts[i + 1][0] : text.length;
      if (section) entry(section).length += end - start;
      at.push(end);
    });
    const sectionOf = []; // per hit
    const inMessages = new Map(); // section -> the query's words in the messages it shows
    const { messages } = found;
    for (let i = 0, run = 0, m = 0; i < hits.length; i++) {
      while (run < starts.length - 1 && at[run] <= hits[i][0]) run++;
      const section = starts[run] && starts[run][1];
      sectionOf.push(section);
      while (m < messages.length && messages[m][1] <= hits[i][0]) m++;
      if (section && m < messages.length && messages[m][0] <= hits[i][0]) {
        if (!inMessages.has(section)) inMessages.set(section, new Set());
        inMessages.get(section).add(hits[i][2]);
      }
      if (!section || !weights.has(hits[i][2])) continue;
      const { counts } = entry(section);
      counts.set(hits[i][2], (counts.get(hits[i][2]) || 0) + 1);
    }
    // The longest run of the query's words, in the query's order, that a section holds
    // word for word (stopwords between them aside): a pasted message, or a term of two words.
    const phrase = new Map(); // section -> its best run of two words or more
    let previous = null; // [end, Map(query position -> [weight, words])]
    for (let i = 0; i < hits.length; i++) {
      const [start, end, word] = hits[i];
      if (previous && start < previous[0]) continue; // overlapping Chinese words
      const gap = previous ? text.slice(previous[0], start) : null;
      // Between two words of an identifier (running_mean) only an underscore.
      const adjacent = gap !== null && splitQuery(gap.replace(/_/g, " ")).every(isFiller);
      const runs = new Map();
      order.forEach((queryWord, k) => {
        if (queryWord !== word) return;
        const [weight, length] = (adjacent && previous[1].get(k - 1)) || [0, 0];
        runs.set(k, [weight + (weights.get(word) || 0), length + 1]);
        if (length + 1 > 1 && sectionOf[i]) {
          const bonus = (weight + (weights.get(word) || 0)) * length;
          phrase.set(sectionOf[i], Math.max(phrase.get(sectionOf[i]) || 0, bonus));
        }
      });
      previous = [end, runs];
    }
    const sections = [...own.keys()];
    const average = sections.reduce((sum, section) => sum + own.get(section).length, 0) / Math.max(1, sections.length) || 1;
    const headingOf = (section) => section.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > h5, :scope > h6");
    const bonusOf = new Map(); // section -> the ranking's bonus for one of its anchors
    for (const [anchor, bonus] of bonuses || []) {
      const element = page.getElementById(anchor);
      const section = element && (element.closest("section[id]") || null);
      if (section) bonusOf.set(section, Math.max(bonus, bonusOf.get(section) || 0));
    }
    // The page's title names what every section is about: a query word in it (梯度累积 on
    // the gradient-accumulation page) tells the sections apart only where a section's own
    // text says it, not where a heading repeats it ("DDP 下的梯度累积" took every query
    // about dividing the loss from the section that explains the division).
    const h1 = page.querySelector("article h1, h1");
    const inTitle = h1 ? wordsOf(h1.textContent) : new Set();
    const scores = new Map();
    for (const section of sections) {
      const { length, counts } = own.get(section);
      const heading = headingOf(section);
      const inHeading = heading && heading.tagName !== "H1" ? wordsOf(heading.textContent) : new Set();
      const inParents = new Set();
      for (let parent = section.parentElement?.closest("section[id]"); parent; parent = parent.parentElement?.closest("section[id]")) {
        const title = headingOf(parent);
        if (title && title.tagName !== "H1") wordsOf(title.textContent).forEach((word) => inParents.add(word));
      }
      const norm = K1 * (1 - B + (B * length) / average);
      let score = 0;
      for (const [word, idf] of weights) {
        const count = counts.get(word) || 0;
        if (count) score += (idf * count * (K1 + 1)) / (count + norm);
        if ((inMessages.get(section) || new Set()).has(word)) score += idf * IN_MESSAGE;
        if (inTitle.has(word)) continue;
        if (inHeading.has(word)) score += idf * IN_HEADING;
        else if (inParents.has(word)) score += (idf * IN_HEADING) / 2;
      }
      scores.set(section, score + (phrase.get(section) || 0) + (bonusOf.get(section) || 0));
    }
    return { scores, sectionOf };
  };

  // The section of a page that best answers the query (sectionScores), and the stretch of
  // it with the most of the query's weight, with that section's heading.
  const bestStretch = (found, weights, bonuses, order, match) => {
    const { text, starts } = found;
    const allHits = match(text);
    const { scores, sectionOf } = sectionScores(found, allHits, weights, bonuses, order);
    let section = null;
    let top = 0;
    for (const [candidate, score] of scores) {
      if (score > top) [top, section] = [score, candidate];
    }
    if (!section) section = (starts.find(([, element]) => element) || [])[1] || null;
    const [low, high] = section ? extent(found, section) : [0, text.length];
    const hits = allHits.filter((hit, i) => hit[0] >= low && hit[0] < high && (!section || sectionOf[i] === section));
    // A window from 40 characters before each hit: the hits in it are hits[left..right).
    let start = low;
    let most = 0;
    const inWindow = new Map(); // word -> hits of it in the window
    let weight = 0; // of the distinct words in the window
    const count = (word, step) => {
      const n = (inWindow.get(word) || 0) + step;
      if (n && !inWindow.has(word)) weight += weights.get(word) || 0.1;
      if (!n) weight -= weights.get(word) || 0.1;
      if (n) inWindow.set(word, n);
      else inWindow.delete(word);
    };
    for (let i = 0, left = 0, right = 0; i < hits.length; i++) {
      const from = Math.max(low, hits[i][0] - 40);
      for (; right < hits.length && hits[right][0] < from + EXCERPT; right++) count(hits[right][2], 1);
      for (; hits[left][0] < from; left++) count(hits[left][2], -1);
      if (weight > most + 1e-9) [most, start] = [weight, from];
    }
    const first = hits.find(([at]) => at >= start);
    const where = first ? first[0] : start;
    // Begin at a word: Latin text breaks at spaces (Chinese anywhere).
    const sectionStart = low;
    start = Math.max(start, sectionStart);
    const space = text.indexOf(" ", start);
    if (start > sectionStart && /[A-Za-z0-9_]/.test(text[start - 1]) && space > -1 && space < where) start = space + 1;
    const heading = section && !section.querySelector(":scope > h1") ? section.querySelector("h1, h2, h3, h4, h5, h6") : null;
    // End at a word too, and without the space before the "…".
    let end = Math.min(text.length, start + EXCERPT);
    const lastSpace = text.lastIndexOf(" ", end);
    if (end < text.length && /[A-Za-z0-9_]/.test(text[end]) && lastSpace > start + EXCERPT / 2) end = lastSpace;
    while (end > start && text[end - 1] === " ") end--;
    const summary = document.createElement("p");
    summary.classList.add("context");
    const cut = start > 0 && start !== sectionStart; // a section's start is no cut
    summary.append(cut ? "…" : "", marked(text, allHits, start, end), end < text.length ? "…" : "");
    return {
      summary,
      section: section ? section.id : null,
      heading: heading ? heading.textContent.replace(/\s+/g, " ").trim() : null,
    };
  };

  // A result's page is fetched for its excerpt and section once the result comes within a
  // screen of the view, not for every result at once: a search listed some twenty pages, and
  // a phone downloaded and parsed each of them.
  const nearView = (item, read) => {
    if (typeof IntersectionObserver === "undefined") return read();
    const watcher = new IntersectionObserver((seen) => {
      if (!seen.some((entry) => entry.isIntersecting)) return;
      watcher.disconnect();
      read();
    }, { rootMargin: "0px 0px 100% 0px" });
    watcher.observe(item);
  };

  // Each page's article text, read once per visit to the search page (articleText does
  // not depend on the query); null where the page cannot be fetched (a site opened from
  // disk): its result keeps its plain link.
  const pageTexts = new Map();
  const pageText = (docName) => {
    if (!pageTexts.has(docName)) {
      pageTexts.set(docName, fetch(document.documentElement.dataset.content_root + docName + DOCUMENTATION_OPTIONS.FILE_SUFFIX)
        .then((response) => response.text())
        .then(articleText)
        .catch(() => null));
    }
    return pageTexts.get(docName);
  };

  const showResult = ([docName, title, anchor, , score, , kind, { weights, bonuses, order }], match) => {
    const { LINK_SUFFIX } = DOCUMENTATION_OPTIONS;
    const item = document.createElement("li");
    item.classList.add(`kind-${kind}`);
    const link = item.appendChild(document.createElement("a"));
    link.href = docName + LINK_SUFFIX + anchor;
    link.dataset.score = score;
    link.append(marked(title, match(title)));
    Search.output.appendChild(item);
    nearView(item, () =>
      pageText(docName).then((found) => {
        const best = found && bestStretch(found, weights, bonuses, order, match);
        if (!best) return;
        const pageTitle = index().titles[index().docnames.indexOf(docName)];
        const shown = best.heading ? `${pageTitle} > ${best.heading}` : pageTitle;
        if (best.section) link.href = `${docName}${LINK_SUFFIX}#${best.section}`;
        link.replaceChildren(marked(shown, match(shown)));
        item.appendChild(best.summary);
      }));
  };

  // searchtools' query, but each result shown by showResult.
  Search.query = (query) => {
    const [searchQuery, searchTerms, excludedTerms, highlightTerms, objectTerms] = Search._parseQuery(query);
    // sphinx_highlight.js would mark these on the page a result opens, inside words too.
    localStorage.removeItem("sphinx_highlight_terms");
    const results = Search._performSearch(searchQuery, searchTerms, excludedTerms, highlightTerms, objectTerms);
    const match = matcher(searchTerms, highlightTerms);
    for (const result of [...results].reverse()) showResult(result, match);
    finish(results.length);
  };
})();
