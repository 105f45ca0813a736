"""What the build refuses, each check a warning that names the page (and line) at fault.

- :mod:`.page_sources`: what a page's source must be (UTF-8, a MyST notebook, Python cells,
  no execution settings of its own, a title);
- :mod:`.parity`: the languages have the same pages, code and structure (also a verb);
- :mod:`.prose`: no sentence names the torch release that built it; a language's prose uses
  the words of its term list (:mod:`.term_list` reads that list, without Sphinx's application,
  so that the build driver checks it before Sphinx starts);
- :mod:`.typography`: a CJK edition's spacing and punctuation (and a verb: long sentences);
- :mod:`.unique_names`: a label, glossary term or object is defined on one page, also when
  Sphinx reads pages in parallel (its merge of parallel readers' findings does not check);
- :mod:`.remote_loads`: no cell's output makes its page load or run anything from another
  host (nor run a script at all), and the built site loads nothing from other hosts;
- :mod:`.exercise_answers`: an exercise's declared answer, and whether the output of its cell
  supports exactly that choice (read without Sphinx: parity and the input checks use it);
- :mod:`.leaked_paths`: no published file shows a build machine's folders;
- :mod:`.clean_files`: the files those two scans of the site found clean, skipped by the next
  build while unchanged;
- :mod:`.doctest_options`: which doctest blocks relax the exact comparison (listed, not refused).

Imports nothing.
"""
