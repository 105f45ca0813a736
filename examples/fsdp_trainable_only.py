"""Saving only the trainable state of an FSDP2 (``fully_shard``) run with a frozen body.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on the
CPU, train a small model, a frozen ``body`` and a trainable ``head``, with Adam for three
steps, and save it twice with ``torch.distributed.checkpoint`` (DCP), each time into a
temporary directory: everything, and only the trainable state, through
``get_model_state_dict`` and ``get_optimizer_state_dict`` with
``StateDictOptions(ignore_frozen_params=True)``. Then a fresh model, whose body comes from the
same pretrained weights and whose head is new, loads the trainable-only checkpoint in four
setups and trains three steps more: through a state dict made with the same option, with
``set_model_state_dict``'s defaults and with ``strict=False``, and through the fresh model's
full state dict, without and with ``allow_partial_load=True``.

Each process sends back what it saw, and the parent prints one report, the same on every
run: the keys of each checkpoint, how many tensors and numbers each process's state dicts
hold, and how many bytes the files take, and the numbers among them; for each setup any
error, which keys ``set_model_state_dict`` reported missing, whether the head holds the saved
weights and the body its pretrained ones, and whether three more steps give the weights of
six uninterrupted ones.
"""

import os
import socket
import tempfile
import textwrap
import warnings
from datetime import timedelta
from pathlib import Path

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
from torch.distributed.tensor import DTensor

