"""The publish workflow's own build line, run on a fixture book: the site it makes is the
findable, shareable site the other tests check (issue 24).

The command line comes from ``.github/workflows/publish.yml``: its ``${{ … }}`` expressions
are filled in as Actions fills them (text, before the shell runs) for a repository
``owner/repo`` whose Pages site is ``https://owner.github.io/repo``; bash then parses the
step's script as the runner does, with ``python3`` standing for a function that records
what ``noxfile.py`` is given. The ``docs`` session hands its arguments to the build driver
(noxfile.py), which the test runs on the fixture book ``good`` with them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from books import ROOT
from bs4 import BeautifulSoup

PUBLISH = ROOT / ".github" / "workflows" / "publish.yml"
BASE = "https://owner.github.io/repo"
# What Actions puts in place of each expression the build step may use.
CONTEXT = {
    "steps.pages.outputs.base_url": BASE,  # actions/configure-pages, for a project site
    "github.repository": "owner/repo",
}
# Actions runs a step's script with: bash --noprofile --norc -eo pipefail {0}.
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
# Each `python3 noxfile.py …` the script runs: its arguments, NUL-separated, one run a line.
RECORD = ('python3() { if [ "$1" = noxfile.py ]; then shift; printf "%s\\0" "$@" >> "$BOOK_TEST_RECORD"; '
          'printf "\\n" >> "$BOOK_TEST_RECORD"; else command python3 "$@"; fi; }\n')


def fill_in(text: str) -> str:
    """``text`` with its ``${{ expression }}`` replaced the way Actions does, before the shell."""
    def value(match: re.Match) -> str:
        expression = match.group(1).strip()
        if expression not in CONTEXT:
            pytest.fail(f"publish.yml's build step uses ${{{{ {expression} }}}}: say in CONTEXT what Actions gives it")
        return CONTEXT[expression]
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def build_steps() -> tuple[list[dict], dict]:
    """The build job's steps, and the one that builds the site (nox's docs session)."""
    steps = yaml.safe_load(PUBLISH.read_text(encoding="utf8"))["jobs"]["build"]["steps"]
    site = [step for step in steps if re.search(r"noxfile\.py -s [^\n]*\bdocs\b", step.get("run", ""))]
    assert len(site) == 1, "publish.yml must build the site in one step (python3 noxfile.py -s … docs)"
    return steps, site[0]


def noxfile_arguments(step: dict, tmp_path: Path) -> list[list[str]]:
    """What each ``python3 noxfile.py`` of the step's script receives, as on the runner."""
    record = tmp_path / "noxfile-arguments"
    record.write_text("")
    script = tmp_path / "step.sh"
    script.write_text(RECORD + fill_in(step["run"]) + "\n", encoding="utf8")
    env = {"PATH": "/usr/bin:/bin", "BOOK_TEST_RECORD": str(record),
           **{name: fill_in(str(value)) for name, value in (step.get("env") or {}).items()}}
    result = subprocess.run([*SHELL, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return [line.split("\0")[:-1] for line in record.read_text(encoding="utf8").splitlines()]


def docs_posargs(runs: list[list[str]]) -> list[str]:
    """The positional arguments nox gives the docs session: everything after the first ``--``."""
    for argv in runs:
        options = argv[: argv.index("--")] if "--" in argv else argv
        sessions = []
        for index, arg in enumerate(options):
            if arg in ("-s", "--session", "--sessions"):
                sessions += [a for a in options[index + 1:] if not a.startswith("-")]
        if "docs" in sessions:
            return argv[argv.index("--") + 1:] if "--" in argv else []
    pytest.fail(f"no python3 noxfile.py line of the build step runs the docs session: {runs}")


def test_the_site_step_follows_configure_pages():
    steps, site = build_steps()
    pages = [index for index, step in enumerate(steps) if step.get("id") == "pages"]
    assert pages, "publish.yml must take the site's address from actions/configure-pages (id: pages)"
    assert steps[pages[0]]["uses"].startswith("actions/configure-pages@")
    assert pages[0] < steps.index(site)


def test_the_docs_session_hands_its_arguments_to_the_build_driver():
    # What docs_posargs's result becomes: the driver's arguments after "html".
    assert 'python(session, env, *BUILD, "html", "--record", *session.posargs)' in (ROOT / "noxfile.py").read_text()


def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf8"), "html.parser")


def links(page: BeautifulSoup, prefix: str) -> list[str]:
    return [a["href"] for a in page.select("a[href]") if a["href"].startswith(prefix)]


def test_the_workflows_build_line_makes_a_findable_shareable_site(build_fixture, tmp_path):
    posargs = docs_posargs(noxfile_arguments(build_steps()[1], tmp_path))
    build = build_fixture("good", "html", *posargs)
    assert build.returncode == 0, build.output
    site = build.site()
    for code in ("en", "zh"):
        page = soup(site / code / "second.html")
        here = f"{BASE}/{code}/second.html"
        assert [link["href"] for link in page.select('link[rel="canonical"]')] == [here], code
        assert [meta["content"] for meta in page.select('meta[property="og:url"]')] == [here], code
        alternates = {link["hreflang"]: link["href"] for link in page.select('link[rel="alternate"][hreflang]')}
        assert alternates == {"en": f"{BASE}/en/second.html", "zh-CN": f"{BASE}/zh/second.html",
                              "x-default": f"{BASE}/en/second.html"}, code
        assert links(page, "https://colab.research.google.com/") == [
            f"https://colab.research.google.com/github/owner/repo/blob/notebooks/{code}/second.ipynb"], code
        # The notebooks step pushes <language>/_notebooks/*.ipynb as <language>/*.ipynb.
        assert (site / code / "_notebooks" / "second.ipynb").is_file()
        assert links(page, "https://github.com/owner/repo/edit/") == [
            f"https://github.com/owner/repo/edit/main/docs/{code}/second.md"], code
        report = links(page, "https://github.com/owner/repo/issues/new?")
        assert len(report) == 1 and f"docs%2F{code}%2Fsecond.md" in report[0], code
    sitemap = (site / "sitemap.xml").read_text(encoding="utf8")
    for code in ("en", "zh"):
        for name in ("index", "second"):
            assert f"<loc>{BASE}/{code}/{name}.html</loc>" in sitemap
    assert f"Sitemap: {BASE}/sitemap.xml" in (site / "robots.txt").read_text(encoding="utf8")
    root = {link["hreflang"]: link["href"] for link in soup(site / "index.html").select("link[hreflang]")}
    assert root == {"en": f"{BASE}/en/index.html", "zh-CN": f"{BASE}/zh/index.html"}


# --- the build driver's swap (book_extensions/commands/publish.py) ---------------------------

@pytest.mark.unit
def test_a_publish_that_fails_halfway_keeps_the_last_site_and_says_why_in_one_line(tmp_path, monkeypatch):
    import shutil
    from types import SimpleNamespace

    from book_extensions.commands import publish

    device = tmp_path / "cpu"
    (device / "html" / "en").mkdir(parents=True)
    (device / "html" / "en" / "index.html").write_text("the last good site")
    (device / "html-work" / "en").mkdir(parents=True)
    (device / "html-work" / "en" / "index.html").write_text("the new site")
    failures = [(f"/src/{n}", f"/dst/{n}", f"[Errno 28] No space left on device: '/src/{n}' -> '/dst/{n}'")
                for n in range(3)]

    def full_disk(source, target, **options):
        Path(target).mkdir(parents=True)  # half a copy, as a full disk leaves it
        raise shutil.Error(failures)

    monkeypatch.setattr(publish.shutil, "copytree", full_disk)
    english = SimpleNamespace(code="en")  # all publish reads of a language
    with pytest.raises(OSError) as raised:
        publish.publish(device, ["en"], [english], tmp_path / "docs")
    assert publish.why_not(raised.value) == "[Errno 28] No space left on device (3 files not copied)"
    publish.recover(device)  # what the driver does next, and the next build first
    assert (device / "html" / "en" / "index.html").read_text() == "the last good site"
    assert not (device / publish.NEXT).exists()
    assert publish.why_not(PermissionError(13, "Permission denied")) == "[Errno 13] Permission denied"
