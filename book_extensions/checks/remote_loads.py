"""The built site loads nothing from other hosts.

Readers may be offline or behind a firewall that blocks CDNs, and a page that
pulls a script, font or stylesheet from elsewhere also tells that host who read
it. After an html build, every page and stylesheet is scanned for resources
(``<script src>``, ``<link rel=stylesheet|icon|preload...>``, ``<img>``,
``<iframe>``, ``url(...)``, ``@import``...) that point to another host; plain
links (``<a href>``, ``rel=alternate|canonical``) are navigation, not loads.
"""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Attributes that make the browser fetch something as soon as the page loads.
LOADING_ATTRIBUTES = {
    "script": ("src",), "img": ("src", "srcset"), "iframe": ("src",),
    "source": ("src", "srcset"), "video": ("src", "poster"), "audio": ("src",),
    "track": ("src",), "embed": ("src",), "object": ("data",), "input": ("src",),
    "link": ("href",),
}
NAVIGATION_RELS = {"alternate", "canonical", "next", "prev", "author", "license",
                   "help", "search", "index", "top", "up", "first", "last", "copyright"}
CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])([^'")\s]+)""")


def is_remote(url: str, own_host: str) -> bool:
    parts = urlsplit(url.strip())
    if parts.scheme in ("data", "blob", "about", "javascript", "mailto"):
        return False
    return bool(parts.netloc) and parts.netloc != own_host


class ResourceFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []  # (what, url)
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "link":
            rels = set((values.get("rel") or "").lower().split())
            if rels and rels <= NAVIGATION_RELS:
                return
        for name in LOADING_ATTRIBUTES.get(tag, ()):
            for url in (values.get(name) or "").split(","):
                url = url.strip().split(" ")[0]
                if url:
                    self.found.append((f"<{tag} {name}>", url))
        if values.get("style"):
            self.found += [("style attribute", u) for u in CSS_URL.findall(values["style"])]
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.found += [("<style>", u) for u in CSS_URL.findall(data)]


def remote_loads(path: Path, own_host: str = "") -> list[tuple[str, str]]:
    """(what, url) for every resource in an html or css file that another host serves."""
    text = path.read_text(encoding="utf8", errors="replace")
    if path.suffix == ".css":
        found = [("stylesheet url()", u) for u in CSS_URL.findall(text)]
    else:
        finder = ResourceFinder()
        finder.feed(text)
        found = finder.found
    return [(what, url) for what, url in found if is_remote(url, own_host)]


def check_site(outdir: Path, own_host: str = "", known_clean: dict | None = None) -> list[tuple[str, str, str]]:
    """(file relative to outdir, what, url) for every remote load in a built site.

    ``known_clean`` maps files found clean before to the digest of their contents; those
    are skipped while unchanged (Sphinx copies the static files again at every build, and
    first_paint rewrites pages, with the same bytes), and the map is updated in place.
    """
    problems = []
    known_clean = {} if known_clean is None else known_clean
    for path in sorted(outdir.rglob("*")):
        if path.suffix in (".html", ".css") and path.is_file():
            rel = path.relative_to(outdir).as_posix()
            stamp = hashlib.sha256(path.read_bytes()).hexdigest()
            if known_clean.get(rel) == stamp:
                continue
            found = [(rel, what, url) for what, url in remote_loads(path, own_host)]
            if found:
                known_clean.pop(rel, None)
            else:
                known_clean[rel] = stamp
            problems += found
    return problems


def check_build(app: Sphinx) -> None:
    own_host = urlsplit(app.config.book_base_url).netloc
    outdir = Path(app.outdir)
    # Scanning every page takes longer than a build that changed nothing; a page
    # is scanned again when it is rewritten, and until it is clean.
    record = Path(app.doctreedir) / f"book-offline-clean-{own_host or 'relative'}.json"
    try:
        known_clean = json.loads(record.read_text())
    except (OSError, ValueError):
        known_clean = {}
    problems = check_site(outdir, own_host, known_clean)
    record.write_text(json.dumps(known_clean))
    for rel, what, url in problems:
        logger.warning(
            f"{outdir.name}/{rel} loads {url} from another host ({what}); the site must work offline",
            type="book", subtype="offline",
        )
