"""FSDP1 和 FSDP2 下不做权重衰减的参数组，在两个真实进程中运行。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端组成进程组，用 AdamW 把一个小模型
（一个线性层、一个 ``LayerNorm`` 和另一个线性层）训练三步，每个进程用每批数据中属于自己的那一半。
权重矩阵放进做权重衰减的参数组，偏置和归一化层的权重放进不做衰减的参数组，挑法有三种：

- ``early``：在未包装的模型上按形状挑，在包装之前创建优化器；
- ``shape``：在包装后的模型的参数上按形状（``ndim``）挑，在包装之后创建优化器；
- ``names``：在未包装的模型上按名字挑，在包装之后用包装后模型中同名的参数创建优化器。

FSDP1（``FullyShardedDataParallel``）分别用默认的扁平参数和 ``use_orig_params=True`` 包装模型，
FSDP2（``fully_shard``）对模型分片。每个进程把自己看到的情况发回父进程，父进程打印一份报告，
每次运行都一样：对每种设置，打印出现的警告、包装之后的参数（个数、维数，以及是否仍是模型原来的
那些对象）、每个参数组里的张量个数，以及训练三步之后权重是否变了、是否等于单个进程用正确的参数组、
以每批数据的两半训练一个未分片副本所得到的权重。
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
    # 不传 device_id 时，FSDP1 会去找加速器，找不到就拒绝运行。
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
    torch.manual_seed(0)  # 两个 rank 的初始权重相同
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))


def batches():
    torch.manual_seed(1)
    return torch.randn(STEPS, WORLD_SIZE, 8, 4)  # 每个 rank 用属于自己的那一半训练


def clean(name):
    return name.replace("_fsdp_wrapped_module.", "")


def adamw(decay, no_decay):
    return torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=0.1, weight_decay=0.5)


def full_weights(model):
    """完整（未分片）的权重，值为列表。"""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return full_weights(model.module)
    return [(p.full_tensor() if isinstance(p, DTensor) else p).tolist() for p in model.parameters()]


def one_process():
    """一个未分片的副本，参数组正确，用每批数据的两半训练。"""
    model = make_model()
    optimizer = adamw([p for p in model.parameters() if p.ndim >= 2],
                      [p for p in model.parameters() if p.ndim < 2])
    for batch in batches():
        optimizer.zero_grad()
        model(batch.flatten(0, 1)).pow(2).mean().backward()
        optimizer.step()
    return full_weights(model)


def train(rank, wrap, pick):
    """包装新模型，按 ``pick`` 的挑法分组并训练；返回本 rank 看到的情况。"""
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
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
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
