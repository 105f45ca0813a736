"""Activation checkpointing with ``checkpoint_wrapper`` and FSDP2 (``fully_shard``), run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on the
CPU, run one training step of a small model, two residual blocks in a ``ModuleList`` and a
linear ``out`` layer, sharded by ``fully_shard`` block by block and then as a whole. Each
block is checkpointed with ``apply_activation_checkpointing``, in three orders: wrapped
first, then each wrapper sharded; wrapped first, then each block found by its class (inside
its wrapper) sharded; sharded first, then wrapped. A fourth setup shards without
checkpointing, as the reference.

A wrapper around the all-gather function FSDP calls counts the all-gathers of the step, and
the blocks count their forward calls. Each process sends back what it saw, and the parent
prints one report, the same on every run: per setup, what ``layers[0]`` is, the calls and
all-gathers of the step, the names ``named_parameters()`` gives and the keys of
``get_model_state_dict``, and whether the gradients are those of the reference.
"""

import os
import socket
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

WORLD_SIZE = 2
# The function FSDP calls for its all-gathers: newer releases renamed it.
ALL_GATHER = "all_gather_single" if hasattr(dist, "all_gather_single") else "all_gather_into_tensor"
calls = []  # one entry per forward call of a Block


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        calls.append(1)
        return x + self.norm(self.lin(x)).relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(2))
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


def is_block(module):
    return isinstance(module, Block)


def prepare(order, mesh):
    """A Net, checkpointed and sharded in the given order."""
    torch.manual_seed(0)
    model = Net()
    if order == "wrap, then shard the wrappers":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=is_block)
        for layer in model.layers:  # each layer is now a CheckpointWrapper
            fully_shard(layer, mesh=mesh)
    elif order == "wrap, then shard the blocks inside":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=is_block)
        for module in model.modules():  # finds each Block inside its wrapper
            if is_block(module):
                fully_shard(module, mesh=mesh)
    else:  # "shard only" or "shard, then wrap"
        for layer in model.layers:
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if order == "shard, then wrap":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=is_block)
    return model


def step(model, batch):
    """One forward and backward pass; the block calls and all-gathers it made."""
    gathered = []
    original = getattr(dist, ALL_GATHER)

    def count(*args, **kwargs):
        gathered.append(1)
        return original(*args, **kwargs)

    calls.clear()
    setattr(dist, ALL_GATHER, count)
    try:
        model(batch).pow(2).mean().backward()
    finally:
        setattr(dist, ALL_GATHER, original)
    return len(calls), len(gathered)


def describe(module):
    """A module's class, and that of the module it wraps, if any."""
    inner = getattr(module, "_checkpoint_wrapped_module", None)
    return type(module).__name__ + (f" around {type(inner).__name__}" if inner is not None else "")


def run(rank):
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    torch.manual_seed(1)
    batch = torch.randn(WORLD_SIZE, 8, 4)[rank]  # each rank its own half of the batch
    rows, reference = {}, None
    for order in ["shard only", "wrap, then shard the wrappers", "wrap, then shard the blocks inside",
                  "shard, then wrap"]:
        model = prepare(order, mesh)
        block_calls, all_gathers = step(model, batch)
        names = [name for name, _ in model.named_parameters()]
        grads = [p.grad.full_tensor() for p in model.parameters()]
        if reference is None:
            reference = grads
        rows[order] = {
            "layers[0]": describe(model.layers[0]),
            "calls": block_calls, "all-gathers": all_gathers,
            "names": names,
            "keys": list(get_model_state_dict(model)),
            "same grads": all(torch.equal(g, r) for g, r in zip(grads, reference)),
        }
    return rows


def worker(rank, port, results):
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
        results.put((rank, run(rank)))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def report(rows):
    plain = [name for name, _ in Net().named_parameters()]
    for order, row in rows[0].items():
        other = rows[1][order]
        counts = f"block calls {row['calls']}, all-gathers {row['all-gathers']}"
        if (row["calls"], row["all-gathers"]) == (other["calls"], other["all-gathers"]):
            counts += ", on each rank"
        else:
            counts += f" on rank 0; {other['calls']} and {other['all-gathers']} on rank 1"
        print(f"{order}:")
        print(f"  layers[0]: {row['layers[0]']}")
        print(f"  in the step: {counts}")
        print(f"  names of named_parameters() changed: {row['names'] != plain}")
        print(f"    first: {row['names'][0]}")
        print(f"  keys of get_model_state_dict() changed: {row['keys'] != plain}")
        print(f"  gradients as with shard only: {row['same grads'] and other['same grads']}")


def main():
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(free_port(), results), nprocs=WORLD_SIZE, start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows)


if __name__ == "__main__":
    main()
