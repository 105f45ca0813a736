"""FSDP2 的 ``MixedPrecisionPolicy``：body 冻结时各部分的 dtype，以及这个策略下的梯度累积，在两个真实进程中运行。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端组成进程组，用 ``fully_shard``
和一个 ``param_dtype`` 为 bfloat16 的 ``MixedPrecisionPolicy`` 对一个小模型（冻结的 ``body`` 加上
可训练的 ``head``）分片，每个进程用每批数据中属于自己的那一半。

先用 ``reduce_dtype=torch.float32`` 做一次反向传播，body 分别以 float32 存放、单独作为一个单元，
和以 bfloat16 存放、与 head 同在一个单元：打印出现的错误，以及输出的 dtype；对每个部分，
打印它的输入、它的第一层在前向传播中看到的权重、它的分片以及分片梯度的 dtype。

再用 ``set_requires_gradient_sync(False)`` 关掉除最后一个之外所有微批次的同步，累积八个微批次的梯度：
``reduce_dtype`` 分别为 float32（作为参照）、bfloat16 和 ``None``，bfloat16 且每个微批次都同步，
以及不用策略。打印每个进程在两个微批次之间保留哪些梯度、是什么 dtype，最后分片梯度的 dtype，
以及它们与参照的梯度相差多少。

每个进程把自己看到的情况发回父进程，父进程打印一份报告，每次运行都一样。
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
    torch.manual_seed(0)  # 两个 rank 的初始权重相同
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
    return torch.randn(ACCUM, WORLD_SIZE, 4, 16)  # 每个 rank 用属于自己的那一半训练


def name(dtype):
    return str(dtype).removeprefix("torch.")


DTYPES = {
    "param_dtype=bfloat16, reduce_dtype=float32, body a unit of its own": dict(),
    "the same, body stored in bfloat16, one unit with the head": dict(
        body_dtype=BF16, body_apart=False),
}


def dtypes(rank, body_dtype=torch.float32, body_apart=True):
    """在策略下做一次反向传播；返回本 rank 看到的各个 dtype。"""
    policy = MixedPrecisionPolicy(param_dtype=BF16, reduce_dtype=torch.float32)
    model = shard(make_model(body_dtype), policy, body_apart)
    seen = {}
    for part in ("body", "head"):
        def record(module, args, part=part):
            seen[f"{part} input"], seen[f"{part} weight"] = args[0].dtype, module.weight.dtype
        model.get_submodule(part)[0].register_forward_pre_hook(record)
    try:
        out = model(micro_batches()[0, rank])
    except AssertionError as error:  # FSDP 在单元第一次前向传播时检查它的 dtype
        # 信息里打印的是一个 dtype 的集合，其顺序每次运行都可能不同
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
    """本 rank 在两个微批次之间保留的梯度：FSDP2 把等待同步的梯度藏在看不到的地方，所以这里读的是
    FSDP 的内部实现，其名字随版本而变（较新的版本放在完整参数的 .grad 里）。"""
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
    """累积 ACCUM 个微批次；除非 ``every`` 为真，只有最后一个打开同步。"""
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
    """逐个参数与参照的梯度比较，返回最大的相对距离。"""
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
    # gloo 归约的是 CPU 张量。为 CUDA 构建本书时，fork 出本进程的父进程把默认设备设成了别的设备，
    # 而且 fork 出来的子进程本来就用不了 CUDA。
    torch.set_default_device("cpu")
    # 本程序要报告的内容都经由队列传递，所以工作进程自己的输出一律丢弃
    # （异常仍会经由 start_processes 传到父进程）。
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
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
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
