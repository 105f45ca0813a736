"""Which pages to read again, by content: what a page was read from, compared with what is there now.

Sphinx decides by time: a page is read again when its file is newer than the moment it
finished reading it. An edit dated between the file's old time and that moment (a clock
step, ``rsync -a`` or ``cp -p`` of a copy saved during a build, an edit while the page was
being parsed) is never read, and a restore with an older time neither. So each page notes
the digest of the very text Sphinx parsed (``source-read``, before any handler changes it)
and of each file it depends on (includes, images) as they were before this build read
anything; ``env-get-outdated`` returns every page whose source or dependency now has other
content. An edit made while a build runs is therefore read by the next one.

A program a code cell loads (``load: <file>``, which myst-nb reads into the cell before Sphinx
sees the page) is noted as a dependency of the page here, as a ``{literalinclude}`` notes its
file: an edit to it reads the page again.

A dependency first noted outside the source folder is digested when the page has been read
(a file the build did not know of before it): an edit to it in the instant between the
directive reading it and the page's end would be missed. The book's own such files (the
examples pages load) are part of the build driver's code digest, which reads every page again.

When an html build ends well, every dependency outside the docs folder (which the driver
digests whole) is written with its digest beside the doctrees
(:data:`.cache_key.DEPENDENCIES_FILE`): the driver leaves Sphinx unstarted ("unchanged") only
while each of them still has that content.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

from .. import build_state
from ..paths import content_digest, write_atomically
from . import page_state
from .cache_key import DEPENDENCIES_FILE


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf8", "surrogateescape")).hexdigest()


def page_text_digest(env: BuildEnvironment, docname: str) -> str | None:
    """The digest of the page's text as Sphinx would read it now (its decoding, its newlines)."""
    try:
        return text_digest(env.doc2path(docname).read_text(encoding=env.config.source_encoding))
    except (OSError, UnicodeDecodeError, LookupError):
        return None


def note_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``, first of its handlers: the text about to be parsed, as the file gave it,
    and the programs its code cells load (myst-nb reads them as it parses the page)."""
    from ..checks.page_sources import loaded_programs

    page_state.of(app.env, docname).source = text_digest(source[0])
    for program in loaded_programs(source[0], Path(app.env.doc2path(docname))):
        app.env.note_dependency(str(program), docname=docname)


def snapshot(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """Before any page is read (and before parallel readers fork): the digest of every file
    in the source folder and of every dependency known, as they are before this build reads
    them."""
    files = {p for p in Path(env.srcdir).rglob("*") if p.is_file()}
    files |= {Path(p) for deps in env.dependencies.values() for p in deps}
    build_state.run(app).source_snapshot = {str(p): content_digest(p) for p in files}


def note_shown_before(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """``env-before-read-docs``: what other pages show of the pages this build reads again, as it was."""
    build_state.run(app).shown_before = {d: shown_elsewhere(env, d) for d in docnames}


def note_pages_coming_or_going(app: Sphinx, env: BuildEnvironment, added, changed_now, removed) -> list[str]:
    """``env-get-outdated``: whether a page was added or removed (which other pages show)."""
    build_state.run(app).pages_came_or_went = bool(added or removed)
    return []


def shown_elsewhere(env: BuildEnvironment, docname: str) -> str | None:
    """What other pages show of a page, as last read (None: never read)."""
    state = page_state.every(env).get(docname)
    return None if state is None else state.shown_elsewhere


def note_shown_elsewhere(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: what other pages show of the page just read, as they show it: its title
    and its sections' (links, the contents, previous and next), the captions of its figures,
    tables and code blocks (a reference's text), its tables of contents (every page's sidebar:
    their captions, entries, explicit titles and order), and each label with the anchor and
    the title, caption or rubric a reference to it shows (a label moved to another section), with
    their markup, and the anchors of its glossary terms and described objects. Read from
    the doctree (docutils' names), not from Sphinx's domains, which an environment does not
    document how to reach."""
    shown: list = [["title", as_shown(node)] for node in doctree.findall(nodes.title)]
    shown += [["caption", as_shown(node)] for node in doctree.findall(nodes.caption)]
    shown += [["toctree", node.get("caption"), [list(entry) for entry in node["entries"]],
               *(node.get(option) for option in ("maxdepth", "hidden", "numbered", "titlesonly", "glob"))]
              for node in doctree.findall(addnodes.toctree)]
    for name, explicit in sorted(doctree.nametypes.items()):
        anchor = doctree.nameids.get(name)
        labelled = doctree.ids.get(anchor) if explicit and anchor else None
        if labelled is not None:
            named = next(labelled.findall(lambda node: isinstance(node, nodes.title | nodes.caption | nodes.rubric)), None)
            shown.append(["label", name, anchor, as_shown(named) if named is not None else ""])
    # What other pages link to without a label: glossary terms ({term}) and described objects
    # ({py:func} and the like), by their anchors (a renamed one leaves a broken link elsewhere).
    shown += [["term", node["ids"]] for node in doctree.findall(nodes.term) if node["ids"]]
    shown += [["object", node["ids"]] for node in doctree.findall(addnodes.desc_signature) if node["ids"]]
    page_state.of(app.env).shown_elsewhere = json.dumps(shown, ensure_ascii=False)


