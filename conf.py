"""Sphinx configuration shared by every language of "Cutting the Graph".

Each language is a separate Sphinx build of ``docs/<code>/`` with this one file,
chosen by ``-D language=...``; ``book_extensions`` derives everything that depends
on the language or the device. Build with ``nox -s docs`` (see README.md).
"""

import sys
from pathlib import Path

# The book's own extensions live beside this file, not in an installed package.
sys.path.insert(0, str(Path(__file__).parent))

extensions = [
    "myst_nb",
    "sphinx_copybutton",
    "book_extensions",
]

# The copy button copies a cell's code, or a doctest's input lines without their
# prompts, never an output. A doctest is shown as div.highlight-pycon.
copybutton_selector = "div.cell_input div.highlight pre, div.highlight-pycon div.highlight pre"
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

# The languages of the book, in the order the language switch lists them.
# "code" is the folder under docs/ and in the built site; the first is the default.
# The separators are typography: what goes between two sentences, and between list items;
# "typography": "cjk" checks a CJK edition's spacing and punctuation (book_extensions/checks/typography.py).
book_languages = [
    {"code": "en", "sphinx": "en", "hreflang": "en", "name": "English",
     "project": "Cutting the Graph", "author": "the authors of Cutting the Graph",
     "sentence_separator": " ", "list_separator": ", "},
    {"code": "zh", "sphinx": "zh_CN", "hreflang": "zh-CN", "name": "简体中文",
     "project": "切断计算图", "author": "《切断计算图》作者",
     "sentence_separator": "", "list_separator": "、", "typography": "cjk"},
]
# The offline editions' file names: <slug>-<language code>.pdf / .epub.
book_slug = "cutting-the-graph"
# The public address of the site (one place); empty means links stay relative.
book_base_url = ""
# The public GitHub repository, "owner/name" (one place). When set, every page links to
# its executed notebook on Colab, from the "notebooks" branch the publish workflow pushes.
book_repository = ""

# The page that compares the CPU and CUDA records; readers see it in the navigation once a
# CUDA run is recorded (results/cuda.json).
book_device_page = "cpu-vs-cuda"

language = "en"
# The book's catalogs (book_extensions/locale/): Sphinx puts a project's before its own, so the
# book's "sphinx" catalog also corrects a few of Sphinx's translations (zh_CN "Link to this
# heading" ends in a full stop). Set here, not by book_extensions: Sphinx loads its catalogs
# before extensions. Sphinx (or the build driver first) compiles each .po into the .mo beside it.
locale_dirs = [str(Path(__file__).parent / "book_extensions" / "locale")]
copyright = "2026 {author}"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
nitpicky = True  # a reference that resolves to nothing is a broken link

# Every page is a MyST text notebook executed through a jupyter-cache;
# book_extensions keeps one cache per device and torch version.
nb_execution_mode = "cache"
nb_execution_timeout = 120
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "deflist", "substitution"]

html_theme = "sphinx_book_theme"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    # The top bar's only content would be a second search box beside the side bar's (and,
    # on a phone, an empty strip): leave it out (book-search.css hides the empty bar).
    "navbar_persistent": [],
    # The licences and the report/edit links (book_extensions/templates/book-footer.html).
    # The copyright line names the authors, so the theme's "By …" line is left out.
    "footer_content_items": ["copyright.html", "book-footer.html"],
}
html_favicon = "book_extensions/static/favicon.svg"
# Follow the reader's system colours; unset, the theme logs an error in the console.
html_context = {"default_mode": "auto"}
html_last_updated_fmt = None
html_copy_source = False
html_show_sourcelink = False
# The book has no index entries: genindex.html would be an empty "Index" page.
html_use_index = False

# nox -s linkcheck: a host that has not answered in 30 s, twice, counts as broken.
linkcheck_timeout = 30
linkcheck_retries = 2
