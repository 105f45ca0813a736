"""FSDP1 和 FSDP2 下的梯度裁剪（body 冻结），在两个真实进程中运行。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端组成进程组，各自用一批数据中
属于自己的那一半，对一个小模型（冻结的 ``body`` 加上可训练的 ``head``）做一步 SGD，
其间裁剪梯度，共四种设置：

- FSDP1（``FullyShardedDataParallel``），body 单独包装（扁平参数），分别用
  ``torch.nn.utils.clip_grad_norm_(model.parameters(), ...)`` 和包装器自己的
  ``model.clip_grad_norm_(...)`` 裁剪；
- 同样的 FSDP1 包装，加上 ``use_orig_params=True``，用 ``torch.nn.utils.clip_grad_norm_`` 裁剪；
- FSDP2（``fully_shard``），用 ``torch.nn.utils.clip_grad_norm_`` 裁剪。

单个进程用整批数据训练一个未分片的副本，给出真实的范数。每个进程把自己看到的情况发回父进程，
父进程打印一份报告，每次运行都一样：先是真实的范数以及裁剪把梯度缩放的倍数；然后对每种设置，
打印出现的警告、裁剪函数返回的总范数的类型及其在每个 rank 上的值（``DTensor`` 经由
``full_tensor()`` 取值）、每个 rank 自己的梯度被缩放的倍数、冻结参数是否在两个 rank 上都没有梯度，
以及这一步之后的权重是否与那个单进程同样裁剪、同样更新之后的权重相同。
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
MAX_NORM = 0.1  # 比真实的范数小，所以每种正确的设置都会裁剪


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x):
        return self.head(self.body(x))


def fsdp1(model, **options):
    # 不传 device_id 时，FSDP1 会去找加速器，找不到就拒绝运行。
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
    torch.manual_seed(0)  # 两个 rank 的初始权重相同
    model = Net()
    model.body.requires_grad_(False)
    return model


def batch():
    torch.manual_seed(1)
    return torch.randn(WORLD_SIZE, 8, 4)  # 每个 rank 用属于自己的那一半训练


def clean(name):
    return name.replace("_fsdp_wrapped_module.", "")


def full_weights(model):
    """完整（未分片）的权重，以原来的参数名为键，值为列表。"""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return full_weights(model.module)
    return {clean(name): (p.full_tensor() if isinstance(p, DTensor) else p).tolist()
            for name, p in model.named_parameters()}


def local_grads(model):
    """本 rank 持有的梯度元素，拼成一个一维张量（分片模型就是它的那些分片）。"""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    grads = [g.to_local() if isinstance(g, DTensor) else g for g in grads]
    return torch.cat([g.flatten() for g in grads]) if grads else torch.zeros(0)


def scale(before, after):
    """裁剪把本 rank 的梯度缩放的倍数；本 rank 没有梯度时为 None。"""
    return (after.norm() / before.norm()).item() if before.count_nonzero() else None


def one_process():
    """未分片的模型用整批数据训练：返回真实的范数、缩放倍数和一步之后的权重。"""
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(batch().flatten(0, 1)).pow(2).mean().backward()
    before = local_grads(model)
    total = nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return total.item(), scale(before, local_grads(model)), full_weights(model)


def clip_and_step(rank, wrap, clip):
    """包装后的模型走一步，梯度由 ``clip`` 裁剪；返回本 rank 看到的情况。"""
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
        results.put((rank, run(rank)))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="  "):
    """打印一条信息的第一行，折行显示。"""
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
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
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
