"""The real book passes every gate, in both languages."""

import json
import re

import pytest
from books import ROOT, require_tool
from bs4 import BeautifulSoup
from site_checks import ALLOWED_IN_ZH, english_words, search

from book_extensions.checks import parity
from book_extensions.execution.page_execution import EXECUTIONS_FILE

pytestmark = pytest.mark.browser



def test_both_languages_have_the_same_structure():
    assert parity.main([str(ROOT / "docs")]) == 0


def test_the_chinese_build_executes_nothing(book):
    report = book.out / "cpu" / "doctrees" / "zh" / EXECUTIONS_FILE
    assert json.loads(report.read_text())["executed"] == []


def test_the_books_pages_read_no_file_outside_the_keyed_folders(book):
    """A page whose kernel reads a file of the machine (kernel/reads.py) is executed again
    whenever it changes: the book's pages read none, so the list of what the kernel may read
    unnoted (the toolchain, the page's folders, the system's) is the whole of what they read."""
    from jupyter_cache import get_cache

    from book_extensions.execution import runner

    records = [r for folder in book.cache.glob("cpu-*") for r in get_cache(str(folder)).list_cache_records()]
    assert records, f"no execution record in {book.cache}"
    read = {r.uri: r.data.get(runner.READS) for r in records if r.data.get(runner.READS) != {}}
    assert not read, read


def test_chinese_search_finds_the_book(book):
    zh = book.site() / "zh"
    assert "article" in search(zh, "计算图")
    assert "article" in search(zh, "梯度")
    assert "article" in search(zh, "版本计数器")


def heading_words() -> set[str]:
    """Latin words in the Chinese headings (a heading may name `.detach()` or NumPy)."""
    words = set()
    for page in (ROOT / "docs" / "zh").glob("*.md"):
        for line in page.read_text(encoding="utf8").splitlines():
            if re.match(r"#+ ", line):
                words |= set(re.findall(r"[A-Za-z]{2,}", line))
    return words


def test_the_chinese_interface_is_chinese(book):
    # Sections hold the prose, where Chinese text names sigmoid or autograd as it
    # should; navigation repeats the headings, which may too.
    allowed = ALLOWED_IN_ZH | heading_words()
    for page in sorted((book.site() / "zh").glob("*.html")):
        assert english_words(page, "zh", allowed, frozenset({"section"})) == set(), page.name


# The error atlas's two pages: the everyday messages, and those of the training setups.
ATLAS_PAGES = ("error-atlas", "error-atlas-training")
# A phrase of each message in the error atlas, as a reader would paste it.
ATLAS_MESSAGES = [
    "one of the variables needed for gradient computation has been modified by an inplace operation",
    "element 0 of tensors does not require grad and does not have a grad_fn",
    "optimizer got an empty parameter list",
    "Can't call numpy() on Tensor that requires grad",
    "a leaf Variable that requires grad is being used in an in-place operation",
    "a view of a leaf Variable that requires grad is being used in an in-place operation",
    "Trying to backward through the graph a second time",
    "Can't detach views in-place",
    "Inference tensors cannot be saved for backward",
    "Inplace update to inference tensor outside InferenceMode is not allowed",
    "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed",
    "you can only change requires_grad flags of leaf variables",
    "Cannot assign non-leaf Tensor to parameter",
    "functions with out=... arguments don't support automatic differentiation",
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone()",
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed",
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior",
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled",
    "grad can be implicitly created only for scalar outputs",
    "loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
    "Recomputed values for the following tensors",  # the cell wraps the rest of the message
    "none of output has requires_grad=True, this checkpoint() is not necessary",
    "unscale_() has already been called on this optimizer since the last update()",
    "No inf checks were recorded for this optimizer",
    "No inf checks were recorded prior to update",
    "would mutate a captured Tensor",
    "Function 'SqrtBackward0' returned nan values in its 0th output",
    "Expected to mark a variable ready only once",
    "Missing key in checkpoint state_dict",
    "`clip_grad_norm_()` should only be called on the root FSDP instance",
    "unsupported format string passed to DTensor.__format__",
    "FSDP expects uniform original parameter dtype but got",  # the cell sorts the set it ends with
    "appears to not have been used in the graph",
    "One of the differentiated Tensors does not require grad",
    "returned an invalid gradient at index",
    "is a view and is being modified inplace",
    "Trying to use a saved tensor that has been detached in-place",
    "A view was created in inference mode and is being modified inplace in normal mode",
    "cannot register a hook on a tensor that doesn't require gradient",
    "Only Tensors of floating point and complex dtype can require gradients",
    "can't optimize a non-leaf Tensor",
    "None of the inputs have requires_grad=True. Gradients will be None",
    "expected m1 and m2 to have the same dtype",  # the CPU's wording; CUDA's says mat1 and mat2
    "mat1 and mat2 must have the same dtype, but got BFloat16 and Float",
    "zip() argument 2 is shorter than argument 1",
    "it must override the setup_context staticmethod",
    "no autograd formula was registered",
    "returning intermediate with requires_grad_()",
    "Hard failure due to fail_on_recompile_limit_hit",
]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("message", ATLAS_MESSAGES, ids=lambda m: m[:40])
def test_searching_an_error_message_finds_the_error_atlas(book, language, message):
    assert set(ATLAS_PAGES) & search(book.site() / language, message)


