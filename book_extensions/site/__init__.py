"""What the published web site is made of, beyond Sphinx's and the theme's own pages.

- :mod:`.readable_layout`: outputs, tables and inline code that read on a phone and in print;
- :mod:`.search`: the Chinese search language and the in-browser ranking of results;
- :mod:`.asset_trimming`: the themes' stylesheets cut to the rules pages can use, and Font
  Awesome to the icons they show;
- :mod:`.first_paint`: each page's CSS inline in its head, its head scripts deferred;
- :mod:`.meta_and_footer`: Open Graph tags, the footer, and each language's manifest for
  the site root;
- :mod:`.root_files`: the site root's files (language chooser, 404, robots.txt, sitemap.xml),
  written by the build driver once every language is built;
- :mod:`.provenance_page`: the page that says what built the book;
- :mod:`.exercises`: predict-then-reveal exercises on the cells of a page, their answers
  checked against the outputs, collected at each chapter's end offline, and their index;
- :mod:`.device_page`: the device's name as pages state it, and the "CPU vs CUDA" page;
- :mod:`.post_build`: the one ``build-finished`` handler: every step after Sphinx has written
  a language's site (the modules' above and other stages'), in its order, each for the builds
  it concerns.

Imports nothing.
"""
