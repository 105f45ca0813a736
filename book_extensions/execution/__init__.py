"""How the book's pages execute, and what the build does with each execution.

- :mod:`.page_execution`: the extension: the kernels' device and environment, the execution
  cache each build uses, failures reported with their page and cell, each page's provenance
  line, ``book-executions.json``;
- :mod:`.runner`: the page executor: runs a page's cells in a fresh kernel (IPC sockets, an
  empty working folder, the sources watched), or takes its outputs from the cache;
- :mod:`.processes`: the processes a build and its pages start, kept as descendants (Linux's
  subreaper) and stopped when left behind; the build driver's too;
- :mod:`.running_cells`: the page and cell each Sphinx process is executing, noted so that the
  build driver names them when a cell ends the process that runs it;
- :mod:`.cache_key`: which execution cache a build uses, whether it can be read, and whether
  the pages' kernel runs the toolchain's Python and torch (no Sphinx: the build driver asks);
- :mod:`.kernel_inputs`: what a page's outputs depend on, each input neutralised (the kernel
  starts without it) or keyed (part of the cache's name), and the package staged for kernels;
- :mod:`.cell_checks`: checks on every executed cell, and outputs cleaned for the page;
- :mod:`.code_comments`: a code cell's code apart from its comments and docstrings;
- :mod:`.notebook_downloads`: each page as an executed notebook, to download or open in Colab;
- :mod:`.page_state`: what the extensions note about each page, in one environment collector;
- :mod:`.changed_pages`: which pages to read again, by content rather than by time;
- :mod:`.doctests`: the "Check yourself" doctests: the directive, and the builder that runs
  their examples in a process per page, confined as the kernels are, and compares them;
- :mod:`.doctest_examples`: what runs those examples, a process per page, forked from one that
  runs none (its text is run, so that no kernel can import it).

The code that runs inside the kernels is :mod:`book_extensions.kernel`. Imports nothing.
"""
