"""Sphinx extensions that turn ``docs/`` into the bilingual, executed book.

Each module handles one concern and has its own ``setup``:

- :mod:`.config`: every ``book_*`` setting, declared, registered and checked in one place
  (the build driver and the tools read conf.py through it too);
- :mod:`.languages`: per-language settings, hreflang links and the language switch;
- :mod:`.execution`: the kernel's device, the execution cache, and what the build does
  with each page's execution (its provenance line);
- :mod:`.cells`: checks on every executed cell (expected errors, output size, comments in
  the edition's language, no output that shows them) and outputs cleaned of addresses and
  build paths;
- :mod:`.code_comments`: a code cell's code apart from its comments and docstrings (what
  parity compares and the cache is keyed on), and which of them are still in English;
- :mod:`.notebooks`: each page as an executed notebook, to download or open in Colab;
- :mod:`.editions`: what the builds of the offline editions (PDF, EPUB) need, and the links
  to them;
- :mod:`.executor`: runs a page in a fresh kernel (or takes it from the cache), with
  every failure reported against its page and cell;
- :mod:`.parity`: the two languages have the same pages, code and structure;
- :mod:`.pages`: what a page's source must be (UTF-8, a MyST notebook, Python cells, no
  execution settings of its own, a title);
- :mod:`.page_state`: what the extensions note about each page, in one environment collector;
- :mod:`.search`: the Chinese search language and the in-browser ranking of results;
- :mod:`.layout`: outputs, tables and inline code that read on a phone and in print;
- :mod:`.prose`: no sentence names the torch release that built it, and a language's prose
  uses the words of its term list (docs/terms.zh.toml);
- :mod:`.typography`: a CJK edition's spacing and punctuation (autocorrect-py on its sources,
  and checks on its pages once every link has its text);
- :mod:`.offline`: the built site loads nothing from other hosts;
- :mod:`.artifacts`: no published file (figure, notebook, search index, edition) shows
  a build machine's folders;
- :mod:`.assets`: the themes' stylesheets cut to the rules the pages can use, and Font
  Awesome to the icons they show (a lighter first load);
- :mod:`.first_paint`: the CSS a page can use inline in its head (no stylesheet to wait
  for) and its head scripts deferred, so nothing blocks its first paint;
- :mod:`.records`: what every code cell printed, recorded per device and release, and compared;
- :mod:`.devices`: the device a build names, and the "CPU vs CUDA" page;
- :mod:`.release_list`: the torch releases of torch-releases.txt (standard library only);
- :mod:`.releases`: records under older torch releases, and what changed between them;
- :mod:`.site`: Open Graph tags, the footer, and each language's manifest for the site root;
- :mod:`.site_root` (run by the build driver): the language chooser, 404, robots.txt, sitemap.xml;
- :mod:`.provenance`: the page that says what built the book.

Code that runs inside the pages' kernels is in :mod:`.kernel`; the command-line tools
(build and its publishing step, serve, editions, bench, weight, lighthouse, determinism, releases, gpu_checks,
toolchain, wheelhouse) are in :mod:`.tools`. Every tool, those of the extensions' modules too (parity, typography,
records, upstream), is a verb of one command, ``python -m book_extensions <verb>`` (:mod:`.__main__`, which
imports a tool only when its verb runs; ``--help`` lists the verbs).

Where the book leans on another project's internals or copies its files, and why:
:mod:`.upstream` lists every case; ``tests/test_upstream.py`` fails when one moves.
"""

def setup(app) -> dict:
    # Imported here so that ``python -m book_extensions <verb>`` imports only what its tool needs.
    from . import (
        artifacts,
        assets,
        config,
        devices,
        editions,
        execution,
        first_paint,
        languages,
        layout,
        offline,
        page_state,
        pages,
        parity,
        prose,
        provenance,
        releases,
        site,
        typography,
    )

    for module in (config, page_state, languages, layout, execution, editions, pages, parity, prose,
                   typography, offline, assets, first_paint, devices, releases, site, provenance, artifacts):
        module.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
