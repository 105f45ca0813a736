"""The torch releases readers still run, in the book: what each printed, and what changed.

The releases are listed in ``torch-releases.txt`` (:mod:`.release_list`). ``nox -s versions``
executes every code cell of the book under each, in that release's own environment, and
writes ``results/cpu-torch-<release>.json`` (the command: :mod:`.release_records`), a record
in the format of the device records (:mod:`.cell_records`), compared by the same engine, cell
by cell, with :func:`rules_for`: between releases the wording of a message is the news,
and only noise such as the line of torch's own C++ source is normalised.

In the book, computed from those records and never typed:

- under each cell whose output differs in another listed release, a folded note with
  what that release printed;
- at the end of each page, on which releases its outputs were verified;
- the ``{torch-releases}`` directive: per pair of consecutive releases, the cells whose
  behaviour or message changed, with links to them.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from .. import build_state
from ..configuration.languages import current_language
from ..configuration.messages import message
from ..execution import page_state
from ..site.readable_layout import as_container, as_paragraph, end_container, end_paragraph, table
from . import cell_records
from .release_list import ReleasesError, listed


def current_release() -> str:
    """The release of the installed torch, without a local build label such as +cpu."""
    from ..execution.cache_key import torch_version

    return torch_version().split("+")[0]


def record_path(results: Path, release: str) -> Path:
    return results / f"cpu-torch-{release}.json"


def recorded(results: Path, releases: list[str]) -> dict[str, dict]:
    """The records that exist, by release, oldest first (not to be changed: they are shared)."""
    found = {}
    for release in releases:
        data = loaded_record(record_path(results, release))
        if data is not None:
            found[release] = data
    return found


# Each record this process parsed, by path, with the file's identity then: every page read
# compares its cells with every release's record (about 1 MB of JSON), which it parsed again
# for each page.
_LOADED: dict[Path, tuple[tuple[int, ...], dict]] = {}


def loaded_record(path: Path) -> dict | None:
    """:func:`.cell_records.load`, parsed once while the file stays as it was."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    identity = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    kept = _LOADED.get(path)
    if kept is None or kept[0] != identity:
        data = cell_records.load(path)
        if data is None:
            return None
        kept = _LOADED[path] = (identity, data)
    return kept[1]


# --- comparing -----------------------------------------------------------------

def rules_for(old: str, new: str) -> cell_records.Rules:
    return cell_records.Rules(names=(old, new), devices=False, wording=True)


def changes(old: dict, new: dict, digests: dict[str, list[str]] | None = None) -> list[cell_records.Difference]:
    """What changed from the ``old`` release's record to the ``new`` one."""
    return cell_records.compare(old, new, digests, rules_for(cell_records.release_of(old), cell_records.release_of(new)))


Marked = list[tuple[str, bool]]  # a text in pieces, each marked changed or not


def marked_excerpt(first: str, second: str, context: int = 3) -> tuple[Marked, Marked]:
    """The words in which two lines differ, each change with a few words around it,
    the changed words marked.

    Error messages run to a hundred words; a change is usually two of them.
    """
    from difflib import SequenceMatcher

    a, b = first.split(" "), second.split(" ")
    changed = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not changed:
        return [(first, False)], [(second, False)]

    def cut(words: list[str], spans: list[tuple[int, int]]) -> Marked:
        keep: list[tuple[int, int]] = []
        for low, high in spans:
            low, high = max(0, low - context), min(len(words), high + context)
            if keep and low <= keep[-1][1]:
                keep[-1] = (keep[-1][0], max(high, keep[-1][1]))
            else:
                keep.append((low, high))
        out: Marked = [("… ", False)] if keep[0][0] else []
        for number, (low, high) in enumerate(keep):
            if number:
                out.append((" … ", False))
            for i in range(low, high):
                out += [(" ", False)] if i > low else []
                out.append((words[i], any(start <= i < end for start, end in spans)))
        if keep[-1][1] < len(words):
            out.append((" …", False))
        return merged(out)

    return (cut(a, [(i1, i2) for _, i1, i2, _, _ in changed]),
            cut(b, [(j1, j2) for _, _, _, j1, j2 in changed]))


def excerpt(first: str, second: str, context: int = 3) -> tuple[str, str]:
    """:func:`marked_excerpt` as plain text."""
    return tuple("".join(text for text, _ in side) for side in marked_excerpt(first, second, context))


def marked_words(text: str, other: str) -> Marked:
    """``text`` whole, with the words it does not share with ``other`` marked: what another
    release printed, against what this one prints."""
    from difflib import SequenceMatcher

    tokens, others = re.findall(r"\s+|\S+", text), re.findall(r"\s+|\S+", other)
    out: Marked = []
    for tag, i1, i2, _, _ in SequenceMatcher(None, tokens, others, autojunk=False).get_opcodes():
        out += [(token, tag != "equal" and not token.isspace()) for token in tokens[i1:i2]]
    return merged(out)


