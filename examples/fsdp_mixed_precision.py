"""FSDP2's ``MixedPrecisionPolicy`` with a frozen body, and gradient accumulation under it, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on the
CPU, shard a small model, a frozen ``body`` and a trainable ``head``, with ``fully_shard``
and a ``MixedPrecisionPolicy`` whose ``param_dtype`` is bfloat16, each on its own half of
every batch.

First, one backward pass with ``reduce_dtype=torch.float32``, the body stored in float32 as
a unit of its own, and stored in bfloat16 in one unit with the head: any error, and the dtype
of the output and, for each part, of its input and of the weights its first layer sees in the
forward pass, of its shards, and of their gradients.

Then, gradient accumulation over eight micro-batches with
``set_requires_gradient_sync(False)`` for all but the last, with ``reduce_dtype`` float32
(the reference), bfloat16 and ``None``, with bfloat16 and the sync on for every
micro-batch, and without a policy: which gradients each process keeps between two
micro-batches and in which dtype, the dtype of the sharded gradients at the end, and how far
they are from the reference's.

Each process sends back what it saw, and the parent prints one report, the same on every
run.
"""

import os
import re
import socket
import textwrap
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

WORLD_SIZE = 2
ACCUM = 8
BF16 = torch.bfloat16


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.head(self.body(x))


def make_model(body_dtype=torch.float32):
    torch.manual_seed(0)  # the same initial weights on both ranks
    model = Net()
    model.body.to(body_dtype).requires_grad_(False)
    return model


