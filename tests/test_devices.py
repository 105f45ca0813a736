"""Comparing CPU and CUDA records: what is expected to differ, and what must fail."""

import json

import pytest
from bs4 import BeautifulSoup

from book_extensions.records import cell_records, device_records


def record(torch="2.13.0+cpu", **pages):
    return {"device": "x", "device_name": "X", "torch": torch, "cuda": None, "python": "3",
            "date": "2026-11-30",
            "pages": {page: [{"source": digest, "outputs": outputs} for digest, outputs in cells]
                      for page, cells in pages.items()}}


def differences(cpu_outputs, cuda_outputs, cuda_torch="2.13.0+cu130"):
    cpu = record(page=[("s1", cpu_outputs)])
    cuda = record(torch=cuda_torch, page=[("s1", cuda_outputs)])
    return cell_records.compare(cpu, cuda)


@pytest.mark.parametrize("cpu, cuda", [
    (["tensor([0.7311, 0.8808], grad_fn=<SigmoidBackward0>)\n"],
     ["tensor([0.7311, 0.8808], device='cuda:0', grad_fn=<SigmoidBackward0>)\n"]),
    (["RuntimeError: modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Sigmoid"],
     ["RuntimeError: modified by an inplace operation: [torch.cuda.FloatTensor [3]], which is output 0 of Sigmoid"]),
    (["tensor([0.1966, 0.1050])\n"], ["tensor([0.1967, 0.1050])\n"]),  # last printed digit
    (["cpu\n"], ["cuda:0\n"]),
])
def test_expected_differences_are_normalised(cpu, cuda):
    assert differences(cpu, cuda) == []


@pytest.mark.parametrize("cpu, cuda, detail", [
    (["True\n"], ["RuntimeError: boom"], "RuntimeError only on CUDA"),
    (["RuntimeError: x"], ["TypeError: can't convert cuda:0 device type tensor to numpy"],
     "CPU raised RuntimeError, CUDA raised TypeError"),
    (["True None\n"], ["False None\n"], "CPU printed 'True None', CUDA printed 'False None'"),
    (["SigmoidBackward0\n"], ["MulBackward0\n"], "CPU printed 'SigmoidBackward0', CUDA printed 'MulBackward0'"),
    (["0 1\n"], ["0 2\n"], "CPU 1 against CUDA 2"),  # version counts
    (["tensor([0.1966])\n"], ["tensor([0.2100])\n"], "CPU 0.1966 against CUDA 0.2100"),
])
def test_behaviour_differences_fail(cpu, cuda, detail):
    found = differences(cpu, cuda)
    assert [d.detail for d in found] == [detail]
    assert all(d.fails for d in found)


def test_message_wording_counts_only_when_torch_versions_match():
    cpu = ["RuntimeError: one wording"]
    cuda = ["RuntimeError: another wording"]
    assert differences(cpu, cuda, cuda_torch="2.14.1+cu130") == []
    assert [d.kind for d in differences(cpu, cuda, cuda_torch="2.13.0+cu130")] == ["behaviour"]


def test_changed_code_makes_cells_stale_not_failing():
    cpu = record(page=[("new", ["1\n"])])
    cuda = record(torch="2.13.0+cu130", page=[("old", ["1\n"])])
    found = cell_records.compare(cpu, cuda, digests={"page": ["new"]})
    assert [(d.kind, d.fails) for d in found] == [("missing", False), ("stale", False)]


def test_compare_command(tmp_path, capsys):
    (tmp_path / "cpu.json").write_text(json.dumps(record(page=[("s", ["True\n"])])))
    assert device_records.main(["compare", "--results", str(tmp_path), "--docs", str(tmp_path)]) == 0
    assert "No CUDA run is recorded yet" in capsys.readouterr().out
    (tmp_path / "cuda.json").write_text(json.dumps(record(torch="2.13.0+cu130", page=[("s", ["False\n"])])))
    assert device_records.main(["compare", "--results", str(tmp_path), "--docs", str(tmp_path)]) == 1
    assert "1 behaviour differences" in capsys.readouterr().out


