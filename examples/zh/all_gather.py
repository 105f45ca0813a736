"""在从所有进程收集来的嵌入上计算损失：梯度传回去与传不回去的对比。

对比学习的损失（CLIP、SimCLR）要把每个进程的嵌入和所有进程的嵌入逐一比较，
所以每个进程先要把其他进程的嵌入收集过来。两个进程由 ``torch.multiprocessing``
启动，通过 CPU 上的 gloo 后端连接，用同一个编码器为各自的批次计算嵌入，
再按四种做法计算这样的损失：

- ``dist.all_gather`` 收集到一个列表里：收集来的张量只是普通副本，不带计算图；
- 同上，但把列表中属于本进程的位置换成本进程的嵌入，它带着自己的计算图；
- ``torch.distributed.nn.functional.all_gather``，它把梯度送回每个嵌入所在的进程；
- ``torch.distributed._functional_collectives`` 的 ``all_gather_single``：较新版本对上一个
  函数发出弃用警告，建议改用的就是它（模块名表明它是私有模块；旧版本没有这个函数）。

每次反向传播之后，编码器的梯度在各进程间求和，父进程再把结果与单个进程一次处理
两个批次得到的梯度比较。每个进程把看到的结果（包括警告）通过队列发回父进程，
由父进程打印一份报告，每次运行都相同。
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
BATCH = 3  # 每个进程的样本数


def make_encoder():
    torch.manual_seed(0)
    return nn.Linear(4, 2)


def batch(rank):
    """每个进程的批次：各进程不同，每次运行相同。"""
    return torch.randn(BATCH, 4, generator=torch.Generator().manual_seed(1 + rank))


def contrastive(mine, everyone, rank):
    """本进程的每个嵌入对所有嵌入的交叉熵，正确答案是它自己的位置
    （CLIP、SimCLR 损失的形式）。"""
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
        dist.all_reduce(grad)  # 和损失一样，在各进程间求和
    row["grads"] = [g.tolist() for g in grads]
    return row


def one_process():
    """在一个进程里处理两个批次：损失是两个进程各项之和。"""
    encoder = make_encoder()
    z = encoder(torch.cat([batch(rank) for rank in range(WORLD_SIZE)]))
    loss = sum(contrastive(z[r * BATCH:(r + 1) * BATCH], z, r) for r in range(WORLD_SIZE))
    loss.backward()
    return [p.grad.tolist() for p in encoder.parameters()]


def worker(rank, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    # gloo 处理的是 CPU 张量。为 CUDA 构建本书时，fork 出本进程的父进程把默认设备设成了别的设备，
    # 而且 fork 出来的子进程本来就用不了 CUDA。
    torch.set_default_device("cpu")
    # 有些版本的 gloo 会在两个进程里打印连接信息，互相交错，顺序随机。本程序要报告的内容都经由队列传递。
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    for setup in SETUPS:
        results.put((rank, setup, run(rank, setup)))
        dist.barrier()
    # 不调用 destroy_process_group()：在 torch 2.7 下，另一个进程退出后，它在这里
    # 大约每十次运行就会卡住一次。进程组随进程一起结束。


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close(a, b):
    """两组梯度在舍入误差范围内是否相等，在 CPU 上计算。"""
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
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
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
