"""Lighthouse's four scores for every page of the built site, on a phone, served like GitHub Pages.

    python -m book_extensions lighthouse [SITE] [--page GLOB]

Serves a built site (default ``_build/cpu/html``) on 127.0.0.1 the way GitHub Pages
serves it (text files gzip-compressed, ``Cache-Control: max-age=600``) and runs
Lighthouse (pinned below, installed from the npm registry into ``.tools/lighthouse/``
by ``.ci/tools``) on every page of every language, one after the other, with its default
mobile preset: a phone's screen and Lighthouse's simulated slow 4G and 4x slower CPU.
Lighthouse drives the Chromium of the browser tests, with their flags.

Prints each page's performance, accessibility, best practices and SEO scores with its
first and largest contentful paint (simulated) and how long Lighthouse took on it, then
the lowest page of each category.
Exits 1 when a page scores below 100 in accessibility, best practices or SEO (they do
not depend on the machine's speed; the failing audits are named on one line per page)
or requested anything from another host; performance is reported, never judged, since
it moves with the load of a shared machine. ``--page`` keeps the pages whose path
(``en/detach.html``) matches a glob.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import ROOT, SITE
from .chromium import CHROMIUM_FLAGS, QuietHandler, chromium_path, serve

# Lighthouse 13 needs Node 22.19; Debian's and GitHub's runners' Node is 20, so the last 12.x.
VERSION = "12.8.2"
INSTALL = ROOT / ".tools" / "lighthouse"
INSTALL_COMMAND = f"npm install --prefix .tools/lighthouse --save-exact lighthouse@{VERSION}"

CATEGORIES = {"performance": "perf", "accessibility": "a11y", "best-practices": "BP", "seo": "SEO"}
JUDGED = ("accessibility", "best-practices", "seo")  # the scores that do not depend on speed


class LighthouseError(Exception):
    """Lighthouse is missing or could not score a page (one line)."""


# --- the site, served as GitHub Pages serves it ------------------------------------------

# GitHub Pages compresses text responses with gzip and lets browsers keep them 10 minutes;
# images and fonts (already compressed) go as they are.
COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "application/xml", "image/svg+xml")


@functools.lru_cache(maxsize=512)
def gzipped(path: Path, mtime: float) -> bytes:
    return gzip.compress(path.read_bytes(), mtime=0)


class PagesHandler(QuietHandler):
    """Static files with GitHub Pages' compression and cache lifetime."""

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        kind = self.guess_type(str(path))
        if not (path.is_file() and kind.startswith(COMPRESSED_TYPES)
                and "gzip" in self.headers.get("Accept-Encoding", "")):
            super().do_GET()
            return
        body = gzipped(path, path.stat().st_mtime)
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        self.wfile.write(body)


def serve_like_pages(site: Path):
    """Serve a built site on 127.0.0.1, compressed like GitHub Pages; yields its base URL."""
    return serve(site, PagesHandler)


# --- Lighthouse -----------------------------------------------------------------------------

def lighthouse_command() -> list[str]:
    """``node <lighthouse's CLI>``, after checking that the pinned release is installed."""
    package = INSTALL / "node_modules" / "lighthouse" / "package.json"
    if not package.is_file():
        raise LighthouseError(f"Lighthouse is not installed in {INSTALL}: run `{INSTALL_COMMAND}` (.ci/tools does)")
    installed = json.loads(package.read_text(encoding="utf8"))["version"]
    if installed != VERSION:
        raise LighthouseError(f"{INSTALL} holds Lighthouse {installed}, not the pinned {VERSION}: "
                              f"run `{INSTALL_COMMAND}`")
    return ["node", str(package.parent / "cli" / "index.js")]


@dataclass
class Scores:
    page: str
    scores: dict[str, int] = field(default_factory=dict)  # category: 0 to 100
    failing: dict[str, list[str]] = field(default_factory=dict)  # category: its failing weighted audits
    fcp: float = 0.0  # ms, simulated
    lcp: float = 0.0
    elsewhere: list[str] = field(default_factory=list)  # requested URLs of another host
    seconds: float = 0.0  # how long Lighthouse took

    def problems(self) -> str:
        """One line naming what keeps a judged category below 100, or ``""``."""
        parts = [f"{category} {self.scores[category]} ({', '.join(self.failing[category]) or '?'})"
                 for category in JUDGED if self.scores[category] < 100]
        if self.elsewhere:
            parts.append(f"requests to another host ({', '.join(self.elsewhere[:3])})")
        return f"{self.page}: {'; '.join(parts)}" if parts else ""