def shard(model, policy, body_apart=True):
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    if body_apart:
        fully_shard(model.body, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model


def micro_batches():
    torch.manual_seed(1)
    return torch.randn(ACCUM, WORLD_SIZE, 4, 16)  # each rank trains on its own half


def name(dtype):
    return str(dtype).removeprefix("torch.")


DTYPES = {
    "param_dtype=bfloat16, reduce_dtype=float32, body a unit of its own": dict(),
    "the same, body stored in bfloat16, one unit with the head": dict(
        body_dtype=BF16, body_apart=False),
}


def dtypes(rank, body_dtype=torch.float32, body_apart=True):
    """One backward pass under the policy; the dtypes this rank saw."""
    policy = MixedPrecisionPolicy(param_dtype=BF16, reduce_dtype=torch.float32)
    model = shard(make_model(body_dtype), policy, body_apart)
    seen = {}
    for part in ("body", "head"):
        def record(module, args, part=part):
            seen[f"{part} input"], seen[f"{part} weight"] = args[0].dtype, module.weight.dtype
        model.get_submodule(part)[0].register_forward_pre_hook(record)
    try:
        out = model(micro_batches()[0, rank])
    except AssertionError as error:  # FSDP checks the dtypes of a unit at its first forward
        # the message prints a set of dtypes, whose order changes from run to run
        message = re.sub(r"\{(.*)\}", lambda m: "{" + ", ".join(sorted(m[1].split(", "))) + "}", str(error))
        return {"error": f"{type(error).__name__}: {message}"}
    out.float().pow(2).mean().backward()
    row = {key: name(dtype) for key, dtype in seen.items()}
    row["output"] = name(out.dtype)
    for part in ("body", "head"):
        params = list(model.get_submodule(part).parameters())
        row[f"{part} shards"] = sorted({name(p.dtype) for p in params})
        row[f"{part} grads"] = sorted({"None" if p.grad is None else name(p.grad.dtype) for p in params})
    return row


def policy(reduce_dtype):
    return MixedPrecisionPolicy(param_dtype=BF16, reduce_dtype=reduce_dtype)


REFERENCE = "param_dtype=bfloat16, reduce_dtype=float32 (the reference)"
ACCUMULATE = {
    REFERENCE: dict(policy=policy(torch.float32)),
    "param_dtype=bfloat16, reduce_dtype=bfloat16": dict(policy=policy(BF16)),
    "param_dtype=bfloat16, reduce_dtype=None": dict(policy=policy(None)),
    "param_dtype=bfloat16, reduce_dtype=bfloat16, sync every micro-batch": dict(
        policy=policy(BF16), every=True),
    "no policy, all in float32": dict(policy=MixedPrecisionPolicy()),
}


def kept(model):
    """The gradients this rank keeps between micro-batches: FSDP2 keeps those that wait for
    their sync out of sight, so this reads FSDP's internals, whose names change between
    releases (newer ones keep them in the full parameter's .grad)."""
    state = model._get_fsdp_state()
    groups = getattr(state, "_fsdp_param_groups", None) or [state._fsdp_param_group]
    found = set()
    for param in (p for group in groups for p in group.fsdp_params):
        waiting = getattr(param, "unsharded_accumulated_grad", None)
        if waiting is None and hasattr(param, "_unsharded_param"):
            waiting = param._unsharded_param.grad
        if waiting is not None:
            found.add(f"full {name(waiting.dtype)}")
        if param.sharded_param.grad is not None:
            found.add(f"sharded {name(param.sharded_param.grad.dtype)}")
    return sorted(found)


def accumulate(rank, policy, every=False):
    """ACCUM micro-batches, the sync off for all but the last unless ``every``."""
    model = shard(make_model(), policy)
    for i, batch in enumerate(micro_batches()):
        last = i == ACCUM - 1
        model.set_requires_gradient_sync(every or last)
        (model(batch[rank]).float().pow(2).mean() / ACCUM).backward()
        if i == 0:
            between = kept(model)
    grads = {n: p.grad.full_tensor() for n, p in model.named_parameters()
             if p.grad is not None}
    grad_dtypes = sorted({name(g.dtype) for g in grads.values()})
    return {"between": between, "grad dtypes": grad_dtypes, "grads": grads}


def distance(grads, reference):
    """The largest relative distance, parameter by parameter, from the reference's gradients."""
    return max(((grads[n] - r).norm() / r.norm()).item() for n, r in reference.items())


def run(rank):
    rows = {}
    for label, setup in DTYPES.items():
        rows[label] = dtypes(rank, **setup)
        dist.barrier()
    for label, setup in ACCUMULATE.items():
        rows[label] = accumulate(rank, **setup)
        dist.barrier()
    reference = rows[REFERENCE]["grads"]
    for label in ACCUMULATE:
        rows[label]["distance"] = distance(rows[label].pop("grads"), reference)
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
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = run(rank)
        rows["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        results.put((rank, rows))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def each_rank(value, other):
    return f"{value} on both ranks" if value == other else f"{value} on rank 0, {other} on rank 1"


def report(rows):
    row0, row1 = rows
    for label in DTYPES:
        row, other = row0[label], row1[label]
        print(f"{label}:")
        if "error" in row:
            for line in textwrap.wrap(row["error"], 66):
                print("  " + line)
            continue
        print(f"  output: {row['output']}")
        for part in ("body", "head"):
            grads = each_rank(", ".join(row[f"{part} grads"]), ", ".join(other[f"{part} grads"]))
            print(f"  {part}: input {row[f'{part} input']}, weights {row[f'{part} weight']};"
                  f" shards {', '.join(row[f'{part} shards'])}; grad {grads}")
    print(f"accumulating {ACCUM} micro-batches, the sync off for all but the last:")
    for label in ACCUMULATE:
        row = row0[label]
        print(f"{label}:")
        print(f"  kept between micro-batches: {', '.join(row['between']) or 'nothing'}")
        print(f"  sharded grad at the end: {', '.join(row['grad dtypes'])}")
        if label != REFERENCE:
            print(f"  relative distance from the reference: {row['distance']:.4f}")
    for warning in row0["warnings"]:
        print("warning:")
        for line in textwrap.wrap(warning.splitlines()[0], 66):
            print("  " + line)


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
    report([rows[0], rows[1]])


if __name__ == "__main__":
    main()
