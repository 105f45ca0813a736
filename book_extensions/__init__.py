"""Sphinx extensions that turn ``docs/`` into the bilingual, executed book.

The package is laid out by the stage of the book's making; each stage is a folder, each module
in it does one job (its docstring says which) and, if it is an extension, has its own ``setup``:

- :mod:`.configuration`: what conf.py declares, read and checked before anything runs:
  :mod:`~.configuration.settings` (every ``book_*`` setting, checked in one place; the build
  driver and the tools read conf.py through it too), :mod:`~.configuration.languages`
  (per-language settings, hreflang links, the language switch, the catalogs) and
  :mod:`~.configuration.messages` (the interface strings the extensions add);
- :mod:`.execution`: how pages execute: :mod:`~.execution.page_execution` (the kernels'
  device and environment, the execution cache, what the build does with each page's
  execution), :mod:`~.execution.runner` (the page executor: a page's cells in a fresh kernel,
  or its outputs from the cache), :mod:`~.execution.cache_key` (which cache, and whether the
  kernel is the toolchain's; no Sphinx), :mod:`~.execution.kernel_inputs` (what a page's outputs
  depend on, each neutralised or keyed, and the kernels' environment), :mod:`~.execution.cell_checks` (every executed cell
  judged, outputs cleaned), :mod:`~.execution.code_comments` (a cell's code apart from its
  comments: what parity compares and the cache is keyed on), :mod:`~.execution.notebook_downloads`
  (each page as an executed notebook, to download or open in Colab),
  :mod:`~.execution.page_state` (what the extensions note about each page),
  :mod:`~.execution.changed_pages` (which pages to read again: by content, never by time) and
  :mod:`~.execution.doctests` (the "Check yourself" doctests: run in a process of their own,
  compared in Sphinx's);
- :mod:`.kernel`: code that runs inside the pages' kernels, not in Sphinx (startup file,
  figures, the audits of what a page writes and reads); pages import its figures by this name;
- :mod:`.checks`: what the build refuses: :mod:`~.checks.page_sources` (what a page's source
  must be), :mod:`~.checks.parity` (the languages are the same book), :mod:`~.checks.prose`
  (no torch release named in prose, a language's terms), :mod:`~.checks.typography` (a CJK
  edition's spacing and punctuation), :mod:`~.checks.unique_names` (a label, term or object
  defined on one page, under parallel reads too), :mod:`~.checks.remote_loads` (no output, and no page
  of the site, loads or runs anything from other hosts) and :mod:`~.checks.leaked_paths` (no published file shows a build
  machine's folders);
- :mod:`.site`: what the web site is made of: :mod:`~.site.readable_layout` (outputs, tables
  and inline code that read on a phone and in print), :mod:`~.site.search`,
  :mod:`~.site.asset_trimming` (the themes' stylesheets and icon font cut to what pages use),
  :mod:`~.site.first_paint` (each page's CSS inline, its head scripts deferred),
  :mod:`~.site.meta_and_footer` (Open Graph tags, the footer, each language's manifest),
  :mod:`~.site.root_files` (run by the build driver: language chooser, 404, robots.txt,
  sitemap.xml), :mod:`~.site.provenance_page` (what built the book),
  :mod:`~.site.exercises` (predict-then-reveal exercises, their answers checked against the
  outputs, and their index by misconception) and
  :mod:`~.site.device_page` (the device's name, and the "CPU vs CUDA" page), and
  :mod:`~.site.post_build`: every step after Sphinx writes a language's site (records,
  editions copied in, trimming, first paint, the checks over what was written), in
  the one order it declares;
- :mod:`.editions`: the offline editions: :mod:`~.editions.offline_builders` (what the
  singlehtml and epub builds need, and the links to the editions) and
  :mod:`~.editions.make_editions` (the command that makes each language's PDF and EPUB);
- :mod:`.records`: what every code cell printed: :mod:`~.records.cell_records` (recorded per
  device and release, and compared), :mod:`~.records.release_list` (torch-releases.txt;
  standard library only), :mod:`~.records.release_changes` (what changed between releases,
  in the book) and :mod:`~.records.release_records` (the command that records the book under
  the installed torch);
- :mod:`.commands`: the command-line tools that are no stage of their own (build and its
  publishing step, serve, bench, weight, lighthouse, determinism, gpu_checks, toolchain,
  wheelhouse, and the Chromium they share).

Every tool, those in a stage's folder or at the top too (editions, releases, records, parity,
typography, upstream), is a verb of one command, ``python -m book_extensions <verb>`` (:mod:`.__main__`, which
imports a tool only when its verb runs; ``--help`` lists the verbs). No stage's
``__init__`` imports anything, so importing one module imports no other: the build
driver runs without importing Sphinx, and ``records.release_list``, ``commands.toolchain``
and ``commands.wheelhouse`` run where Sphinx is not installed. The data the extensions use
lie beside the stages: ``locale/`` (the catalogs), ``static/`` and ``templates/``.

:mod:`.paths` says where the repository and the package are, how a message names a path, and
how a file is written whole or not at all (standard library only); every module takes them
from there. :mod:`.myst_source` says how a page's MyST source is read without Sphinx (its front
matter, fences of any length, nested ones, code cells) and which characters are Han; the checks
and tools that scan a page's source line by line read it through that module.
:mod:`.build_state` holds what the extensions keep between Sphinx's events, in two typed
records: a run's (on the application) and the last build's view of the site (on the
environment); each page's is :mod:`~.execution.page_state`.

Where the book leans on another project's internals or copies its files, and why:
:mod:`.upstream` lists every case (at most 15); ``tests/test_upstream.py`` fails when one moves,
or when the package leans somewhere no entry names.
"""

def setup(app) -> dict:
    # Imported here so that ``python -m book_extensions <verb>`` imports only what its tool needs.
    from .checks import page_sources, parity, prose, remote_loads, typography, unique_names
    from .configuration import languages, settings
    from .editions import offline_builders
    from .execution import changed_pages, doctests, page_execution, page_state
    from .records import release_changes
    from .site import asset_trimming, device_page, exercises, meta_and_footer, post_build, provenance_page, readable_layout, search

    # The order matters: Sphinx runs the handlers of one event and priority in the order they
    # were connected, and adds stylesheets and scripts to pages in the order they were added.
    # settings comes first because it checks every setting the others read; the rest keep the
    # order the book is tested in (search's handlers and book-search.css before languages'
    # book.css). The steps after a language is written are not here: site/post_build.py runs
    # them, in the order it declares.
    for module in (settings, page_state, changed_pages, search, languages, readable_layout, page_execution,
                   offline_builders, page_sources, unique_names, remote_loads,
                   parity, prose, typography, asset_trimming, device_page, release_changes,
                   exercises, meta_and_footer, provenance_page, post_build, doctests):
        module.setup(app)
    # env_version: what the environment holds per page (execution.page_state); a change reads every page again.
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 8}