WORLD_SIZE = 2
STEPS = 3
TRAINABLE = StateDictOptions(ignore_frozen_params=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


SETUPS = {
    "load trainable keys, set_model_state_dict's defaults": dict(),
    "load trainable keys, strict=False": dict(options=StateDictOptions(strict=False)),
    "load all keys": dict(full=True),
    "load all keys, allow_partial_load=True": dict(
        full=True, planner=DefaultLoadPlanner(allow_partial_load=True)),
}


def build(head_seed=None):
    """A Net with the pretrained body (seed 0), frozen, sharded by fully_shard, and its Adam.

    With head_seed, the head is initialised afresh from that seed."""
    torch.manual_seed(0)
    model = Net()
    if head_seed is not None:
        torch.manual_seed(head_seed)
        model.head.reset_parameters()
    model.body.requires_grad_(False)
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


def tensors(state_dict):
    """The tensors of a (nested) state dict, a DTensor as it is."""
    if isinstance(state_dict, dict):
        return [t for value in state_dict.values() for t in tensors(value)]
    if isinstance(state_dict, list):
        return [t for value in state_dict for t in tensors(value)]
    if isinstance(state_dict, torch.Tensor):
        return [state_dict]
    return []


def nbytes(held):
    return sum(t.numel() * t.element_size() for t in held)


def save(model, optimizer, directory, options=None):
    state_dict = {"model": get_model_state_dict(model, options=options),
                  "optim": get_optimizer_state_dict(model, optimizer, options=options)}
    dcp.save(state_dict, checkpoint_id=directory)
    held = tensors(state_dict)
    # This process holds its own shard of each DTensor, and the rest (Adam's step) whole, as
    # the other process does: DCP writes every process's shards, and a whole tensor once.
    shards = [t.to_local() for t in held if isinstance(t, DTensor)]
    whole = [t for t in held if not isinstance(t, DTensor)]
    return {"model": list(state_dict["model"]), "optim": list(state_dict["optim"]["state"]),
            "params": state_dict["optim"]["param_groups"][0]["params"],
            "tensors": len(held), "numbers": sum(t.numel() for t in shards + whole),
            "shard bytes": nbytes(shards), "whole bytes": nbytes(whole)}


def resume(directory, batches, reference, pretrained, full=False, planner=None, options=None):
    """Load the trainable-only checkpoint into a fresh model and train on."""
    model, optimizer = build(head_seed=5)
    state_dict = {"model": get_model_state_dict(model, options=None if full else TRAINABLE),
                  "optim": get_optimizer_state_dict(model, optimizer)}
    row = {}
    try:
        dcp.load(state_dict, checkpoint_id=directory, planner=planner)
        missing = set_model_state_dict(model, state_dict["model"], options=options).missing_keys
        set_optimizer_state_dict(model, optimizer, state_dict["optim"])
    except (RuntimeError, CheckpointException) as error:
        if isinstance(error, CheckpointException):
            # DCP gathers the error of every rank into one exception
            row["ranks"] = sorted(error.failures)
            error = error.failures[0][0]
        row["error"] = f"{type(error).__name__}: {error}"
        return row
    row["missing"] = missing
    weights = full_weights(model)
    row["head as saved"] = all(torch.equal(weights[n], w) for n, w in reference["saved"].items()
                               if n.startswith("head"))
    row["body as pretrained"] = all(torch.equal(weights[n], w) for n, w in pretrained.items()
                                    if n.startswith("body"))
    train(model, optimizer, batches)
    after = full_weights(model)
    row["as uninterrupted"] = all(torch.allclose(after[n], w) for n, w in reference["end"].items())
    return row


def run(rank, directories):
    torch.manual_seed(1)
    data = torch.randn(2 * STEPS, WORLD_SIZE, 8, 4)[:, rank]  # each rank trains on its own part
    first, last = data[:STEPS], data[STEPS:]

    model, optimizer = build()
    pretrained = full_weights(model)
    train(model, optimizer, first)
    reference = {"saved": full_weights(model)}
    rows = {"saved": {"everything": save(model, optimizer, directories["everything"]),
                      "trainable only": save(model, optimizer, directories["trainable only"],
                                             options=TRAINABLE)}}
    train(model, optimizer, last)
    reference["end"] = full_weights(model)
    dist.barrier()
    for name, directory in directories.items():
        rows["saved"][name]["bytes"] = sum(f.stat().st_size for f in Path(directory).iterdir())
    for name, setup in SETUPS.items():
        rows[name] = resume(directories["trainable only"], last, reference, pretrained, **setup)
        dist.barrier()
    return rows


def worker(rank, port, directories, results):
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
            rows = run(rank, directories)
        rows["saved"]["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        results.put((rank, rows))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="    "):
    """A message wrapped, line by line, without the tabs it indents lines with."""
    for line in message.splitlines():
        for part in textwrap.wrap(line.strip(), 60):
            print(indent + part)


def each_rank(value, other):
    return f"{value} on each rank" if value == other else f"{value} on rank 0, {other} on rank 1"


def report(rows):
    print(f"saved after {STEPS} steps, body frozen:")
    for name in ("everything", "trainable only"):
        saved, other = rows[0]["saved"][name], rows[1]["saved"][name]
        print(f"  {name}:")
        print(f"    model keys: {', '.join(saved['model'])}")
        print(f"    optimizer state keys: {', '.join(saved['optim'])}")
        print(f"    optimizer group params: {len(saved['params'])} names")
        print(f"    state dict tensors: {each_rank(saved['tensors'], other['tensors'])}")
        print(f"    numbers in them: {each_rank(saved['numbers'], other['numbers'])}")
        print(f"    files: {saved['bytes'] / 1000:.0f} kB, of which the numbers"
              f" {saved['shard bytes'] + other['shard bytes'] + saved['whole bytes']} bytes")
    warned = rows[0]["saved"]["warnings"]
    print(f"  warnings: {len(warned) or 'none'}")
    for warning in warned:
        show(warning)
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        if "error" in row:
            if "ranks" in row:
                print(f"  CheckpointException, failed ranks {row['ranks']}:")
            else:
                print(f"  raised {'on both ranks' if other.get('error') == row['error'] else 'on rank 0'}:")
            show(row["error"])
            continue
        print(f"  missing keys: {', '.join(row['missing']) or 'none'}")
        print(f"  head as saved: {row['head as saved'] and other['head as saved']};"
              f" body as pretrained: {row['body as pretrained'] and other['body as pretrained']}")
        print(f"  after {STEPS} more steps, as uninterrupted:"
              f" {row['as uninterrupted'] and other['as uninterrupted']}")


def main():
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    with tempfile.TemporaryDirectory() as everything, tempfile.TemporaryDirectory() as trainable:
        directories = {"everything": everything, "trainable only": trainable}
        mp.start_processes(worker, args=(free_port(), directories, results), nprocs=WORLD_SIZE,
                           start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows)


if __name__ == "__main__":
    main()
