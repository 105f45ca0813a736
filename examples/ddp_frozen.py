"""Frozen and unused parameters under DistributedDataParallel, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on
the CPU, train the same small model for a few steps in each of nine setups. Each rank
seeds its model with its own rank, so the ranks start from different weights until DDP's
constructor copies rank 0's weights to the other:

- the first layer frozen *before* the model is wrapped in DDP;
- the same layer frozen *after* wrapping, with the default ``find_unused_parameters=False``
  and with ``find_unused_parameters=True``;
- the layer frozen before wrapping and unfrozen after the first step, once in place and
  once followed by wrapping the model in a new DDP;
- two heads used in turn, one per step, with the default, with
  ``find_unused_parameters=True`` and with ``static_graph=True``;
- a head that is never used, with ``static_graph=True``.

A comm hook counts the gradient elements each step all-reduces. Each process sends what
it saw back to the parent through a queue, and the parent prints one report, the same on
every run: whether the two processes held the same weights before and right after
wrapping, the first line of any error (wrapped) and the line that names the parameters
which got no gradient, the elements all-reduced in each step, and whether the two
processes still hold the same weights at the end.
"""

import os
import socket
import textwrap
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 3


class Net(nn.Module):
    """A body and two heads: ``forward(x)`` uses both, ``forward(x, head)`` only one."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.heads = nn.ModuleList([nn.Linear(4, 1), nn.Linear(4, 1)])

    def forward(self, x, head=None):
        h = torch.relu(self.body(x))
        if head is None:
            return self.heads[0](h) + self.heads[1](h)
        return self.heads[head](h)


def train(rank, freeze="none", unfreeze_at=None, rewrap=False, alternate=False, head=None,
          **ddp_options):
    """Train a fresh Net for STEPS steps; return what this rank saw."""
    torch.manual_seed(rank)  # different initial weights on each rank
    model = Net()
    if freeze == "before":
        model.body.requires_grad_(False)
    initial = weights(model)
    reduced = []  # how many gradient elements were all-reduced in each step

    def count(state, bucket):
        reduced[-1] += sum(p.numel() for p in bucket.parameters())
        return allreduce_hook(state, bucket)

    ddp = DDP(model, **ddp_options)  # broadcasts rank 0's weights to the other ranks
    wrapped = weights(model)
    ddp.register_comm_hook(None, count)
    if freeze == "after":
        model.body.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in ddp.parameters() if p.requires_grad], lr=0.1)
    body_before = model.body.weight.detach().clone()
    torch.manual_seed(1 + rank)  # different data on each rank
    for step in range(STEPS):
        if step == unfreeze_at:
            model.body.requires_grad_(True)
            optimizer.add_param_group({"params": list(model.body.parameters())})
            if rewrap:  # a new DDP registers the body and broadcasts rank 0's weights
                ddp = DDP(model, **ddp_options)
                ddp.register_comm_hook(None, count)
        reduced.append(0)
        x = torch.randn(8, 4)
        try:
            loss = ddp(x, head=step % 2 if alternate else head).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
        except RuntimeError as error:
            lines = str(error).splitlines()
            return {"error": (step, lines[0], [line for line in lines if "Parameter indices" in line]),
                    "reduced": reduced[:-1], "initial": initial, "wrapped": wrapped, "weights": weights(model)}
        optimizer.step()
    return {"body moved": not torch.equal(body_before, model.body.weight),
            "body grad": model.body.weight.grad is not None,
            "reduced": reduced, "initial": initial, "wrapped": wrapped, "weights": weights(model)}


def weights(model):
    """The body's and the heads' weights, to compare across ranks in the parent.

    Lists, since a tensor would travel through shared memory that ends with this process.
    """
    return {part: [p.tolist() for p in getattr(model, part).parameters()] for part in ("body", "heads")}


SETUPS = {
    "frozen before wrapping": dict(freeze="before"),
    "frozen after wrapping": dict(freeze="after"),
    "frozen after wrapping, find_unused_parameters=True": dict(freeze="after", find_unused_parameters=True),
    "unfrozen after wrapping": dict(freeze="before", unfreeze_at=1),
    "re-wrapped after unfreezing": dict(freeze="before", unfreeze_at=1, rewrap=True),
    "heads in turn": dict(alternate=True),
    "heads in turn, find_unused_parameters=True": dict(alternate=True, find_unused_parameters=True),
    "heads in turn, static_graph=True": dict(alternate=True, static_graph=True),
    "head 1 never used, static_graph=True": dict(head=0, static_graph=True),
}


def worker(rank, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    # gloo reduces CPU tensors; a book built for CUDA sets another default device in the
    # process this one was forked from, and a forked child cannot use CUDA anyway.
    torch.set_default_device("cpu")
    # Some releases' gloo prints connection messages from both processes, interleaved at
    # random; what this program reports travels through the queue, so the workers' own
    # output goes nowhere (an exception still reaches the parent through start_processes).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    try:
        for name, setup in SETUPS.items():
            results.put((rank, name, train(rank, **setup)))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def report(rows):
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        before, after = (row[key] == other[key] for key in ("initial", "wrapped"))
        print(f"  same weights on both ranks: before DDP() {before}, right after {after}")
        if "error" in row:
            step, message, indices = row["error"]
            same = other["error"] == (step, message, [line.replace("rank 0", "rank 1") for line in indices])
            print(f"  RuntimeError at step {step}, {'the same on both ranks' if same else 'ranks differ'}:")
            for line in textwrap.wrap(message, 84) + ["..."] * bool(indices) + indices:
                print(f"    {line}")
        else:
            print(f"  trained {STEPS} steps; body moved: {row['body moved']}; body has a grad: {row['body grad']}")
        print("  gradient elements all-reduced in each step:", " ".join(map(str, row["reduced"])) or "none")
        same = {part: row["weights"][part] == other["weights"][part] for part in ("body", "heads")}
        print(f"  same weights on both ranks at the end: body {same['body']}, heads {same['heads']}")


def main():
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(free_port(), results), nprocs=WORLD_SIZE, start_method="fork")
    rows = {0: {}, 1: {}}
    while not results.empty():
        rank, name, row = results.get()
        rows[rank][name] = row
    report(rows)


if __name__ == "__main__":
    main()
