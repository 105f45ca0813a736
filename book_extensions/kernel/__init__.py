"""Code that runs inside the pages' kernels, not in Sphinx.

- :mod:`.startup`: the kernel's startup file (default device, short tracebacks,
  warnings without paths, output flushed once per cell);
- :mod:`.figures`: the computational-graph figures that pages draw;
- :mod:`.writes`: notes the files a page writes in the book's repository (an audit hook),
  so that the build blames the page that wrote them;
- :mod:`.reads`: notes the files a page reads outside the folders the cache key covers (an
  audit hook), so that a change to one executes the page again;
- :mod:`.sandbox`: starts the kernel able to write only in the page's own folders (Linux
  Landlock), so that a cell cannot change the sources, the execution cache or the site.

Everything here is part of the execution cache's key: editing it re-executes the book.
"""
