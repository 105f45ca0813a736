"""The book's command-line tools that are no stage of their own, apart from its Sphinx extensions.

Each tool has ``main(argv)`` and runs as a verb of the one command,
``python -m book_extensions <verb>`` (:mod:`book_extensions.__main__` lists the verbs; ``--help``
there and after a verb); none runs as a module of its own. The tools of a stage live in its
folder: :mod:`..editions.make_editions` (PDF, EPUB) and :mod:`..records.release_records`
(records under other torch releases).

- :mod:`.build`: builds every language (``python -m book_extensions build``), and
  :mod:`.publish` swaps the built site in (no verb: the build's last step); beside it, the
  parts of the build no verb runs: :mod:`.last_build` (the note of each language's last good
  build, and the digests of what a build reads), :mod:`.build_locks` (the locks a build or
  the live preview holds) and :mod:`.reading_turn` (languages built at once read one after
  the other);
- :mod:`.serve`: live preview of one language;
- :mod:`.bench`: how long builds take and how much they execute;
- :mod:`.weight`: bytes and first paint of every page, in Chromium;
- :mod:`.lighthouse`: Lighthouse's four scores of every page, served like GitHub Pages;
- :mod:`.chromium`: the Chromium and the local server that weight, lighthouse and the
  editions share (no verb);
- :mod:`.determinism`: every page executed a second time, compared with the cache;
- :mod:`.gpu_checks` (verb ``gpu-checks``): a ``.ci/gpu-check`` run's findings, against the CPU's;
- :mod:`.toolchain`: the shared Python environment per torch release (standard library
  only: the noxfile imports it before any environment exists);
- :mod:`.wheelhouse`: the wheels the GPU machine lacks for ``.ci/gpu-check`` (standard
  library and pip: it installs them there before anything else is).
"""