def test_every_atlas_message_is_printed_by_torch_on_an_atlas_page(book):
    # The phrases above must be torch's own words, as executed, not typed in prose.
    for language in ("en", "zh"):
        pages = [BeautifulSoup((book.site() / language / f"{name}.html").read_text(encoding="utf8"), "html.parser")
                 for name in ATLAS_PAGES]
        text = " ".join(pre.get_text() for page in pages for pre in page.find_all("pre"))  # code and outputs
        for message in ATLAS_MESSAGES:
            assert message in text, (language, message)


def test_the_committed_cpu_record_matches_this_build(book):
    # results/cpu.json feeds the "CPU vs CUDA" page; `nox -s docs` rewrites it.
    from book_extensions.records import cell_records

    committed = json.loads((ROOT / "results" / "cpu.json").read_text(encoding="utf8"))
    fresh = cell_records.record("cpu", cell_records.cache_dir_for("cpu", book.cache), ROOT / "docs")
    assert committed["pages"] == fresh["pages"], "results/cpu.json is out of date: run `nox -s docs` and commit it"
    assert committed["torch"] == fresh["torch"]


def test_the_glossary_shows_the_term_list_in_both_languages(book):
    from book_extensions.checks.prose import load_terms

    terms = load_terms(ROOT / "docs" / "terms.zh.toml")
    for language in ("en", "zh"):
        page = BeautifulSoup((book.site() / language / "glossary.html").read_text(encoding="utf8"), "html.parser")
        words = [term.get_text().strip() for term in page.select("dl.book-term-list > dt")]
        assert words == [term.use for term in terms], language
        assert not page.select("table.book-term-list"), language  # no table of the variants: the build's rules


def test_the_provenance_page_names_the_toolchain_and_every_page(book):
    from book_extensions.execution.cache_key import torch_version

    for language, build_word in (("en", "This build ran on CPU"), ("zh", "本次构建运行在 CPU 上")):
        page = (book.site() / language / "provenance.html").read_text(encoding="utf8")
        assert "<code class=\"docutils literal notranslate\"><span class=\"pre\">torch</span></code>" in page
        assert torch_version() in page and build_word in page
        # Pages by their titles in the reader's language, linked, in the order of the contents.
        table = BeautifulSoup(page, "html.parser").select("article table")[-1]
        listed = [(link["href"].removesuffix(".html"), link.get_text()) for link in table.select("a.reference.internal")]
        titles = dict(listed)
        for chapter in ("article", "detach", *ATLAS_PAGES, "cheat-sheet"):
            assert chapter in titles and titles[chapter] != chapter, (language, chapter)
        if language == "zh":
            assert re.search("[\u4e00-\u9fff]", titles["error-atlas"]), titles
        order = [name for name, _ in listed]
        assert order.index("autograd-basics") < order.index("detach") < order.index("error-atlas"), order
        assert order.index("error-atlas-training") == order.index("error-atlas") + 1, order


VNU = ROOT / ".tools" / "vnu.jar"


def vnu(*files):
    import subprocess

    require_tool(VNU.exists(), f"the Nu HTML checker, {VNU}, is missing: .ci/tools installs it (npm pack vnu-jar)")
    # --no-langdetect: its guess at each page's language is only ever a warning, which
    # --errors-only drops, and it took a tenth of the checker's time.
    return subprocess.run(["java", "-jar", str(VNU), "--errors-only", "--no-langdetect", "--format", "gnu",
                           "--filterpattern", VNU_OUTDATED_CSS, *map(str, files)], capture_output=True, text=True)


# The checker's CSS validator predates CSS Containment 3 (container queries, in every browser since
# 2023: book.css sizes the widest tables by the box they get); only these two messages are ignored.
VNU_OUTDATED_CSS = (r".*CSS: (“container-type”: Property “container-type” doesn't exist"
                    r"|Unrecognized at-rule “@container”)\.?")


def test_every_page_is_valid_html(book):
    # _static/ holds the theme's template fragments, which are not pages.
    files = [p for p in book.site().rglob("*.html") if "_static" not in p.parts]
    assert len(files) > 30
    result = vnu(*files)
    assert result.returncode == 0, result.stderr[:3000]


def test_the_html_checker_finds_errors(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html lang="en"><head><title>x</title></head>'
                   '<body><p id="a">one</p><p id="a">two</p></body></html>')
    # What it ignores is those two messages only: other CSS errors still fail. One run of the
    # checker for the three files (each run starts a JVM).
    css, typo = tmp_path / "css.html", tmp_path / "typo.html"
    css.write_text('<!DOCTYPE html><html lang="en"><head><title>x</title><style>div { container-type: inline-size; } '
                   '@container (min-width: 10rem) { p { color: red; } }</style></head><body><p>x</p></body></html>')
    typo.write_text('<!DOCTYPE html><html lang="en"><head><title>x</title><style>div { container-typo: inline-size; }'
                    '</style></head><body><p>x</p></body></html>')
    result = vnu(bad, css, typo)
    assert result.returncode != 0, result.stderr
    lines = result.stderr.splitlines()
    assert any("bad.html" in line and "Duplicate ID" in line for line in lines), lines
    assert any("typo.html" in line and "container-typo" in line for line in lines), lines
    assert not [line for line in lines if "css.html" in line], lines
