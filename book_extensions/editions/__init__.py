"""The offline editions: the whole book as one PDF and one EPUB per language.

- :mod:`.offline_builders`: the Sphinx side: what the singlehtml and epub builds need, the
  stamp that says what sources an edition was built from, and the links to the editions;
- :mod:`.make_editions`: the command (``python -m book_extensions editions``) that makes them
  from the HTML build's execution cache; command-line layer: no extension imports it.

Imports nothing.
"""
