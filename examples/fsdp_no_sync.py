"""Gradient accumulation under FSDP2 and FSDP1, with and without turning the gradient sync off, run for real.

Two processes, started with ``torch.multiprocessing`` and joined by the gloo backend on
the CPU, train the same small model, sharded as one unit, for two optimizer steps of four
micro-batches each, the loss of each micro-batch divided by four, in nine setups:

- FSDP2 (``fully_shard``) with the gradient sync on for every micro-batch, switched off
  with ``set_requires_gradient_sync(False)`` for all but the last micro-batch of each step,
  and switched off for good;
- FSDP2 with the sync switched off for all but the last micro-batch and the full
  parameters kept between micro-batches: ``set_reshard_after_backward(False)`` for all but
  the last micro-batch; ``False`` for every one, with ``reshard()`` before each optimizer
  step; and ``False`` for every one, without ``reshard()``;
- FSDP1 (``FullyShardedDataParallel``) without ``no_sync()``, with the first three
  micro-batches of each step inside it, and with only their backward passes inside it.

Wrappers around the reduce-scatter and all-gather functions FSDP calls count the
reduce-scatters and, for FSDP2, the all-gathers of each micro-batch. Each process sends
what it saw back to the parent through a queue, and the parent prints one report, the same
on every run: the size of the model, then for each setup the reduce-scatters (and
all-gathers) per micro-batch, how many gradient numbers rank 0 holds after the first
micro-batch, whether the weights moved, whether the two processes hold the same weights at
the end, and whether rank 0's weights match, up to rounding, those of the first setup of the
same FSDP and those of one process that trains on all the data of both processes at once.
"""

import os  # noqa: I001  (unsorted as recorded on every release: sort with the next code change)
import socket
from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

WORLD_SIZE = 2
STEPS = 2
ACCUM = 4
BATCH = 2  # samples per micro-batch and process
# The functions FSDP calls for its reduce-scatters and all-gathers: newer releases renamed them.
REDUCE_SCATTER = "reduce_scatter_single" if hasattr(dist, "reduce_scatter_single") else "reduce_scatter_tensor"
ALL_GATHER = "all_gather_single" if hasattr(dist, "all_gather_single") else "all_gather_into_tensor"


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def data(rank):
    """The micro-batches of one process: different on each rank, the same on every run."""
    generator = torch.Generator().manual_seed(1 + rank)
    return [(torch.randn(BATCH, 4, generator=generator), torch.randn(BATCH, 1, generator=generator))
            for _ in range(STEPS * ACCUM)]


def full_weights(model):
    """The full (unsharded) weights, as lists."""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return [p.tolist() for p in model.parameters()]
    # A model left unsharded lists its full parameters, not the shards the optimizer updated.
    model.reshard()
    return [p.full_tensor().tolist() for p in model.parameters()]


def held(model):
    """How many gradient numbers this rank holds. FSDP2 keeps gradients that wait for their
    sync out of sight and FSDP1 in its flat parameter, so this reads FSDP's internals, whose
    names change between releases."""
    if isinstance(model, FSDP):
        grads = [model._flat_param.grad]
    else:
        state = model._get_fsdp_state()
        groups = getattr(state, "_fsdp_param_groups", None) or [state._fsdp_param_group]
        params = [p for group in groups for p in group.fsdp_params]
        grads = [p.sharded_param.grad for p in params]
        grads += [p.unsharded_param.grad for p in params if hasattr(p, "_unsharded_param")]
    return sum((g.to_local() if isinstance(g, DTensor) else g).numel() for g in grads if g is not None)


