"""Figures drawn at build time from the real objects of a page.

Runs inside a page's kernel (the build puts the repository on the kernel's
``PYTHONPATH``)::

    from myst_nb import glue
    from book_extensions.kernel.figures import autograd_graph
    glue("graph-after-detach", autograd_graph(a=a, out=out, c=c), display=False)

draws the graph autograd recorded behind the named tensors by walking
``grad_fn.next_functions``: boxes are graph nodes (``SigmoidBackward0``...), rounded
boxes are the named tensors, and a named tensor with no ``grad_fn`` stands alone,
which is what a cut looks like. Every label is a name from the code, so one figure
serves every language. What is said about it is the page's prose, in each language:
the cell (tagged ``remove-cell``, byte-identical in every language) only glues the
figure, and the prose pastes it with its own alt text and caption::

    ```{glue:figure} graph-after-detach
    :alt: The autograd graph: a leads through SigmoidBackward0 to out; c stands alone.

    The caption.
    ```

The SVG states its natural width, so a page shows it at most that wide, and Sphinx
links a figure of stated size to its full-size file (``html_scaled_image_link``):
on a phone, where it is scaled down, a tap opens it whole. The SVG is deterministic
(no dates, fixed ids), so two builds produce the same bytes.
"""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
from IPython.display import SVG  # noqa: E402

TENSOR_STYLE = {"boxstyle": "round,pad=0.4", "facecolor": "#e8f1fb", "edgecolor": "#1f5fa8"}
NODE_STYLE = {"boxstyle": "square,pad=0.4", "facecolor": "#f5f5f5", "edgecolor": "#555555"}


def record_graph(tensors: dict) -> nx.DiGraph:
    """Forward-direction graph: leaves -> nodes -> named tensors."""
    graph = nx.DiGraph()
    names = {id(t): name for name, t in tensors.items()}
    seen = set()
    # Some torch releases hand out a new Python object for a node on each access; keeping
    # every visited one alive stops a freed object's id() from being reused for another.
    alive = []

    def node_key(fn) -> str:
        if type(fn).__name__ == "AccumulateGrad" and id(fn.variable) in names:
            return names[id(fn.variable)]
        return f"{fn.name()}#{id(fn)}"

    def visit(fn) -> None:
        if fn is None or id(fn) in seen:
            return
        seen.add(id(fn))
        alive.append(fn)
        key = node_key(fn)
        if key not in graph:
            is_tensor = key in tensors
            graph.add_node(key, label=key if is_tensor else fn.name(), tensor=is_tensor)
        for child, _ in fn.next_functions:
            if child is not None:
                visit(child)
                graph.add_edge(node_key(child), key)

    for name, tensor in tensors.items():
        graph.add_node(name, label=name, tensor=True)
        if tensor.grad_fn is not None:
            visit(tensor.grad_fn)
            graph.add_edge(node_key(tensor.grad_fn), name)
    return graph


def layout(graph: nx.DiGraph) -> dict:
    """Columns by depth from the leaves, rows in a stable order: no randomness."""
    depth = {}
    for node in nx.topological_sort(graph):
        preds = list(graph.predecessors(node))
        depth[node] = 1 + max(depth[p] for p in preds) if preds else 0
    columns: dict[int, list] = {}
    for node in graph.nodes:  # insertion order is deterministic
        columns.setdefault(depth[node], []).append(node)
    return {
        node: (col * 2.6, -row * 1.0 + (len(nodes) - 1) / 2)
        for col, nodes in columns.items()
        for row, node in enumerate(nodes)
    }


def autograd_graph(**tensors) -> SVG:
    graph = record_graph(tensors)
    positions = layout(graph)
    xs = [x for x, _ in positions.values()]
    ys = [y for _, y in positions.values()]
    width = 2.2 + (max(xs) - min(xs)) * 0.9
    height = 1.0 + (max(ys) - min(ys)) * 0.8
    with plt.rc_context({"svg.hashsalt": "cutting-the-graph", "font.size": 10}):
        figure, axes = plt.subplots(figsize=(width, height))
        axes.set_axis_off()
        labels = {}
        for node, (x, y) in positions.items():
            data = graph.nodes[node]
            labels[node] = axes.text(x, y, data["label"], ha="center", va="center",
                                     family="DejaVu Sans Mono",
                                     bbox=TENSOR_STYLE if data["tensor"] else NODE_STYLE)
        for source, target in graph.edges:
            # From the right edge of one label's box to the left edge of the next.
            axes.annotate("", xy=(0, 0.5), xycoords=labels[target].get_bbox_patch(),
                          xytext=(1, 0.5), textcoords=labels[source].get_bbox_patch(),
                          arrowprops={"arrowstyle": "-|>", "color": "#555555",
                                      "shrinkA": 0, "shrinkB": 0})
        axes.set_xlim(min(xs) - 1.3, max(xs) + 1.3)
        axes.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
        plt.close(figure)
    svg = buffer.getvalue()
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg).group(1))
    return SVG(svg, metadata={"width": round(width_pt * 96 / 72)})  # CSS pixels
