"""Run the article's experiment with each of its four tools and tabulate what happens.

For each of ``.data``, ``.detach()``, ``.detach_()`` and ``.clone()``: build
``out = a.sigmoid()`` afresh, take ``c`` from ``out`` with the tool, zero ``c`` in
place, then backpropagate through ``out``. The table says what ``c`` shares with
``out`` and what the backward pass gave: the right gradient, a wrong one, or an error.
It is printed as Markdown text, and rendered as a table in Jupyter.
"""

import torch

TOOLS = {
    ".data": lambda out: out.data,
    ".detach()": lambda out: out.detach(),
    ".detach_()": lambda out: out.detach_(),
    ".clone()": lambda out: out.clone(),
}


def right_gradient() -> torch.Tensor:
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a.sigmoid().sum().backward()
    return a.grad


def run(tool) -> dict:
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    c = tool(out)
    shares_storage = c.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
    version_before = out._version
    c.zero_()
    # An in-place edit of c moves out's version only if the two share one counter.
    shares_version = out._version != version_before
    try:
        out.sum().backward()
    except RuntimeError as error:
        outcome = "RuntimeError: " + str(error).split(":")[0]
    else:
        right = torch.allclose(a.grad, right_gradient())
        outcome = f"a.grad = {a.grad} ({'right' if right else 'WRONG'})"
    return {
        "c is out": c is out,
        "shares storage": shares_storage,
        "shares version": shares_version,
        "c.requires_grad": c.requires_grad,
        "backward": outcome,
    }


# Each column of run()'s rows and its heading. What backward gave comes first: on a
# narrow screen it is the column read before scrolling.
COLUMNS = {
    "backward": "backward",
    "c is out": "`c is out`",
    "shares storage": "shares storage",
    "shares version": "shares version",
    "c.requires_grad": "`c.requires_grad`",
}


def markdown_table(rows: dict) -> str:
    """The rows as a Markdown table: rendered in a notebook, still legible as text."""
    lines = ["| tool | " + " | ".join(COLUMNS.values()) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name, row in rows.items():
        lines.append(f"| `{name}` | " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
    return "\n".join(lines)


def in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def main() -> None:
    table = markdown_table({name: run(tool) for name, tool in TOOLS.items()})
    if in_ipython():
        # In Jupyter (and in the book) the table is rendered; its text is the plain view.
        from IPython.display import display

        display({"text/markdown": table, "text/plain": table}, raw=True)
    else:
        print(table)


if __name__ == "__main__":
    main()
