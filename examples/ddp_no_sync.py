"""Gradient accumulation under DistributedDataParallel, with and without ``no_sync()``, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on
the CPU, train the same small model for two optimizer steps of four micro-batches each,
the loss of each micro-batch divided by four, in four setups:

- every micro-batch run as usual, so that every backward pass all-reduces;
- the first three micro-batches of each step run inside ``ddp.no_sync()``, the last one
  outside it;
- the same, but with only the backward passes inside ``no_sync()`` and the forward passes
  outside it;
- every micro-batch inside ``no_sync()``.

A comm hook counts the all-reduces of each micro-batch. Each process sends what it saw
back to the parent through a queue, and the parent prints one report, the same on every
run: the all-reduces per micro-batch, whether the two processes hold the same weights at
the end, and whether rank 0's weights match, up to rounding, the first setup's and those
of one process that trains on all the data of both processes at once.
"""

import os
import socket
from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 2
ACCUM = 4
BATCH = 2  # samples per micro-batch and process


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def data(rank):
    """The micro-batches of one process: different on each rank, the same on every run."""
    generator = torch.Generator().manual_seed(1 + rank)
    return [(torch.randn(BATCH, 4, generator=generator), torch.randn(BATCH, 1, generator=generator))
            for _ in range(STEPS * ACCUM)]


def train(rank, sync):
    """Train with DDP; ``sync`` names which micro-batches run inside ``no_sync()``."""
    model = make_model()
    reduced = []  # all-reduces started during each micro-batch

    def count(state, bucket):
        reduced[-1] += 1
        return allreduce_hook(state, bucket)

    ddp = DDP(model)
    ddp.register_comm_hook(None, count)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    batches = iter(data(rank))
    for _ in range(STEPS):
        optimizer.zero_grad()
        for micro in range(ACCUM):
            x, y = next(batches)
            reduced.append(0)
            local = sync == "never" or (sync != "every" and micro < ACCUM - 1)
            if sync == "backward only":
                loss = nn.functional.mse_loss(ddp(x), y) / ACCUM
                with ddp.no_sync() if local else nullcontext():
                    loss.backward()
            else:
                with ddp.no_sync() if local else nullcontext():
                    loss = nn.functional.mse_loss(ddp(x), y) / ACCUM
                    loss.backward()
        optimizer.step()
    return {"reduced": reduced, "weights": [p.tolist() for p in model.parameters()]}


def one_process():
    """The same training in one process, on each step's micro-batches of both ranks at once."""
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [data(rank) for rank in range(WORLD_SIZE)]
    for step in range(STEPS):
        chunk = [b for rank in batches for b in rank[step * ACCUM:(step + 1) * ACCUM]]
        x = torch.cat([x for x, _ in chunk])
        y = torch.cat([y for _, y in chunk])
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return [p.tolist() for p in model.parameters()]


SETUPS = {
    "without no_sync": "every",
    "no_sync for all but the last": "all but the last",
    "no_sync around backward only": "backward only",
    "no_sync for every micro-batch": "never",
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
        for name, sync in SETUPS.items():
            results.put((rank, name, train(rank, sync)))
            dist.barrier()
        if rank == 0:
            results.put((rank, "one process", {"weights": one_process()}))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close(a, b):
    """Whether two lists of weights are equal up to rounding, computed on the CPU."""
    return all(torch.allclose(torch.tensor(p, device="cpu"), torch.tensor(q, device="cpu")) for p, q in zip(a, b))


def report(rows):
    first = rows[0]["without no_sync"]["weights"]
    reference = rows[0]["one process"]["weights"]
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        steps = [row["reduced"][i:i + ACCUM] for i in range(0, STEPS * ACCUM, ACCUM)]
        print(f"{name}:")
        print("  all-reduces per micro-batch:", " | ".join(" ".join(map(str, s)) for s in steps))
        print("  same weights on both ranks:", row["weights"] == other["weights"])
        if name != "without no_sync":
            print("  allclose to without no_sync:", close(row["weights"], first))
        print("  allclose to one process:", close(row["weights"], reference))


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
