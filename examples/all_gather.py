"""A loss over embeddings gathered from every process, with and without a gradient back.

Contrastive losses (CLIP, SimCLR) compare each process's embeddings with those of every
process, so each process gathers the others' first. Two processes, started with
``torch.multiprocessing`` and joined by the gloo backend on the CPU, embed their own batch
with the same encoder and compute such a loss in four setups:

- ``dist.all_gather`` into a list: the gathered tensors are plain copies, without a graph;
- the same, with this process's own slot replaced by its embeddings, which keep theirs;
- ``torch.distributed.nn.functional.all_gather``, which sends the gradient back to the
  process each embedding came from;
- ``all_gather_single`` of ``torch.distributed._functional_collectives``, which recent
  releases' deprecation warning for the one above names instead (a module whose name says
  it is private; older releases lack the function).

After each backward pass the encoder's gradients are summed over the processes, and the
parent compares the result with the gradient one process gets from both batches at once.
Each process sends what it saw, warnings included, back to the parent through a queue, and
the parent prints one report, the same on every run.
"""

import os
import socket
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as functional_collectives
import torch.distributed.nn.functional as dist_fn
import torch.multiprocessing as mp
from torch import nn

WORLD_SIZE = 2
BATCH = 3  # samples per process


def make_encoder():
    torch.manual_seed(0)
    return nn.Linear(4, 2)


def batch(rank):
    """Each process's batch: different on each rank, the same on every run."""
    return torch.randn(BATCH, 4, generator=torch.Generator().manual_seed(1 + rank))


def contrastive(mine, everyone, rank):
    """Cross-entropy of each of this process's embeddings against every embedding, its own
    position the right answer (the shape of a CLIP or SimCLR loss)."""
    logits = mine @ everyone.T
    targets = torch.arange(BATCH) + rank * BATCH
    return nn.functional.cross_entropy(logits, targets, reduction="sum")


def gathered(z, rank, setup):
    if setup == "torch.distributed.nn.functional.all_gather":
        return torch.cat(dist_fn.all_gather(z))
    if setup.startswith("_functional_collectives."):
        gather = getattr(functional_collectives, setup.split(".")[1])
        return gather(z, 0, dist.group.WORLD).wait()
    copies = [torch.empty_like(z) for _ in range(WORLD_SIZE)]
    dist.all_gather(copies, z)
    if setup == "dist.all_gather, own slot replaced":
        copies[rank] = z
    return torch.cat(copies)


SETUPS = ["dist.all_gather", "dist.all_gather, own slot replaced", "torch.distributed.nn.functional.all_gather",
          "_functional_collectives.all_gather_single"]


def run(rank, setup):
    if setup.startswith("_functional_collectives.") and not hasattr(functional_collectives, setup.split(".")[1]):
        return {"missing": True}
    encoder = make_encoder()
    z = encoder(batch(rank))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        everyone = gathered(z, rank, setup)
    row = {"gathered requires grad": everyone.requires_grad, "warnings": [str(w.message) for w in caught]}
    contrastive(z, everyone, rank).backward()
    grads = [p.grad for p in encoder.parameters()]
    for grad in grads:
        dist.all_reduce(grad)  # summed over the processes, as the loss is
    row["grads"] = [g.tolist() for g in grads]
    return row


def one_process():
    """Both batches in one process: the loss summed over both ranks' terms."""
    encoder = make_encoder()
    z = encoder(torch.cat([batch(rank) for rank in range(WORLD_SIZE)]))
    loss = sum(contrastive(z[r * BATCH:(r + 1) * BATCH], z, r) for r in range(WORLD_SIZE))
    loss.backward()
    return [p.grad.tolist() for p in encoder.parameters()]


def worker(rank, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    # gloo works on CPU tensors; a book built for CUDA sets another default device in the
    # process this one was forked from, and a forked child cannot use CUDA anyway.
    torch.set_default_device("cpu")
    # Some releases' gloo prints connection messages from both processes, interleaved at
    # random: what this program reports travels through the queue.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    for setup in SETUPS:
        results.put((rank, setup, run(rank, setup)))
        dist.barrier()
    # No destroy_process_group(): under torch 2.7 it hung in about one run of ten here, with
    # the other process gone. The group ends with the process.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close(a, b):
    """Whether two lists of gradients are equal up to rounding, computed on the CPU."""
    return all(torch.allclose(torch.tensor(p, device="cpu"), torch.tensor(q, device="cpu")) for p, q in zip(a, b))


def report(rows, reference):
    for setup in SETUPS:
        row = rows[0][setup]
        print(f"{setup}:")
        if row.get("missing"):
            print("  not in this release of torch")
            continue
        for message in row["warnings"]:
            print("  warning:", message)
        print("  gathered tensor requires grad:", row["gathered requires grad"])
        print("  same gradient on both ranks:", row["grads"] == rows[1][setup]["grads"])
        print("  allclose to one process:", close(row["grads"], reference))


def main():
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(free_port(), results), nprocs=WORLD_SIZE, start_method="fork")
    rows = {0: {}, 1: {}}
    while not results.empty():
        rank, setup, row = results.get()
        rows[rank][setup] = row
    report(rows, one_process())


if __name__ == "__main__":
    main()
