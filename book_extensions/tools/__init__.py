"""The book's command-line tools, apart from its Sphinx extensions.

- :mod:`.build`: builds every language (``python -m book_extensions.tools.build``);
- :mod:`.serve`: live preview of one language;
- :mod:`.bench`: how long builds take and how much they execute;
- :mod:`.weight`: bytes and first paint of every page, in Chromium;
- :mod:`.lighthouse`: Lighthouse's four scores of every page, served like GitHub Pages;
- :mod:`.determinism`: every page executed a second time, compared with the cache;
- :mod:`.toolchain`: the shared Python environment per torch release (standard library
  only: the noxfile imports it before any environment exists);
- :mod:`.wheelhouse`: the wheels the GPU machine lacks for ``.ci/gpu-check`` (standard
  library and pip: it installs them there before anything else is).
"""
