"""Logging losses without keeping their graphs alive, measured.

A small model runs five batches, and after each one the loss goes into a log in one
of three ways: the tensor itself, ``loss.item()`` or ``loss.detach()``. The program
then measures what the log keeps alive: the autograd nodes reachable from the logged
values, and the tensors their graphs saved for backward and still hold. Saved tensors
are seen with ``torch.autograd.graph.saved_tensors_hooks``; the model's parameters
are left out of the count, since they stay alive anyway. It does this for a training
loop, whose ``backward()`` frees each graph's saved tensors (but not its nodes), and
for an evaluation loop run without ``torch.no_grad()``, where nothing frees them.
"""

import weakref

import torch
import torch.nn.functional as F

BATCHES, BATCH, WIDTH = 5, 64, 256

LOGGERS = {
    "loss": lambda loss: loss,
    "loss.item()": lambda loss: loss.item(),
    "loss.detach()": lambda loss: loss.detach(),
}


class Packed:
    """What a graph stores instead of a saved tensor, so that we can see when it is released.

    It keeps ``tensor.detach()``, not ``tensor``: for a tensor that is the output of
    the node saving it, keeping the tensor itself would tie the node to itself through
    the tensor's ``grad_fn``, a reference cycle that no garbage collection breaks (the
    ``saved_tensors_hooks`` documentation warns about it).
    """

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach()


class SavedTensorMeter:
    """Tracks the tensors saved for backward while active, except the given parameters."""

    def __init__(self, parameters) -> None:
        self.parameters = {p.untyped_storage().data_ptr() for p in parameters}
        self.live = weakref.WeakSet()

    def pack(self, tensor: torch.Tensor) -> Packed:
        packed = Packed(tensor)
        if tensor.untyped_storage().data_ptr() not in self.parameters:
            self.live.add(packed)
        return packed

    def unpack(self, packed: Packed) -> torch.Tensor:
        return packed.tensor

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def bytes_held(self) -> int:
        storages = {p.tensor.untyped_storage().data_ptr(): p.tensor.untyped_storage().nbytes() for p in self.live}
        return sum(storages.values())


def count_nodes(log: list) -> int:
    seen = set()
    stack = [entry.grad_fn for entry in log if isinstance(entry, torch.Tensor)]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def run(loop: str, logger) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh(), torch.nn.Linear(WIDTH, 1))
    meter = SavedTensorMeter(model.parameters())
    log = []
    for _ in range(BATCHES):
        x, y = torch.randn(BATCH, WIDTH), torch.randn(BATCH, 1)
        with meter.hooks():
            loss = F.mse_loss(model(x), y)
        if loop == "train":
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
        log.append(logger(loss))
        del x, y, loss
    return {"graph nodes": count_nodes(log), "saved tensors": len(meter.live), "saved bytes": meter.bytes_held()}


def main() -> None:
    print(f"{'loop':<6} {'logged as':<14} {'graph nodes':>11} {'saved tensors':>13} {'saved bytes':>11}")
    for loop in ("train", "eval"):
        for name, logger in LOGGERS.items():
            row = run(loop, logger)
            print(f"{loop:<6} {name:<14} {row['graph nodes']:>11} {row['saved tensors']:>13} {row['saved bytes']:>11}")


if __name__ == "__main__":
    main()