def merged(pieces: Marked) -> Marked:
    """Neighbouring pieces with the same mark as one; the spaces between two changed words
    belong to the change, but not a line break: a mark never spans lines (each wrapped line
    then hangs on its own, readable_layout.hang_indented)."""
    out: Marked = []
    for number, (text, changed) in enumerate(pieces):
        if not text:
            continue
        if (text.isspace() and "\n" not in text and out and out[-1][1] and number + 1 < len(pieces)
                and pieces[number + 1][1]):
            changed = True
        if out and out[-1][1] == changed:
            out[-1] = (out[-1][0] + text, changed)
        else:
            out.append((text, changed))
    return out


def cell_outputs(cell) -> list[str]:
    """An executed notebook cell's outputs as a record holds them."""
    return [cell_records.output_text(o) for o in cell_records.joined_streams(cell.get("outputs", []))]


def cell_media(cell) -> list[str]:
    """The digests of what an executed cell shows besides text, as a record holds them (a kind
    none can compare is left out here: recording the book refuses it)."""
    return cell_records.media(cell.get("outputs", []))


# --- in the book ---------------------------------------------------------------


class release_output(nodes.General, nodes.Element):
    """What another release printed for a cell: folded (``<details>``) on the web."""


class release_summary(nodes.General, nodes.TextElement):
    """The line that says which release printed it: the fold's ``<summary>``."""


class changed_words(nodes.Inline, nodes.TextElement):
    """Words that another release printed differently: ``<del>`` in the older release's
    column of the page of changes, ``<ins>`` in the newer one's, ``<mark>`` in a fold."""


CHANGED_TAGS = {"old": "del", "new": "ins", "other": "mark"}


def _html_changed(self, node):
    self.body.append(f'<{CHANGED_TAGS[node["side"]]} class="book-changed">')


def _end_changed(self, node):
    self.body.append(f'</{CHANGED_TAGS[node["side"]]}>')


def _nothing(self, node):
    pass


def marked_nodes(pieces: Marked, side: str) -> list[nodes.Node]:
    return [changed_words(text, text, side=side) if changed else nodes.Text(text) for text, changed in pieces]


def marked_block(pieces: Marked) -> nodes.literal_block:
    """What another release printed, its changed words marked (a parsed literal: Sphinx
    highlights a block only while its text is its source)."""
    text = "".join(text for text, _ in pieces)
    if not any(changed for _, changed in pieces):
        return nodes.literal_block(text, text, language="none")
    return nodes.literal_block("", "", *marked_nodes(pieces, "other"), language="none")


def as_text(outputs: list[str]) -> str:
    """A cell's outputs as one block of text, as the page shows them."""
    return "".join(o if o.endswith("\n") else o + "\n" for o in outputs).rstrip("\n")


class cell_reference(nodes.General, nodes.TextElement):
    """A link to code cell ``cell`` of ``page``, resolved once the builder knows its URIs."""


def _html_details(self, node):
    self.body.append('<details class="book-release-output">')


def _html_summary(self, node):
    # The line break is the summary's end to anything that reads the page's text: the search's
    # excerpts ran it into the output ("(differs from the above)8…").
    self.body.append(f"<summary>{escape(node.astext())}</summary>\n")
    raise nodes.SkipNode


def _close_details(self, node):
    self.body.append("</details>")


def records_and_releases(app: Sphinx) -> tuple[Path, list[str]]:
    """The results folder and the listed releases; a bad list stops the build with its reason."""
    from sphinx.errors import ConfigError

    results = Path(app.confdir, app.config.book_results_dir)
    try:
        return results, listed(Path(app.confdir, app.config.book_releases_file))
    except (OSError, ReleasesError) as error:
        raise ConfigError(str(error)) from None


def note_records(env, results: Path, releases: list[str], releases_file: Path) -> None:
    env.note_dependency(str(releases_file))
    for release in releases:
        path = record_path(results, release)
        if path.exists():
            env.note_dependency(str(path))


