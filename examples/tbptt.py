"""Truncated backpropagation through time, with and without ``hidden.detach()``.

An RNN cell reads a sequence of 12 steps in chunks of 4 and runs a backward pass
after each chunk. For every chunk the program counts the autograd nodes reachable
from the chunk's loss, and records which time steps that backward pass reached (a
hook on each step's hidden state notes when a gradient arrives). With
``hidden = hidden.detach()`` between chunks the node count stays the same from chunk to
chunk, and each backward pass reaches only its own chunk's four steps. Without it the
graph reaches back to step 0 and grows with every chunk, and the second backward pass
fails unless the first one kept the graph (``retain_graph=True``).
"""

import torch

STEPS, CHUNK, SIZE = 12, 4, 3


def count_nodes(tensor: torch.Tensor) -> int:
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def run(detach: bool, retain_graph: bool = True) -> list[dict]:
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(SIZE, SIZE)
    inputs = torch.randn(STEPS, 1, SIZE)
    targets = torch.randn(STEPS, 1, SIZE)
    hidden = torch.zeros(1, SIZE)
    reached = []
    rows = []
    for start in range(0, STEPS, CHUNK):
        if detach:
            hidden = hidden.detach()
        loss = torch.zeros(())
        for step in range(start, start + CHUNK):
            hidden = cell(inputs[step], hidden)
            hidden.register_hook(lambda grad, step=step: reached.append(step))
            loss = loss + (hidden - targets[step]).pow(2).mean()
        reached.clear()
        cell.zero_grad()
        nodes = count_nodes(loss)
        loss.backward(retain_graph=retain_graph)
        rows.append({"steps": (start, start + CHUNK - 1), "nodes": nodes, "reached": sorted(reached)})
    return rows


def without_retain_graph() -> str:
    try:
        run(detach=False, retain_graph=False)
    except RuntimeError as error:
        return "RuntimeError: " + str(error).split(" (")[0]
    return "no error"


def main() -> None:
    for detach in (True, False):
        print("with hidden.detach():" if detach else "without detach (retain_graph=True):")
        # Detached chunks never revisit a graph, so only the run without detach keeps it.
        for row in run(detach, retain_graph=not detach):
            first, last = row["steps"]
            reached = row["reached"]
            print(f"  chunk {first:>2}-{last:<2}  nodes {row['nodes']:>3}  backward reached steps {reached[0]}-{reached[-1]}")
    print("without detach or retain_graph:", without_retain_graph())


if __name__ == "__main__":
    main()
