"""Gradient clipping under FSDP1 and FSDP2, with a frozen body, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on the
CPU, take one step of SGD on a small model, a frozen ``body`` and a trainable ``head``, each
on its own half of a batch, and clip the gradients in between, in four setups:

- FSDP1 (``FullyShardedDataParallel``) with the body wrapped apart (flat parameters), clipped
  by ``torch.nn.utils.clip_grad_norm_(model.parameters(), ...)`` and by the wrapper's own
  ``model.clip_grad_norm_(...)``;
- the same FSDP1 wrapping with ``use_orig_params=True``, clipped by
  ``torch.nn.utils.clip_grad_norm_``;
- FSDP2 (``fully_shard``), clipped by ``torch.nn.utils.clip_grad_norm_``.

One process that trains an unsharded copy on the whole batch gives the true norm. Each
process sends back what it saw, and the parent prints one report, the same on every run: the
true norm and the factor by which clipping scales the gradients, then for each setup any
warning, the type of the total norm that the clipping call returned and its value on each
rank (a ``DTensor``'s through ``full_tensor()``), the factor by which each rank's own
gradients were scaled, whether the frozen parameters have no gradient on either rank, and
whether the weights after the step are those of the one process that clips and steps alike.
"""

import os
import socket
import textwrap
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.distributed.tensor import DTensor

WORLD_SIZE = 2
MAX_NORM = 0.1  # below the true norm, so that every correct setup clips


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x):
        return self.head(self.body(x))


def fsdp1(model, **options):
    # Without device_id, FSDP1 looks for an accelerator and refuses to run without one.
    return FSDP(model, device_id=torch.device("cpu"), **options)


def fsdp2(model):
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    fully_shard(model.body, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def body_apart(model, **options):
    return fsdp1(model, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}), **options)


def torch_clip(model):
    return nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)


def fsdp1_clip(model):
    return model.clip_grad_norm_(MAX_NORM)


SETUPS = {
    "FSDP1, nn.utils.clip_grad_norm_": dict(wrap=body_apart, clip=torch_clip),
    "FSDP1, model.clip_grad_norm_": dict(wrap=body_apart, clip=fsdp1_clip),
    "FSDP1, use_orig_params=True, nn.utils.clip_grad_norm_": dict(
        wrap=lambda m: body_apart(m, use_orig_params=True), clip=torch_clip),
    "FSDP2, nn.utils.clip_grad_norm_": dict(wrap=fsdp2, clip=torch_clip),
}


def make_model():
    torch.manual_seed(0)  # the same initial weights on both ranks
    model = Net()
    model.body.requires_grad_(False)
    return model


def batch():
    torch.manual_seed(1)
    return torch.randn(WORLD_SIZE, 8, 4)  # each rank trains on its own half


def clean(name):
    return name.replace("_fsdp_wrapped_module.", "")


def full_weights(model):
    """The full (unsharded) weights by original name, as lists."""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return full_weights(model.module)
    return {clean(name): (p.full_tensor() if isinstance(p, DTensor) else p).tolist()
            for name, p in model.named_parameters()}


def local_grads(model):
    """This rank's gradient elements, in one flat tensor (its shards, for a sharded model)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    grads = [g.to_local() if isinstance(g, DTensor) else g for g in grads]
    return torch.cat([g.flatten() for g in grads]) if grads else torch.zeros(0)


def scale(before, after):
    """The factor by which clipping scaled this rank's gradients, or None if it holds none."""
    return (after.norm() / before.norm()).item() if before.count_nonzero() else None


def one_process():
    """The unsharded model on the whole batch: the true norm, its scale, the weights after a step."""
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(batch().flatten(0, 1)).pow(2).mean().backward()
    before = local_grads(model)
    total = nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return total.item(), scale(before, local_grads(model)), full_weights(model)


def clip_and_step(rank, wrap, clip):
    """One step of a wrapped model, its gradients clipped by ``clip``: what this
    rank saw."""
    model = wrap(make_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(batch()[rank]).pow(2).mean().backward()
    before = local_grads(model)
    total = clip(model)
    factor = scale(before, local_grads(model))
    kind = type(total).__name__
    if isinstance(total, DTensor):
        total = total.full_tensor()
    params = model.named_parameters()
    frozen = [p for name, p in params if clean(name).startswith("body.")]
    optimizer.step()
    return {"type": kind, "total": total.item(), "scale": factor,
            "weights": full_weights(model),
            "frozen grad None": all(p.grad is None for p in frozen)}


def run(rank):
    rows = {}
    for name, setup in SETUPS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows[name] = clip_and_step(rank, **setup)
        rows[name]["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        dist.barrier()
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


def show(message, indent="  "):
    """The first line of a message wrapped."""
    for line in textwrap.wrap(message.splitlines()[0], 66):
        print(indent + line)


def same(a, b):
    return all(torch.allclose(torch.tensor(a[name]), torch.tensor(b[name]), atol=1e-6) for name in a)


def factor(value):
    return "nothing" if value is None else f"{value:.4f}"


def report(rows, true, factor_one, reference):
    print(f"one process, unsharded: total norm {true:.4f}; max_norm {MAX_NORM}"
          f" scales the gradients by {factor(factor_one)}")
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        for warning in sorted(set(row["warnings"] + other["warnings"])):
            show(warning)
        print(f"  returns a {row['type']}: {row['total']:.4f} on rank 0, {other['total']:.4f} on rank 1")
        print(f"  scales the gradients by {factor(row['scale'])} on rank 0,"
              f" {factor(other['scale'])} on rank 1")
        print(f"  frozen parameters without a grad on both ranks:"
              f" {row['frozen grad None'] and other['frozen grad None']}")
        print(f"  weights after the step as one process: {same(row['weights'], reference)}")


def main():
    true, factor_one, reference = one_process()
    # "fork" also works where the program is pasted into a notebook; spawn would need
    # to import worker() from a file.
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(free_port(), results), nprocs=WORLD_SIZE, start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows, true, factor_one, reference)


if __name__ == "__main__":
    main()