def read_report(page: str, report: dict) -> Scores:
    """The scores, failing audits and paints of one Lighthouse result (its JSON report)."""
    if report.get("runtimeError"):
        raise LighthouseError(f"{page}: Lighthouse could not score it: {report['runtimeError'].get('message')}")
    audits = report["audits"]
    found = Scores(page)
    for category in CATEGORIES:
        entry = report["categories"][category]
        if entry["score"] is None:
            raise LighthouseError(f"{page}: Lighthouse gave no {category} score")
        found.scores[category] = round(entry["score"] * 100)
        # The audits that count towards the score (weight > 0) and did not pass.
        found.failing[category] = [ref["id"] for ref in entry["auditRefs"] if ref["weight"] > 0
                                   and audits[ref["id"]]["score"] is not None and audits[ref["id"]]["score"] < 1]
    found.fcp = audits["first-contentful-paint"].get("numericValue", 0.0)
    found.lcp = audits["largest-contentful-paint"].get("numericValue", 0.0)
    origin = report["finalDisplayedUrl"].split("/", 3)[:3]
    requested = (audits.get("network-requests", {}).get("details") or {}).get("items", [])
    found.elsewhere = sorted({item["url"] for item in requested
                              if item["url"].split("/", 3)[:3] != origin and not item["url"].startswith("data:")})
    return found


def score(url: str, page: str, lighthouse: list[str]) -> Scores:
    """Run Lighthouse's mobile preset on one URL in a fresh Chromium (Lighthouse launches it)."""
    with tempfile.TemporaryDirectory(prefix="lighthouse-") as scratch:
        output = Path(scratch) / "report.json"
        command = [*lighthouse, url, "--quiet", "--output=json", f"--output-path={output}",
                   f"--only-categories={','.join(CATEGORIES)}", "--no-enable-error-reporting",
                   f"--chrome-flags={' '.join(['--headless=new', *CHROMIUM_FLAGS])}"]
        # chrome-launcher finds the browser through CHROME_PATH; HOME keeps Lighthouse's
        # settings file (configstore) out of the user's.
        env = {**os.environ, "CHROME_PATH": chromium_path(), "HOME": scratch}
        started = time.monotonic()
        try:
            result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            raise LighthouseError(f"{page}: Lighthouse ran past 300 s") from None
        if result.returncode != 0 or not output.is_file():
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise LighthouseError(f"{page}: Lighthouse exited {result.returncode}: {last}")
        found = read_report(page, json.loads(output.read_text(encoding="utf8")))
        found.seconds = time.monotonic() - started
        return found


def pages_of(site: Path, pattern: str = "*") -> list[str]:
    """Every page of every language (``<language>/<page>.html``) whose path matches ``pattern``."""
    return [name for name in (path.relative_to(site).as_posix() for path in sorted(site.glob("*/*.html")))
            if fnmatch.fnmatch(name, pattern)]


def score_site(site: Path, pages: list[str], progress=None) -> list[Scores]:
    """Score the given pages of a built site, one after the other (two runs would share the CPU
    and slow each other's page loads)."""
    lighthouse = lighthouse_command()
    found = []
    with serve_like_pages(site) as base:
        for page in pages:
            found.append(score(f"{base}/{page}", page, lighthouse))
            if progress:
                progress(found[-1])
    return found


def row(scores: Scores) -> str:
    values = " ".join(f"{scores.scores[category]:>5}" for category in CATEGORIES)
    return (f"{scores.page:<32} {values} {scores.fcp / 1000:>7.1f} {scores.lcp / 1000:>7.1f}"
            f" {scores.seconds:>6.0f}")


HEADER = (f"{'page':<32} {' '.join(f'{short:>5}' for short in CATEGORIES.values())} {'FCP s':>7} {'LCP s':>7}"
          f" {'run s':>6}")


def report(found: list[Scores]) -> list[str]:
    """The table's summary: the lowest page of each category, then each page's problems."""
    lines = []
    for category in CATEGORIES:
        lowest = min(scores.scores[category] for scores in found)
        pages = [scores.page for scores in found if scores.scores[category] == lowest]
        where = "every page" if len(pages) == len(found) > 1 else ", ".join(pages)
        lines.append(f"lowest {category}: {lowest} ({where})")
    lines += [scores.problems() for scores in found if scores.problems()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book_extensions lighthouse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", type=Path, default=SITE)
    parser.add_argument("--page", default="*", help="glob over <language>/<page>.html (default: every page)")
    args = parser.parse_args(argv)
    if not pages_of(args.site):
        print(f"error: no built site in {args.site}: run `nox -s docs` first", file=sys.stderr)
        return 2
    if not os.path.exists(chromium_path()):
        print(f"error: no Chromium at {chromium_path()}: apt-get install chromium, or set CHROMIUM", file=sys.stderr)
        return 2
    pages = pages_of(args.site, args.page)
    if not pages:
        print(f"error: no page matches {args.page!r}", file=sys.stderr)
        return 2
    try:
        lighthouse_command()  # installed and the pinned release, before the table starts
        print(f"Lighthouse {VERSION}, mobile preset, {len(pages)} page{'s' * (len(pages) != 1)} of {args.site}")
        print(HEADER, flush=True)
        started = time.monotonic()
        found = score_site(args.site, pages, progress=lambda scores: print(row(scores), flush=True))
    except LighthouseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    lines = report(found)
    print("\n".join(lines))
    print(f"{len(found)} page{'s' * (len(found) != 1)} in {time.monotonic() - started:.0f} s")
    return 1 if any(scores.problems() for scores in found) else 0
