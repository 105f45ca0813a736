"""真实运行 DistributedDataParallel，看冻结的参数和没用到的参数会怎样。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，
用九种设置分别把同一个小模型训练几步。每个 rank 都用自己的 rank 作为随机种子初始化模型，
所以各 rank 的初始权重不同，直到 DDP 的构造函数把 rank 0 的权重复制给另一个 rank。九种设置是：

- 先冻结第一层，再用 DDP 包装模型；
- 包装之后才冻结同一层，分别用默认的 ``find_unused_parameters=False``
  和 ``find_unused_parameters=True``；
- 包装之前冻结这一层，第一步之后解冻：一次直接原地解冻，
  一次解冻后再用新的 DDP 重新包装模型；
- 两个输出头轮流使用，每步用一个，分别用默认设置、
  ``find_unused_parameters=True`` 和 ``static_graph=True``；
- 有一个输出头从来不用，设置 ``static_graph=True``。

一个通信钩子（comm hook）统计每一步做 all-reduce 的梯度元素个数。每个进程通过队列把自己看到的情况
发回父进程，父进程打印一份报告，每次运行都一样：包装之前和刚包装之后两个进程的权重是否相同；
出错时打印错误的第一行（折行显示）和点出哪些参数没拿到梯度的那一行；每一步做 all-reduce 的元素个数；
以及训练结束时两个进程的权重是否仍然相同。
"""

import os
import socket
import textwrap
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 3


class Net(nn.Module):
    """一个 body 加两个输出头：``forward(x)`` 两个头都用，``forward(x, head)`` 只用其中一个。"""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.heads = nn.ModuleList([nn.Linear(4, 1), nn.Linear(4, 1)])

    def forward(self, x, head=None):
        h = torch.relu(self.body(x))
        if head is None:
            return self.heads[0](h) + self.heads[1](h)
        return self.heads[head](h)


def train(rank, freeze="none", unfreeze_at=None, rewrap=False, alternate=False, head=None,
          **ddp_options):
    """新建一个 Net，训练 STEPS 步，返回本 rank 看到的情况。"""
    torch.manual_seed(rank)  # 每个 rank 的初始权重各不相同
    model = Net()
    if freeze == "before":
        model.body.requires_grad_(False)
    initial = weights(model)
    reduced = []  # 每一步做了 all-reduce 的梯度元素个数

    def count(state, bucket):
        reduced[-1] += sum(p.numel() for p in bucket.parameters())
        return allreduce_hook(state, bucket)

    ddp = DDP(model, **ddp_options)  # 把 rank 0 的权重广播给其他 rank
    wrapped = weights(model)
    ddp.register_comm_hook(None, count)
    if freeze == "after":
        model.body.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in ddp.parameters() if p.requires_grad], lr=0.1)
    body_before = model.body.weight.detach().clone()
    torch.manual_seed(1 + rank)  # 每个 rank 的数据各不相同
    for step in range(STEPS):
        if step == unfreeze_at:
            model.body.requires_grad_(True)
            optimizer.add_param_group({"params": list(model.body.parameters())})
            if rewrap:  # 新的 DDP 会登记 body，并广播 rank 0 的权重
                ddp = DDP(model, **ddp_options)
                ddp.register_comm_hook(None, count)
        reduced.append(0)
        x = torch.randn(8, 4)
        try:
            loss = ddp(x, head=step % 2 if alternate else head).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
        except RuntimeError as error:
            lines = str(error).splitlines()
            return {"error": (step, lines[0], [line for line in lines if "Parameter indices" in line]),
                    "reduced": reduced[:-1], "initial": initial, "wrapped": wrapped, "weights": weights(model)}
        optimizer.step()
    return {"body moved": not torch.equal(body_before, model.body.weight),
            "body grad": model.body.weight.grad is not None,
            "reduced": reduced, "initial": initial, "wrapped": wrapped, "weights": weights(model)}


def weights(model):
    """body 和两个输出头的权重，供父进程在各 rank 之间比较。

    返回列表而不是张量：张量要经由共享内存传递，而这块内存随本进程结束而消失。
    """
    return {part: [p.tolist() for p in getattr(model, part).parameters()] for part in ("body", "heads")}


SETUPS = {
    "frozen before wrapping": dict(freeze="before"),
    "frozen after wrapping": dict(freeze="after"),
    "frozen after wrapping, find_unused_parameters=True": dict(freeze="after", find_unused_parameters=True),
    "unfrozen after wrapping": dict(freeze="before", unfreeze_at=1),
    "re-wrapped after unfreezing": dict(freeze="before", unfreeze_at=1, rewrap=True),
    "heads in turn": dict(alternate=True),
    "heads in turn, find_unused_parameters=True": dict(alternate=True, find_unused_parameters=True),
    "heads in turn, static_graph=True": dict(alternate=True, static_graph=True),
    "head 1 never used, static_graph=True": dict(head=0, static_graph=True),
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
        for name, setup in SETUPS.items():
            results.put((rank, name, train(rank, **setup)))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def report(rows):
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        before, after = (row[key] == other[key] for key in ("initial", "wrapped"))
        print(f"  same weights on both ranks: before DDP() {before}, right after {after}")
        if "error" in row:
            step, message, indices = row["error"]
            same = other["error"] == (step, message, [line.replace("rank 0", "rank 1") for line in indices])
            print(f"  RuntimeError at step {step}, {'the same on both ranks' if same else 'ranks differ'}:")
            for line in textwrap.wrap(message, 84) + ["..."] * bool(indices) + indices:
                print(f"    {line}")
        else:
            print(f"  trained {STEPS} steps; body moved: {row['body moved']}; body has a grad: {row['body grad']}")
        print("  gradient elements all-reduced in each step:", " ".join(map(str, row["reduced"])) or "none")
        same = {part: row["weights"][part] == other["weights"][part] for part in ("body", "heads")}
        print(f"  same weights on both ranks at the end: body {same['body']}, heads {same['heads']}")


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