def as_shown(node: nodes.Node) -> list:
    """A title's or caption's text with its markup (emphasis, code...), as a sidebar shows it."""
    return [type(part).__name__ if not isinstance(part, nodes.Text) else str(part) for part in node.findall()]


def pages_showing_what_changed(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """``env-get-updated``: every page, when a page read again shows other pages something else
    (:func:`note_shown_elsewhere`), or a page came or went. Sphinx writes only the pages it read
    and their toctree parents: the others kept the old title, caption, link text or previous and
    next page (attack 6, case 12b; attack 7, cases 5, 6, 7, 11, 16). Rare, and writing is cheap
    next to executing."""
    state = build_state.run(app)
    if state.pages_came_or_went or any(shown_elsewhere(env, d) != shown for d, shown in state.shown_before.items()):
        state.written_again = sorted(env.found_docs)
    return state.written_again


def note_dependencies(app: Sphinx, doctree) -> None:
    """``doctree-read``: the page's dependencies, as they were before this build read them.

    A value glued from another page (``{glue}`page.md::key```) is filled in when this page is
    written, from that page's outputs; nothing tells Sphinx to write this page again when
    they change, so the other page's source is a dependency: its edit reads this one again."""
    from myst_nb.ext.glue.utils import PendingGlueReference

    env = app.env
    glued_from = set()
    for node in doctree.findall(PendingGlueReference) if doctree is not None else ():
        if node.refdoc != env.docname:
            env.note_dependency(str(env.doc2path(node.refdoc)))
            glued_from.add(node.refdoc)
    page_state.of(env).glued_from = sorted(glued_from)
    known = build_state.run(app).source_snapshot
    dependencies = {
        str(p): known[str(p)] if str(p) in known else content_digest(p)
        for p in sorted(env.dependencies.get(env.docname, ()))
    }
    # And what its kernel read outside the keyed folders (execution/runner.py), as it was when
    # the page ran: a change reads the page again (by content, :func:`changed`; not through
    # Sphinx, which would read a page that listed a folder or missed a file on every build),
    # and the cache executes it again.
    runner = build_state.run(app).page_runner
    dependencies.update(runner.reads.pop(str(env.doc2path(env.docname)), {}) if runner is not None else {})
    page_state.of(env).dependencies = dict(sorted(dependencies.items()))


def changed(env: BuildEnvironment, docname: str, own: dict[str, bool] | None = None,
            asked: frozenset[str] = frozenset()) -> bool:
    """Whether the page's source or a dependency has other content now, or a page whose
    outputs it shows ({glue}) changed so: that page executes again when a file its cells read
    changed, and this one showed its old value, "unchanged" ever after (attack 12, case 30).
    ``own``: each page's :func:`own_content_changed` as answered so far (digested once)."""
    own = {} if own is None else own
    if docname not in own:
        own[docname] = own_content_changed(env, docname)
    if own[docname]:
        return True
    asked = asked | {docname}  # pages that glue from each other are asked once
    state = page_state.every(env)[docname]
    return any(changed(env, other, own, asked) for other in state.glued_from if other not in asked)


def own_content_changed(env: BuildEnvironment, docname: str) -> bool:
    state = page_state.every(env).get(docname)
    if state is None or state.source is None:
        return True  # read before this extension noted anything: read it again
    if page_text_digest(env, docname) != state.source:
        return True
    return any(content_digest(Path(path)) != digest for path, digest in state.dependencies.items())


def pages_with_other_content(app: Sphinx, env: BuildEnvironment, added, changed_now, removed) -> list[str]:
    """``env-get-outdated``: every page read before whose source or dependencies changed, whatever their times."""
    known = set(page_state.every(env)) & env.found_docs  # every page read before
    own: dict[str, bool] = {}
    return sorted(d for d in known - set(added) - set(changed_now) - set(removed) if changed(env, d, own))


def outside_dependencies(env: BuildEnvironment, docs: Path, doctrees: Path) -> dict[str, str | None]:
    """Every file some page depends on outside ``docs`` (and the build's own ``doctrees``),
    with its digest as the pages were read from it."""
    found = {}
    for state in page_state.every(env).values():
        for path, digest in state.dependencies.items():
            where = Path(os.path.normpath(path))
            if not where.is_relative_to(docs) and not where.is_relative_to(doctrees):
                found[str(where)] = digest
    return dict(sorted(found.items()))


def write_outside_dependencies(app: Sphinx) -> None:
    """After an html build that ended well (:mod:`..site.post_build`): the files outside the
    docs folder the site was read from, for the build driver's no-change check
    (:func:`..commands.last_build.changed_dependencies`)."""
    doctrees = Path(app.doctreedir)
    found = outside_dependencies(app.env, Path(os.path.normpath(Path(app.srcdir).parent)), doctrees)
    doctrees.mkdir(parents=True, exist_ok=True)
    write_atomically(doctrees / DEPENDENCIES_FILE, json.dumps(found, indent=1) + "\n")


def setup(app: Sphinx) -> None:
    app.connect("source-read", note_source, priority=0)
    app.connect("env-before-read-docs", snapshot)
    app.connect("doctree-read", note_dependencies)
    app.connect("env-get-outdated", pages_with_other_content)
    app.connect("env-get-outdated", note_pages_coming_or_going)
    app.connect("env-before-read-docs", note_shown_before)
    app.connect("doctree-read", note_shown_elsewhere)
    app.connect("env-get-updated", pages_showing_what_changed)