def annotate(app: Sphinx, docname: str, doctree: nodes.document, notebook) -> list[nodes.Node]:
    """Anchor every code cell; fold other releases' outputs under cells they differ in.

    Returns what the page's provenance line adds: on which releases it was verified.
    """
    results, releases = records_and_releases(app)
    note_records(app.env, results, releases, Path(app.confdir, app.config.book_releases_file))
    current = current_release()
    # A release whose record lacks the page (added since) has nothing to say about it.
    others = {r: data for r, data in recorded(results, releases).items()
              if r != current and docname in data["pages"]}
    code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    number_of = {index: number for number, index in enumerate(code, start=1)}
    differing = {release: [] for release in others}
    unrecorded = {release: 0 for release in others}
    for container in doctree.findall(nodes.container):
        if container.get("nb_element") != "cell_code" or container.get("cell_index") not in number_of:
            continue
        number = number_of[container["cell_index"]]
        container["ids"].append(f"cell-{number}")
        section = container.parent
        while section is not None and not isinstance(section, nodes.section):
            section = section.parent
        if section is not None and section.children and isinstance(section[0], nodes.title):
            page_state.of(app.env, docname).cell_sections[number] = section[0].astext()
        cell = notebook.cells[container["cell_index"]]
        outputs, shown_media = cell_outputs(cell), cell_media(cell)
        digest = cell_records.source_digest(cell.source)
        printed: dict[str, list[str]] = {}  # what other releases printed, and which did
        for release in others:
            old = cell_records.cell_at(others[release]["pages"][docname], number, digest)
            if old is None:
                unrecorded[release] += 1
                continue
            rules = rules_for(release, current)
            if cell_records.compare_outputs(old["outputs"], outputs, False, rules) is None:
                # The same text: the same figures and HTML too, when its record says what it showed.
                if (not cell_records.compares_media(others[release])
                        or cell_records.compare_media(old.get("media", []), shown_media, rules) is None):
                    continue
                kind = cell_records.compare_media(old.get("media", []), shown_media, rules)[-1]["shown"]
                differing[release].append(number)
                printed.setdefault(("media", kind), []).append(release)
                continue
            differing[release].append(number)
            printed.setdefault(("text", as_text(old["outputs"])), []).append(release)
        for (what, text), which in printed.items():
            summary = message(app.config, "release_printed").format(release=join(app.config, which))
            # A release that printed nothing there says so, instead of an empty box; one that
            # printed the same text but showed another figure (or HTML) says that.
            shown = (nodes.paragraph("", "", nodes.inline("", message(app.config, "releases_other_media").format(kind=text),
                                                          classes=["book-nothing"])) if what == "media"
                     else marked_block(marked_words(text, as_text(outputs))) if text.strip()
                     else nodes.paragraph("", "", nodes.inline("", message(app.config, "releases_nothing"),
                                                               classes=["book-nothing"])))
            container += release_output("", release_summary(summary, summary), shown)
    if not others:
        return []
    # Releases that differ in the same cells say so in one sentence.
    same = [r for r in others if not differing[r] and not unrecorded[r]]
    groups: dict[tuple[int, ...], list[str]] = {}
    for release in others:
        if differing[release]:
            groups.setdefault(tuple(differing[release]), []).append(release)
    sentences = []
    if same:
        sentences.append(message(app.config, "releases_same").format(releases=join(app.config, same)))
    for cells, which in groups.items():
        key = "releases_differ_one" if len(cells) == 1 else "releases_differ"
        sentences.append(message(app.config, key).format(releases=join(app.config, which), count=len(cells)))
    sentences += unrecorded_sentences(app.config, {release: unrecorded[release] for release in others})
    separator = current_language(app.config).sentence_separator
    return [nodes.Text(separator + separator.join(sentences))]


def unrecorded_sentences(config, unrecorded: dict[str, int]) -> list[str]:
    """The releases whose records predate some cells of the page (release: how many), one
    sentence per count: five releases behind by the same cells are one sentence, not five."""
    groups: dict[int, list[str]] = {}
    for release, count in unrecorded.items():
        if count:
            groups.setdefault(count, []).append(release)
    return [message(config, "releases_unrecorded_one" if count == 1 else "releases_unrecorded").format(
                releases=join(config, which), count=count)
            for count, which in groups.items()]


def join(config, items: list[str]) -> str:
    """"a, b and c" in the language being built."""
    if len(items) == 1:
        return items[0]
    return current_language(config).list_separator.join(items[:-1]) + message(config, "list_and") + items[-1]


