"""Parameter groups without weight decay under FSDP1 and FSDP2, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on the
CPU, train a small model, a linear layer, a ``LayerNorm`` and another linear layer, for three
steps with AdamW, each on its own half of every batch. The weight matrices go in a group with
weight decay and the biases and the norm's weight in a group without, picked in one of three
ways:

- ``early``: by shape on the unwrapped model, the optimizer built before wrapping;
- ``shape``: by shape (``ndim``) on the wrapped model's parameters, the optimizer built after;
- ``names``: by name on the unwrapped model, the optimizer built after wrapping over the
  wrapped model's parameters of those names.

FSDP1 (``FullyShardedDataParallel``) wraps the model with its default flat parameters and
with ``use_orig_params=True``, FSDP2 (``fully_shard``) shards it. Each process sends back what
it saw, and the parent prints one report, the same on every run: for each setup any warning,
the parameters after wrapping (their number and dimensions, and whether they are the objects the
model had before), how many tensors each group holds, and after the three steps whether the
weights moved and whether they are those of one process that trains an unsharded copy, with
the right groups, on both halves of every batch.
"""

import os
import socket
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

WORLD_SIZE = 2
STEPS = 3


def fsdp1(model, **options):
    # Without device_id, FSDP1 looks for an accelerator and refuses to run without one.
    return FSDP(model, device_id=torch.device("cpu"), **options)


def fsdp2(model):
    return fully_shard(model, mesh=init_device_mesh("cpu", (WORLD_SIZE,)))


SETUPS = {
    "FSDP1, optimizer built before wrapping": dict(wrap=fsdp1, pick="early"),
    "FSDP1, groups by shape after wrapping": dict(wrap=fsdp1, pick="shape"),
    "FSDP1, groups by name before wrapping": dict(wrap=fsdp1, pick="names"),
    "FSDP1, use_orig_params=True, groups by shape after wrapping": dict(
        wrap=lambda m: fsdp1(m, use_orig_params=True), pick="shape"),
    "FSDP1, use_orig_params=True, groups by name before wrapping": dict(
        wrap=lambda m: fsdp1(m, use_orig_params=True), pick="names"),
    "FSDP2, groups by shape after fully_shard": dict(wrap=fsdp2, pick="shape"),
}


def make_model():
    torch.manual_seed(0)  # the same initial weights on both ranks
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))


def batches():
    torch.manual_seed(1)
    return torch.randn(STEPS, WORLD_SIZE, 8, 4)  # each rank trains on its own half


def clean(name):
    return name.replace("_fsdp_wrapped_module.", "")


def adamw(decay, no_decay):
    return torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=0.1, weight_decay=0.5)


def full_weights(model):
    """The full (unsharded) weights, as lists."""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return full_weights(model.module)
    return [(p.full_tensor() if isinstance(p, DTensor) else p).tolist() for p in model.parameters()]


def one_process():
    """An unsharded copy with the right groups, trained on both halves of every batch."""
    model = make_model()
    optimizer = adamw([p for p in model.parameters() if p.ndim >= 2],
                      [p for p in model.parameters() if p.ndim < 2])
    for batch in batches():
        optimizer.zero_grad()
        model(batch.flatten(0, 1)).pow(2).mean().backward()
        optimizer.step()
    return full_weights(model)


def train(rank, wrap, pick):
    """Wrap a fresh model, group its parameters as ``pick`` says and train it: what
    this rank saw."""
    model = make_model()
    before = list(model.parameters())
    no_decay_names = {name for name, p in model.named_parameters() if p.ndim < 2}
    if pick == "early":
        optimizer = adamw([p for p in before if p.ndim >= 2],
                          [p for p in before if p.ndim < 2])
    model = wrap(model)
    after = list(model.named_parameters())
    if pick == "shape":
        optimizer = adamw([p for _, p in after if p.ndim >= 2],
                          [p for _, p in after if p.ndim < 2])
    if pick == "names":
        optimizer = adamw([p for name, p in after if clean(name) not in no_decay_names],
                          [p for name, p in after if clean(name) in no_decay_names])
    initial = full_weights(model)
    for batch in batches():
        optimizer.zero_grad()
        model(batch[rank]).pow(2).mean().backward()
        optimizer.step()
    return {"ndim": [p.ndim for _, p in after],
            "same objects": all(any(p is q for _, q in after) for p in before),
            "groups": [len(group["params"]) for group in optimizer.param_groups],
            "initial": initial, "weights": full_weights(model)}


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
        for name, setup in SETUPS.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                row = train(rank, **setup)
            row["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
            results.put((rank, name, row))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close(a, b):
    return all(torch.allclose(torch.tensor(x), torch.tensor(y), atol=1e-6) for x, y in zip(a, b))


def report(rows, reference):
    ndim = [len(torch.tensor(w).shape) for w in reference]
    print(f"one process: parameters {len(ndim)}, ndim {ndim}")
    for name in SETUPS:
        row = rows[0][name]
        print(f"{name}:")
        for warning in sorted(set(row["warnings"] + rows[1][name]["warnings"])):
            print(f"  {warning.splitlines()[0]}")
        print(f"  after wrapping: parameters {len(row['ndim'])}, ndim {row['ndim']};"
              f" the same objects: {row['same objects']}")
        print(f"  tensors in the decay group: {row['groups'][0]}, in the no-decay group: {row['groups'][1]}")
        moved = not close(row["initial"], row["weights"])
        print(f"  after {STEPS} steps: moved {moved}, as one process"
              f" {close(row['weights'], reference) and close(rows[1][name]['weights'], reference)}")


def main():
    reference = one_process()
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(free_port(), results), nprocs=WORLD_SIZE, start_method="fork")
    rows = {0: {}, 1: {}}
    while not results.empty():
        rank, name, row = results.get()
        rows[rank][name] = row
    report(rows, reference)


if __name__ == "__main__":
    main()
