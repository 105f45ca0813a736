"""Saving and resuming an FSDP2 (``fully_shard``) run with a frozen body, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on
the CPU, train the same small model, a frozen ``body`` and a trainable ``head``, with Adam
for three steps, and save the sharded model and optimizer with ``torch.distributed.checkpoint``
(DCP) into a temporary directory, through ``get_model_state_dict`` and
``get_optimizer_state_dict``. Then a fresh model and optimizer, built from other initial
weights, load the checkpoint with ``dcp.load``, ``set_model_state_dict`` and
``set_optimizer_state_dict``, and train three steps more, in five setups: with the body still
frozen, and with the body unfrozen, loaded strictly, with ``allow_partial_load=True``, and
with the body's entries dropped from what is loaded, without and with ``strict=False``.

Each process sends back what it saw, and the parent prints one report, the same on every
run: which keys the saved optimizer state dict holds, next to the plain
``optimizer.state_dict()``; for each resumed setup any error, the Adam state (its step
count) that ``get_optimizer_state_dict`` made for the fresh optimizer, the state after
loading and after the three steps, and whether the final weights are those of a run that
was never interrupted: six steps with the body frozen, or, with the body unfrozen, one that
unfreezes it after the third step.
"""

import os
import socket
import tempfile
import textwrap
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.checkpoint import DefaultLoadPlanner
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

WORLD_SIZE = 2
STEPS = 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


SETUPS = {
    "resumed, body frozen": dict(frozen=True),
    "resumed, body unfrozen": dict(),
    "resumed, body unfrozen, allow_partial_load=True": dict(
        planner=DefaultLoadPlanner(allow_partial_load=True)),
    "resumed, body unfrozen, body entries dropped": dict(drop="body"),
    "resumed, body unfrozen, body entries dropped, strict=False": dict(
        drop="body", options=StateDictOptions(strict=False)),
}


