"""真实运行 DistributedDataParallel 下的梯度累积，分别不用和使用 ``no_sync()``。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，训练同一个小模型，
共两次优化器更新，每次四个微批次，每个微批次的损失都除以四。共四种设置：

- 每个微批次都照常运行，每次反向传播都做 all-reduce；
- 每次更新的前三个微批次在 ``ddp.no_sync()`` 里运行，最后一个在它外面；
- 同上，但只把反向传播放进 ``no_sync()``，前向传播留在外面；
- 每个微批次都在 ``no_sync()`` 里运行。

一个通信钩子（comm hook）统计每个微批次做了几次 all-reduce。每个进程通过队列把自己看到的情况
发回父进程，父进程打印一份报告，每次运行都一样：每个微批次的 all-reduce 次数；训练结束时两个进程的
权重是否相同；以及 rank 0 的权重在舍入误差范围内是否与第一种设置的相同，是否与单个进程
一次用两个进程的全部数据训练得到的相同。
"""

import os
import socket
from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 2
ACCUM = 4
BATCH = 2  # 每个进程每个微批次的样本数


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def data(rank):
    """一个进程的全部微批次：各 rank 互不相同，每次运行都一样。"""
    generator = torch.Generator().manual_seed(1 + rank)
    return [(torch.randn(BATCH, 4, generator=generator), torch.randn(BATCH, 1, generator=generator))
            for _ in range(STEPS * ACCUM)]


def train(rank, sync):
    """用 DDP 训练；``sync`` 指明哪些微批次在 ``no_sync()`` 里运行。"""
    model = make_model()
    reduced = []  # 每个微批次期间发起的 all-reduce 次数

    def count(state, bucket):
        reduced[-1] += 1
        return allreduce_hook(state, bucket)

    ddp = DDP(model)
    ddp.register_comm_hook(None, count)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    batches = iter(data(rank))
    for _ in range(STEPS):
        optimizer.zero_grad()
        for micro in range(ACCUM):
            x, y = next(batches)
            reduced.append(0)
            local = sync == "never" or (sync != "every" and micro < ACCUM - 1)
            if sync == "backward only":
                loss = nn.functional.mse_loss(ddp(x), y) / ACCUM
                with ddp.no_sync() if local else nullcontext():
                    loss.backward()
            else:
                with ddp.no_sync() if local else nullcontext():
                    loss = nn.functional.mse_loss(ddp(x), y) / ACCUM
                    loss.backward()
        optimizer.step()
    return {"reduced": reduced, "weights": [p.tolist() for p in model.parameters()]}


def one_process():
    """在单个进程里做同样的训练，每一步一次用上两个 rank 在这一步的全部微批次。"""
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
    "without no_sync": "every",
    "no_sync for all but the last": "all but the last",
    "no_sync around backward only": "backward only",
    "no_sync for every micro-batch": "never",
}


def worker(rank, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    # gloo 归约的是 CPU 张量。为 CUDA 构建本书时，fork 出本进程的父进程把默认设备设成了别的设备，
    # 而且 fork 出来的子进程本来就用不了 CUDA。
    torch.set_default_device("cpu")
    # 有些版本的 gloo 会在两个进程里打印连接信息，互相交错，顺序随机。本程序要报告的内容都经由队列传递，
    # 所以工作进程自己的输出一律丢弃（异常仍会经由 start_processes 传到父进程）。
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    try:
        for name, sync in SETUPS.items():
            results.put((rank, name, train(rank, sync)))
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
    """两组权重在舍入误差范围内是否相等，在 CPU 上计算。"""
    return all(torch.allclose(torch.tensor(p, device="cpu"), torch.tensor(q, device="cpu")) for p, q in zip(a, b))


def report(rows):
    first = rows[0]["without no_sync"]["weights"]
    reference = rows[0]["one process"]["weights"]
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        steps = [row["reduced"][i:i + ACCUM] for i in range(0, STEPS * ACCUM, ACCUM)]
        print(f"{name}:")
        print("  all-reduces per micro-batch:", " | ".join(" ".join(map(str, s)) for s in steps))
        print("  same weights on both ranks:", row["weights"] == other["weights"])
        if name != "without no_sync":
            print("  allclose to without no_sync:", close(row["weights"], first))
        print("  allclose to one process:", close(row["weights"], reference))


def main():
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
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