class TorchReleases(SphinxDirective):
    """The recorded releases, and what changed between each consecutive pair."""

    def run(self) -> list[nodes.Node]:
        say = lambda key, **values: message(self.config, key).format(**values)  # noqa: E731
        results, releases = records_and_releases(self.env.app)
        releases_file = Path(self.env.app.confdir, self.config.book_releases_file)
        note_records(self.env, results, releases, releases_file)
        docs = Path(self.env.srcdir).parent
        page_state.note_every_page_code(self.env)
        page_state.of(self.env).computed.add("torch-releases")
        by_release = recorded(results, releases)
        out: list[nodes.Node] = []
        rows = [[r, by_release[r]["date"], by_release[r]["python"], str(sum(map(len, by_release[r]["pages"].values())))]
                for r in by_release]
        if rows:
            out.append(table([say(f"releases_col_{c}") for c in ("release", "date", "python", "cells")],
                             rows, classes=["book-releases"]))
        missing = [r for r in releases if r not in by_release]
        if missing:
            out.append(nodes.paragraph("", say("releases_missing", releases=join(self.config, missing))))
        digests = cell_records.current_digests(docs, self.config.book_languages[0].code)
        names = list(by_release)
        for old, new in zip(names, names[1:]):
            found = changes(by_release[old], by_release[new])
            changed = [d for d in found if d.kind in ("behaviour", "value")]
            compared = sum(len(cells) for cells in by_release[old]["pages"].values())
            title = say("releases_pair", old=old, new=new)
            section = nodes.section("", nodes.title(title, title), ids=[f"torch-{old}-{new}".replace(".", "-")])
            section += nodes.paragraph("", say("releases_pair_summary", compared=compared, changed=len(changed)))
            if changed:
                header = [say("releases_col_cell"), say("releases_col_printed", release=old),
                          say("releases_col_printed", release=new)]
                table_rows = []
                for d in changed:
                    where = cell_reference("", "", page=d.page, cell=d.cell,
                                           link=self._still_current(by_release[new], digests, d))
                    # "(nothing)" is muted, not italic: a slanted CJK font reads badly.
                    shown = [nodes.literal("", "", *marked_nodes(pieces, side))
                             if "".join(text for text, _ in pieces).strip()
                             else nodes.inline("", say("releases_nothing"), classes=["book-nothing"])
                             for pieces, side in zip(marked_excerpt(d.first, d.second), ("old", "new"))]
                    table_rows.append([where, *shown])
                section += table(header, table_rows, classes=["book-releases"])
            out.append(section)
        return out

    @staticmethod
    def _still_current(record: dict, digests: dict, difference: cell_records.Difference) -> bool:
        """The cell is the same cell of the page today, so a link to it lands right."""
        cells = record["pages"].get(difference.page, [])
        current = digests.get(difference.page, [])
        index = difference.cell - 1
        return index < len(cells) and index < len(current) and cells[index]["source"] == current[index]


def resolve_cell_references(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Name the cell by its page's title and, while it is the same cell today, its section's
    (both known once every page is read), linked when current; else by its number."""
    for node in list(doctree.findall(cell_reference)):
        page, cell = node["page"], node["cell"]
        title = app.env.titles[page].astext() if page in app.env.titles else page
        state = page_state.every(app.env).get(page)
        section = state.cell_sections.get(cell) if node["link"] and state is not None else None
        if section == title:  # above the page's first section: the page names it
            text = title
        elif section:
            text = message(app.config, "releases_cell_section").format(page=title, section=section)
        else:
            text = message(app.config, "releases_cell").format(page=title, cell=cell)
        if not node["link"]:
            node.replace_self(nodes.Text(text))
            continue
        uri = app.builder.get_relative_uri(docname, page) + f"#cell-{cell}"
        node.replace_self(nodes.reference(text, text, refuri=uri, internal=True))


def cell_sections(app: Sphinx, env) -> object:
    """The sections of every page's cells, which the page names (page_state.declare_write_inputs)."""
    return {page: {str(cell): title for cell, title in state.cell_sections.items()}
            for page, state in page_state.every(env).items()}


def records_changed(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Every page, when a release record appeared or went since the last build."""
    results = Path(app.confdir, app.config.book_results_dir)
    present = sorted(p.name for p in results.glob("cpu-torch-*.json"))
    state = build_state.site(env)
    before, state.release_records = state.release_records, present
    if before is None or before == present:
        return []
    return sorted(env.found_docs - set(removed))


def setup(app: Sphinx) -> None:
    app.add_directive("torch-releases", TorchReleases)
    others = {builder: (as_container, end_container) for builder in ("latex", "text", "man", "texinfo")}
    app.add_node(release_output, html=(_html_details, _close_details), **others)
    app.add_node(release_summary, html=(_html_summary, None),
                 **{builder: (as_paragraph, end_paragraph) for builder in others})
    app.add_node(cell_reference, html=(as_paragraph, end_paragraph))
    app.add_node(changed_words, html=(_html_changed, _end_changed),
                 **{builder: (_nothing, _nothing) for builder in others})
    app.connect("doctree-resolved", resolve_cell_references)
    page_state.declare_write_inputs("torch-releases", cell_sections)
    app.connect("env-get-outdated", records_changed)
