"""Run the article's experiment with each of its four tools and tabulate what happens.

For each of ``.data``, ``.detach()``, ``.detach_()`` and ``.clone()``: build
``out = a.sigmoid()`` afresh, take ``c`` from ``out`` with the tool, zero ``c`` in
place, then backpropagate through ``out``. The table says what ``c`` shares with
``out`` and what the backward pass gave: the right gradient, a wrong one, or an error.
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


def main() -> None:
    rows = {name: run(tool) for name, tool in TOOLS.items()}
    columns = list(next(iter(rows.values())))
    width = max(map(len, rows))
    print(" " * width, *(f"{c:<16}" for c in columns[:-1]), columns[-1])
    for name, row in rows.items():
        cells = [f"{str(row[c]):<16}" for c in columns[:-1]]
        print(f"{name:<{width}}", *cells, row[columns[-1]])


if __name__ == "__main__":
    main()