def test_the_comparison_page_shows_the_runs_and_the_differences(build_fixture, tmp_path):

    results = tmp_path / "results"
    results.mkdir()
    digest = cell_records.source_digest("print(True)")
    cpu = record(index=[(digest, ["True\n"])])
    cuda = record(torch="2.13.0+cu130", index=[(digest, ["False\n"])])
    cuda.update(device_name="NVIDIA H200", cuda="13.0")
    (results / "cpu.json").write_text(json.dumps(cpu))
    (results / "cuda.json").write_text(json.dumps(cuda))
    build = build_fixture("device_page", "html", sphinx=("-D", f"book_results_dir={results}"))
    assert build.returncode == 0, build.output
    en = (build.site() / "en" / "index.html").read_text(encoding="utf8")
    zh = (build.site() / "zh" / "index.html").read_text(encoding="utf8")
    assert "CUDA run: NVIDIA H200, torch 2.13.0+cu130, CUDA 13.0, 2026-11-30." in en
    assert "1 code cells compared; 1 behave differently on the two devices." in en
    assert "CPU printed ‘True’, CUDA printed ‘False’" in en  # Sphinx's smart quotes
    assert "共比较了 1 个代码单元，其中 1 个在两种设备上的行为不同。" in zh


def test_a_cuda_record_is_held_against_the_cpu_record_of_its_own_release(tmp_path):
    (tmp_path / "cpu.json").write_text(json.dumps(record(torch="2.15.0")))
    cuda = record(torch="2.11.0+cu128")
    assert cell_records.cpu_record_for(tmp_path, cuda)["torch"] == "2.15.0"  # no record of 2.11.0: cpu.json
    (tmp_path / "cpu-torch-2.11.0.json").write_text(json.dumps(record(torch="2.11.0+cpu")))
    assert cell_records.cpu_record_for(tmp_path, cuda)["torch"] == "2.11.0+cpu"


def test_outputs_that_differ_only_in_blank_lines_are_reported_not_crashed_on():
    [found] = differences(["x\n"], ["x\n\n\n"], cuda_torch="2.13.0+cu130")
    assert found.kind == "behaviour"


@pytest.mark.parametrize("cuda_run", [False, True])
def test_the_device_page_is_in_the_navigation_once_a_cuda_run_is_recorded(build_fixture, tmp_path, cuda_run):
    results = tmp_path / "results"
    results.mkdir()
    digest = cell_records.source_digest("print(True)")
    (results / "cpu.json").write_text(json.dumps(record(devices=[(digest, ["True\n"])])))
    if cuda_run:
        (results / "cuda.json").write_text(json.dumps(record(torch="2.13.0+cu130", devices=[(digest, ["True\n"])])))
    build = build_fixture("device_navigation", "html", sphinx=(
        "-D", f"book_results_dir={results}", "-D", "book_device_page=devices"))
    # Left out, the page is an orphan: no "not included in any toctree" warning fails the build.
    assert build.returncode == 0, build.output
    for language in ("en", "zh"):
        index = (build.site() / language / "index.html").read_text(encoding="utf8")
        assert ('href="devices.html"' in index) == cuda_run, language
        assert (build.site() / language / "devices.html").exists()  # still built, reachable by its address


# --- cells are told apart by their place on the page, not by their code --------------

CUDA_ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_two_cells_with_the_same_code_are_compared_each_with_its_own():
    digest = cell_records.source_digest("print(1 + 1)")
    cpu = record(page=[(digest, ["2\n"]), (digest, ["2\n"])])
    cuda = record(torch="2.13.0+cu130", page=[(digest, [CUDA_ERROR]), (digest, ["2\n"])])
    assert [(d.cell, d.detail) for d in cell_records.compare(cpu, cuda)] == [(1, "RuntimeError only on CUDA")]


def test_a_cell_whose_place_now_holds_other_code_is_stale():
    first, second = cell_records.source_digest("a = 1"), cell_records.source_digest("b = 2")
    recorded = record(page=[(first, ["\n"]), (second, ["\n"])])
    # The two cells swapped places: each place holds other code than was recorded there.
    found = cell_records.compare(recorded, recorded, digests={"page": [second, first]})
    assert [(d.kind, d.cell) for d in found] == [("stale", 1), ("stale", 2)]


