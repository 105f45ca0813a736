"""Every page has a title.

Sphinx reports a page without one from every toctree that lists it, once per page
whose sidebar shows that toctree (six times in a small book); this reports it once,
on the page itself.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)


def quiet_repeated_warning(app: Sphinx, config: Config) -> None:
    config.suppress_warnings = [*config.suppress_warnings, "toc.no_title"]


def refuse_untitled_page(app: Sphinx, doctree: nodes.document) -> None:
    if next(doctree.findall(nodes.title), None) is None:
        logger.warning("the page has no title: start it with a '# ' heading",
                       location=app.env.docname, type="book", subtype="no_title")


def setup(app: Sphinx) -> None:
    app.connect("config-inited", quiet_repeated_warning)
    app.connect("doctree-read", refuse_untitled_page)
