"""The cell checks' building blocks (the expect_error schema, the addresses blanked in outputs) and
the kernel's graph figures, which those outputs show."""

import pytest

from book_extensions.execution.cell_checks import ADDRESS, expectation

pytestmark = pytest.mark.unit


def test_expectation_schema():
    assert expectation({"expect_error": {"type": "RuntimeError", "message": "inplace"}}) == ("RuntimeError", "inplace")
    assert "non-empty" in expectation({"expect_error": {"type": "RuntimeError"}})
    assert "unknown keys: match" in expectation({"expect_error": {"type": "E", "message": "m", "match": "x"}})
    assert "mapping" in expectation({"expect_error": "RuntimeError"})


def test_addresses_are_recognised():
    assert ADDRESS.sub("0x…", "<SigmoidBackward0 object at 0x7f3b2c1d9e80>") == "<SigmoidBackward0 object at 0x…>"
    assert ADDRESS.sub("0x…", "tensor([0x10])") == "tensor([0x10])"


def test_graph_figures_come_from_the_real_graph_and_are_deterministic():
    import torch

    from book_extensions.kernel.figures import autograd_graph, record_graph

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    out = a.sigmoid()
    c = out.detach()
    graph = record_graph({"a": a, "out": out, "c": c})
    labels = {n: graph.nodes[n]["label"] for n in graph.nodes}
    sigmoid = next(n for n, label in labels.items() if label == "SigmoidBackward0")
    assert set(graph.edges) == {("a", sigmoid), (sigmoid, "out")}
    assert graph.degree("c") == 0  # the detached tensor stands alone
    first = autograd_graph(a=a, out=out, c=c).data
    assert first == autograd_graph(a=a, out=out, c=c).data
    assert first.lstrip().startswith(("<?xml", "<svg"))