def test_the_device_page_and_the_release_notes_tell_repeated_cells_apart(build_fixture, tmp_path):
    from book_extensions.records import release_changes

    results = tmp_path / "results"
    results.mkdir()
    digest = cell_records.source_digest("print(1 + 1)")
    (results / "cpu.json").write_text(json.dumps(record(index=[(digest, ["2\n"]), (digest, ["2\n"])])))
    cuda = record(torch="2.13.0+cu130", index=[(digest, [CUDA_ERROR]), (digest, ["2\n"])])
    (results / "cuda.json").write_text(json.dumps(cuda))
    # An older release printed something else in the first of the two cells only.
    current = release_changes.current_release()
    for release, first in (("1.0.0", "3\n"), (current, "2\n")):
        release_changes.record_path(results, release).write_text(json.dumps(
            record(torch=release, index=[(digest, [first]), (digest, ["2\n"])])))
    listing = tmp_path / "torch-release_changes.txt"
    listing.write_text(f"1.0.0\n{current}\n")
    build = build_fixture("repeated_cells", "html", "--language", "en", sphinx=(
        "-D", f"book_results_dir={results}", "-D", f"book_releases_file={listing}"))
    assert build.returncode == 0, build.output
    page = (build.site() / "en" / "index.html").read_text(encoding="utf8")
    assert "2 code cells compared; 1 behave differently on the two devices." in page
    rows = [" ".join(row.get_text(" ", strip=True).split()) for row in BeautifulSoup(page, "html.parser").select("tbody tr")]
    assert rows == ["page and cell index #1 kind behaviour what differs RuntimeError only on CUDA"]
    cells = page.split('id="cell-')
    assert len(cells) == 3
    assert '<details class="book-release-output">' in cells[1]
    assert "book-release-output" not in cells[2]
    assert "On torch 1.0.0, 1 cell prints something else" in page


# --- what a cell shows besides text: figures, HTML, JSON --------------------------------

def shown_record(torch, media, outputs=("<Figure size 640x480 with 1 Axes>",)):
    data = record(torch=torch, page=[("s1", list(outputs))])
    data["format"] = cell_records.FORMAT
    if media:
        data["pages"]["page"][0]["media"] = media
    return data