def train(rank, fsdp, sync, reshard="every"):
    """Train with ``fsdp`` ("FSDP2" or "FSDP1"); ``sync`` says which micro-batches sync,
    ``reshard`` when FSDP2 frees the full parameters: after "every" backward pass, after
    the "last" of each step, by ``reshard()`` "before the step", or "never"."""
    reduced, gathered = [], []  # collectives started during each micro-batch
    originals = {name: getattr(dist, name) for name in (REDUCE_SCATTER, ALL_GATHER)}

    def counter(name, counts):
        def count(*args, **kwargs):
            counts[-1] += 1
            return originals[name](*args, **kwargs)
        return count

    model = make_model()
    if fsdp == "FSDP2":
        model = fully_shard(model, mesh=init_device_mesh("cpu", (WORLD_SIZE,)))
    else:
        # Without device_id, FSDP1 looks for an accelerator and refuses to run without one.
        model = FSDP(model, device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = iter(data(rank))
    initial = full_weights(model)
    setattr(dist, REDUCE_SCATTER, counter(REDUCE_SCATTER, reduced))
    setattr(dist, ALL_GATHER, counter(ALL_GATHER, gathered))
    try:
        for _ in range(STEPS):
            optimizer.zero_grad()
            for micro in range(ACCUM):
                x, y = next(batches)
                reduced.append(0)
                gathered.append(0)
                local = sync == "never" or (sync != "every" and micro < ACCUM - 1)
                last = micro == ACCUM - 1
                if fsdp == "FSDP2":
                    model.set_requires_gradient_sync(not local)
                    # Free the full parameters after this backward pass, or keep them?
                    if reshard != "every":
                        model.set_reshard_after_backward(reshard == "last" and last)
                    loss = nn.functional.mse_loss(model(x), y) / ACCUM
                    loss.backward()
                elif sync == "backward only":
                    loss = nn.functional.mse_loss(model(x), y) / ACCUM
                    with model.no_sync() if local else nullcontext():
                        loss.backward()
                else:
                    with model.no_sync() if local else nullcontext():
                        loss = nn.functional.mse_loss(model(x), y) / ACCUM
                        loss.backward()
                if len(reduced) == 1:
                    first = held(model)
            if reshard == "before the step":  # on every FSDP module, on every rank
                for module in model.modules():
                    if isinstance(module, FSDPModule):
                        module.reshard()
            optimizer.step()
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)
    # Full parameters FSDP2 still holds: the next forward pass would compute with them.
    full = [p.tolist() for p in model.parameters() if not isinstance(p, DTensor)]
    kept = "none"
    if fsdp == "FSDP2" and full:
        kept = "the initial weights" if full == initial else "other weights"
    weights = full_weights(model)
    return {"reduced": reduced, "gathered": gathered, "kept": kept, "held": first,
            "moved": weights != initial, "weights": weights}


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
    "FSDP2, sync every micro-batch": ("FSDP2", "every"),
    "FSDP2, sync the last only": ("FSDP2", "all but the last"),
    "FSDP2, sync never": ("FSDP2", "never"),
    "FSDP2, sync and reshard after the last only": ("FSDP2", "all but the last", "last"),
    "FSDP2, sync the last only, reshard() before the step": ("FSDP2", "all but the last", "before the step"),
    "FSDP2, sync the last only, reshard never": ("FSDP2", "all but the last", "never"),
    "FSDP1, without no_sync": ("FSDP1", "every"),
    "FSDP1, no_sync for all but the last": ("FSDP1", "all but the last"),
    "FSDP1, no_sync around backward only": ("FSDP1", "backward only"),
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
            results.put((rank, name, train(rank, *setup)))
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


def per_step(counts):
    """Counts per micro-batch, the optimizer steps apart: "1 0 0 0 | 1 0 0 0"."""
    steps = [counts[i:i + ACCUM] for i in range(0, STEPS * ACCUM, ACCUM)]
    return " | ".join(" ".join(map(str, s)) for s in steps)


def report(rows):
    print("numbers in the model:", sum(len(torch.tensor(p).flatten()) for p in rows[0]["one process"]["weights"]))
    reference = rows[0]["one process"]["weights"]
    for name, (fsdp, sync, *_) in SETUPS.items():
        row, other = rows[0][name], rows[1][name]
        first = rows[0][next(n for n, (f, *_) in SETUPS.items() if f == fsdp)]["weights"]
        print(f"{name}:")
        print("  reduce-scatters per micro-batch:", per_step(row["reduced"]))
        if fsdp == "FSDP2":
            print("  all-gathers per micro-batch:", per_step(row["gathered"]))
            print("  full parameters still gathered after the last step:", row["kept"])
        print("  gradient numbers held after micro-batch 1:", row["held"])
        print("  weights moved:", row["moved"])
        print("  same weights on both ranks:", row["weights"] == other["weights"])
        if sync != "every":
            print("  allclose to syncing every one:", close(row["weights"], first))
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
