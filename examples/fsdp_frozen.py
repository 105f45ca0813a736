"""Frozen parameters under FSDP2 (``fully_shard``) and FSDP1, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on
the CPU, train the same small model, a ``body`` and a ``head``, for a few steps with Adam,
in eight setups:

- FSDP2 with the frozen body sharded as a unit of its own, and with the whole model as one
  unit, frozen and trainable parameters together; and once with the optimizer built too
  early, before ``fully_shard``;
- FSDP1 (``FullyShardedDataParallel``) with the whole model as one unit, without and with
  ``use_orig_params=True``, and with the frozen body wrapped apart;
- FSDP1 with only the body's first layer frozen and the body wrapped as a unit, without and
  with ``use_orig_params=True``.

Each process sends back what it saw, and the parent prints one report, the same on every
run: any error and the warnings raised while wrapping and training (the first line of each
wrapped), the type of the parameters and of Adam's state, one line per parameter saying
whether it is frozen, the shape of its shard on each process, and on which processes it got
a gradient and Adam keeps state for it, then whether the frozen and the trainable parameters
moved, and whether the full weights agree between the two processes and with one process
that trains an unsharded copy on both halves of every batch.
"""

import copy
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
STEPS = 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


def fsdp2(model, units):
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    for unit in units:
        fully_shard(unit, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def fsdp1(model, **options):
    # Without device_id, FSDP1 looks for an accelerator and refuses to run without one.
    return FSDP(model, device_id=torch.device("cpu"), **options)


SETUPS = {
    "FSDP2, body sharded apart": dict(wrap=lambda m: fsdp2(m, [m.body])),
    "FSDP2, one unit": dict(wrap=lambda m: fsdp2(m, [])),
    "FSDP2, optimizer built before fully_shard": dict(wrap=lambda m: fsdp2(m, [m.body]), early=True),
    "FSDP1, one unit": dict(wrap=fsdp1),
    "FSDP1, one unit, use_orig_params=True": dict(wrap=lambda m: fsdp1(m, use_orig_params=True)),
    "FSDP1, body wrapped apart": dict(
        wrap=lambda m: fsdp1(m, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))),
    "FSDP1, half the body frozen": dict(
        frozen="body.0", wrap=lambda m: fsdp1(m, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))),
    "FSDP1, half the body frozen, use_orig_params=True": dict(
        frozen="body.0", wrap=lambda m: fsdp1(m, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}),
                                              use_orig_params=True)),
}


def clean(name):
    return name.replace("_fsdp_wrapped_module.", "")


def full_weights(model):
    """The full (unsharded) weights by original name, as lists."""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return full_weights(model.module)
    return {clean(name): (p.full_tensor() if isinstance(p, DTensor) else p).tolist()
            for name, p in model.named_parameters()}


def shape(t):
    return "x".join(map(str, t.shape)) or "1"


def train(rank, wrap, frozen="body", early=False):
    """Train a fresh Net, wrapped by ``wrap``, for STEPS steps; return what this rank saw."""
    torch.manual_seed(0)  # the same initial weights on both ranks
    model = Net()
    model.get_submodule(frozen).requires_grad_(False)
    if early:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    reference = copy.deepcopy(model)
    torch.manual_seed(1)
    data = torch.randn(STEPS, WORLD_SIZE, 8, 4)  # each rank trains on its own part
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = wrap(model)
        except (ValueError, RuntimeError) as error:
            caught = [f"{w.category.__name__}: {w.message}" for w in caught]
            return {"error": f"{type(error).__name__}: {error}", "warnings": caught}
        before = full_weights(model)
        if not early:
            optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        for step in range(STEPS):
            optimizer.zero_grad()
            model(data[step, rank]).pow(2).mean().backward()
            optimizer.step()
    after = full_weights(model)
    optimizer_ref = torch.optim.Adam(reference.parameters(), lr=0.1)
    for step in range(STEPS):
        optimizer_ref.zero_grad()
        reference(data[step].flatten(0, 1)).pow(2).mean().backward()
        optimizer_ref.step()
    params = [(clean(name), p) for name, p in model.named_parameters()]
    return {
        "type": sorted({type(p).__name__ for _, p in params}),
        "requires_grad": {name: p.requires_grad for name, p in params},
        "local": {name: shape(p.to_local() if isinstance(p, DTensor) else p) for name, p in params},
        "grad": {name: p.grad is not None for name, p in params},
        "state": {name: p in optimizer.state for name, p in params},
        "state type": sorted({type(s["exp_avg"]).__name__ for s in optimizer.state.values()}),
        "moved": {kind: any(after[n] != before[n] for n in after if n.startswith(frozen) == is_frozen)
                  for kind, is_frozen in [("frozen", True), ("trainable", False)]},
        "weights": after,
        "as one process": all(torch.allclose(torch.tensor(after[name]), p, atol=1e-6)
                              for name, p in reference.named_parameters()),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    }


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
            results.put((rank, name, train(rank, **setup)))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="    "):
    """The first line of a message wrapped, and its other lines as they are."""
    first, *rest = message.splitlines()
    for line in textwrap.wrap(first, 66) + rest:
        print(indent + line)


def ranks(found):
    """Where something was found, in words: on both ranks, on one, or nowhere ("")."""
    if len(found) == WORLD_SIZE:
        return "on both ranks"
    return f"on rank {found[0]}" if found else ""


def report(rows):
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        for warning in row["warnings"]:
            show(warning, "  ")
        if "error" in row:
            show(row["error"], "  ")
            continue
        if not row["warnings"]:
            print("  no warnings")
        states = {kind for r in (0, 1) for kind in rows[r][name]["state type"]}
        print(f"  parameters: {' '.join(row['type'])}; Adam state: {' '.join(sorted(states)) or 'none'}")
        for param, local in row["local"].items():
            kind = "trainable" if row["requires_grad"][param] else "frozen"
            on = {key: ranks([r for r in (0, 1) if rows[r][name][key][param]]) for key in ("grad", "state")}
            if on["grad"] == on["state"]:
                kept = f"grad and state {on['grad']}" if on["grad"] else "no grad, no state"
            else:
                kept = ", ".join(f"{key} {on[key]}" if on[key] else f"no {key}" for key in ("grad", "state"))
            print(f"  {param}: {kind}; shards {local}, {other['local'][param]}; {kept}")
        print(f"  after {STEPS} steps: frozen moved {row['moved']['frozen']},"
              f" trainable moved {row['moved']['trainable']}")
        print(f"  same on both ranks: {row['weights'] == other['weights']};"
              f" as one process: {row['as one process'] and other['as one process']}")


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