def test_a_changed_image_is_a_behaviour_difference(tmp_path, capsys):
    cpu = shown_record("2.13.0+cpu", ["image/png 1111111111111111"])
    cuda = shown_record("2.13.0+cu130", ["image/png 2222222222222222"])
    [found] = cell_records.compare(cpu, cuda)
    assert (found.kind, found.fails, found.detail) == ("behaviour", True, "CPU and CUDA show a different image/png")
    assert cell_records.compare(cpu, shown_record("2.13.0+cu130", ["image/png 1111111111111111"])) == []
    # One side shows a figure the other does not.
    [found] = cell_records.compare(cpu, shown_record("2.13.0+cu130", []))
    assert found.detail == "CPU and CUDA show a different image/png"
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    (tmp_path / "cuda.json").write_text(json.dumps(cuda))
    assert device_records.main(["compare", "--results", str(tmp_path), "--docs", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "/en/page.md code cell 1: CPU and CUDA show a different image/png" in out
    assert "1 behaviour differences" in out and "only text compared" not in out


def test_a_record_made_before_the_digests_is_compared_on_its_text_and_says_so(tmp_path, capsys):
    old = record(page=[("s1", ["<Figure size 640x480 with 1 Axes>"])])  # no "format": text only
    new = shown_record("2.13.0+cu130", ["image/png 2222222222222222"])
    assert cell_records.compare(old, new) == []
    (tmp_path / "cpu.json").write_text(json.dumps(old))
    (tmp_path / "cuda.json").write_text(json.dumps(new))
    assert device_records.main(["compare", "--results", str(tmp_path), "--docs", str(tmp_path)]) == 0
    assert ("note: only text compared: the record of cpu.json predates the digests of images, HTML and the "
            "other kinds a page shows; record it again to compare them") in capsys.readouterr().out


def test_a_cpu_run_is_held_to_an_older_record_of_its_release_on_what_that_holds(tmp_path, capsys):
    # The GPU job's rehearsal: cpu-torch-<release>.json recorded before the digests.
    old = record(torch="2.11.0+cpu", page=[("s1", ["<Figure size 640x480 with 1 Axes>"])])
    old["device"] = "cpu"
    (tmp_path / "cpu-torch-2.11.0.json").write_text(json.dumps(old))
    run = shown_record("2.11.0+cpu", ["image/png 2222222222222222"])
    run["device"] = "cpu"
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert device_records.main(["compare", "--results", str(tmp_path), "--docs", str(tmp_path),
                              "--record", str(tmp_path / "run.json")]) == 0
    out = capsys.readouterr().out
    assert "only text compared: the record of cpu-torch-2.11.0.json predates" in out
    assert "record identical to" in out


def png(pixels: list[tuple[int, int, int]], note: str = "") -> str:
    import base64
    import io

    from PIL import Image, PngImagePlugin

    image = Image.new("RGB", (len(pixels), 1))
    image.putdata(pixels)
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", note)
    buffer = io.BytesIO()
    image.save(buffer, format="png", pnginfo=info)
    return base64.b64encode(buffer.getvalue()).decode()


def test_each_kind_is_digested_by_what_a_reader_sees():
    entry = cell_records.media_entry
    # A raster image by its pixels: its metadata (matplotlib's version) aside.
    assert entry("image/png", png([(0, 0, 0), (255, 0, 0)], "one")) == entry("image/png", png([(0, 0, 0), (255, 0, 0)], "two"))
    assert entry("image/png", png([(0, 0, 0), (255, 0, 0)])) != entry("image/png", png([(0, 0, 0), (255, 0, 1)]))
    # matplotlib's SVG without svg.hashsalt: a date and random ids, on every save.
    svg = ('<svg><metadata><dc:date>{date}</dc:date></metadata><defs><path id="{m}" d="M 0 0"/>'
           '<clipPath id="{p}"><rect/></clipPath></defs><g clip-path="url(#{p})"><use xlink:href="#{m}" x="{x}"/></g></svg>')
    one = entry("image/svg+xml", svg.format(date="2026-12-01", m="m1a2b", p="p3c4d", x=1))
    assert one == entry("image/svg+xml", svg.format(date="2026-12-05", m="m9f8e", p="p7d6c", x=1))
    assert one != entry("image/svg+xml", svg.format(date="2026-12-05", m="m9f8e", p="p7d6c", x=2))
    # HTML with an address, blanked as on the page; JSON by its content, keys in any order.
    assert entry("text/html", "<b>at 0x7f1234567890</b>") == entry("text/html", "<b>at 0x7f0987654321</b>")
    assert entry("text/html", "<b>0.25</b>") != entry("text/html", "<b>0.5</b>")
    assert entry("application/json", {"a": 1, "b": 2}) == entry("application/json", {"b": 2, "a": 1})
    assert entry("text/markdown", ["a\n", "b"]) == entry("text/markdown", "a\nb")
    # Glued kinds are recorded as the kind the page pastes.
    glued = {"output_type": "display_data", "data": {"application/papermill.record/text/plain": "<SVG>",
                                                      "application/papermill.record/image/svg+xml": svg.format(
                                                          date="d", m="m", p="p", x=1)}}
    assert cell_records.media([glued]) == [one]
    assert cell_records.media([{"output_type": "stream", "name": "stdout", "text": "x"}]) == []


def test_a_kind_no_record_can_compare_is_refused_in_one_line():
    shown = {"output_type": "display_data", "data": {"text/plain": "<Widget>",
                                                     "application/vnd.jupyter.widget-view+json": {"model_id": "5f1c"}}}
    with pytest.raises(cell_records.UncomparableOutput) as refused:
        cell_records.media([shown], "docs/en/page.md: code cell 3")
    assert str(refused.value) == (
        "docs/en/page.md: code cell 3 shows application/vnd.jupyter.widget-view+json, which no record can compare "
        "(nor `nox -s determinism`): show it as text, HTML, Markdown, LaTeX, JSON, SVG or a PNG, JPEG, GIF or WebP image")
    assert cell_records.media([shown]) == []  # the book's folds leave it out; recording refuses it