def build(seed, frozen):
    """A Net from seed, its body frozen or not, sharded by fully_shard, and its Adam."""
    torch.manual_seed(seed)
    model = Net()
    model.body.requires_grad_(not frozen)
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    fully_shard(model.body, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.Adam(model.parameters(), lr=0.1)


def train(model, optimizer, batches):
    for batch in batches:
        optimizer.zero_grad()
        model(batch).pow(2).mean().backward()
        optimizer.step()


def full_weights(model):
    return {name: p.full_tensor() for name, p in model.named_parameters()}


def steps(model, optimizer):
    """Adam's step count for each parameter, by name, or None where it keeps no state."""
    return {name: int(optimizer.state[p]["step"]) if p in optimizer.state else None
            for name, p in model.named_parameters()}


def resume(directory, batches, reference, frozen=False, drop=None, planner=None, options=None):
    model, optimizer = build(seed=5, frozen=frozen)
    state_dict = {"model": get_model_state_dict(model),
                  "optim": get_optimizer_state_dict(model, optimizer)}
    row = {"made": steps(model, optimizer)}
    if drop:
        state = state_dict["optim"]["state"]
        state_dict["optim"]["state"] = {k: v for k, v in state.items() if not k.startswith(drop)}
    try:
        dcp.load(state_dict, checkpoint_id=directory, planner=planner)
        set_model_state_dict(model, state_dict["model"])
        set_optimizer_state_dict(model, optimizer, state_dict["optim"], options=options)
    except (RuntimeError, KeyError, CheckpointException) as error:
        if isinstance(error, CheckpointException):
            # DCP gathers the error of every rank into one exception
            row["ranks"] = sorted(error.failures)
            error = error.failures[0][0]
        row["error"] = f"{type(error).__name__}: {error}"
        return row
    row["loaded"] = steps(model, optimizer)
    train(model, optimizer, batches)
    row["trained"] = steps(model, optimizer)
    after = full_weights(model)
    row["as uninterrupted"] = all(torch.allclose(after[n], w) for n, w in reference.items())
    return row


def run(rank, directory):
    torch.manual_seed(1)
    data = torch.randn(2 * STEPS, WORLD_SIZE, 8, 4)[:, rank]  # each rank trains on its own part
    first, last = data[:STEPS], data[STEPS:]
    references = {}
    for frozen in (True, False):
        model, optimizer = build(seed=0, frozen=True)
        train(model, optimizer, first)
        model.body.requires_grad_(not frozen)
        train(model, optimizer, last)
        references[frozen] = full_weights(model)

    model, optimizer = build(seed=0, frozen=True)
    train(model, optimizer, first)
    optim = get_optimizer_state_dict(model, optimizer)
    dcp.save({"model": get_model_state_dict(model), "optim": optim}, checkpoint_id=directory)
    plain = optimizer.state_dict()
    rows = {"saved": {
        "model": [type(v).__name__ for v in get_model_state_dict(model).values()],
        "state": list(optim["state"]),
        "entries": sorted({key for s in optim["state"].values() for key in s}),
        "params": optim["param_groups"][0]["params"],
        "plain state": list(plain["state"]),
        "plain params": plain["param_groups"][0]["params"],
    }}
    for name, setup in SETUPS.items():
        rows[name] = resume(directory, last, references[setup.get("frozen", False)], **setup)
        dist.barrier()
    return rows


def worker(rank, port, directory, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    # gloo reduces CPU tensors; a book built for CUDA sets another default device in the
    # process this one was forked from, and a forked child cannot use CUDA anyway.
    torch.set_default_device("cpu")
    # What this program reports travels through the queue, so the workers' own output goes
    # nowhere (an exception still reaches the parent through start_processes).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = run(rank, directory)
        rows["saved"]["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        results.put((rank, rows))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="    "):
    """The first line of a message wrapped, and its other lines as they are."""
    first, *rest = message.splitlines()
    for line in textwrap.wrap(first, 56) + rest:
        print(indent + line)


def by_module(counts):
    """Step counts in words, one part per module where all its parameters agree."""
    parts = []
    for module in ("body", "head"):
        mine = {name: n for name, n in counts.items() if name.startswith(module)}
        if len(set(mine.values())) == 1:
            n = next(iter(mine.values()))
            parts.append(f"{module} {'none' if n is None else f'step {n}'}")
        else:
            parts += [f"{name} {'none' if n is None else f'step {n}'}" for name, n in mine.items()]
    return "; ".join(parts)


def report(rows):
    saved = rows[0]["saved"]
    print(f"saved after {STEPS} steps, body frozen:")
    print(f"  model state dict: {len(saved['model'])} tensors,"
          f" {' '.join(sorted(set(saved['model'])))}")
    print(f"  optim state keys: {', '.join(saved['state'])}")
    print(f"  entries: {', '.join(saved['entries'])}")
    print(f"  group params: {len(saved['params'])} names")
    show(", ".join(saved["params"]))
    print(f"  plain state keys: {saved['plain state']}")
    print(f"  plain group params: {saved['plain params']}")
    print(f"  warnings: {len(saved['warnings']) or 'none'}")
    for warning in saved["warnings"]:
        show(warning)
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        print(f"  made before loading: {by_module(row['made'])}")
        if "error" in row:
            if "ranks" in row:
                print(f"  CheckpointException, failed ranks {row['ranks']}:")
            else:
                print(f"  raised {'on both ranks' if other.get('error') == row['error'] else 'on rank 0'}:")
            show(row["error"])
            continue
        print(f"  after loading: {by_module(row['loaded'])}")
        print(f"  after {STEPS} more steps: {by_module(row['trained'])}")
        print(f"  as uninterrupted: {row['as uninterrupted'] and other['as uninterrupted']}")


def main():
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    with tempfile.TemporaryDirectory() as directory:
        mp.start_processes(worker, args=(free_port(), directory, results), nprocs=WORLD_SIZE,
                           start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows)


if __name__ == "__main__":
    main()
