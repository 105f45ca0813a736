"""What conf.py declares, read and checked before anything runs.

- :mod:`.settings`: every ``book_*`` setting (and the ``nb_*`` ones the book sets), declared,
  registered and checked in one place; the build driver and the tools read conf.py through it;
- :mod:`.languages`: what depends on the language being built, hreflang links, the language
  switch, and the theme's catalog compiled for Sphinx;
- :mod:`.messages`: the interface strings the extensions add, translated by gettext;
- :mod:`.input_files`: the other files a build reads (release list, records, term lists, search
  words), checked by the build driver before Sphinx starts;
- :mod:`.site_inputs`: the files a language's site is built from, by part: what the build
  driver digests to skip an unchanged site, and an offline edition's stamp.

Imports nothing: :mod:`.settings` runs where Sphinx is not imported yet (the build driver).
"""
