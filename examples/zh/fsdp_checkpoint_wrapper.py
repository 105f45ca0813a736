"""真实运行：用 ``checkpoint_wrapper`` 加梯度检查点，再与 FSDP2（``fully_shard``）一起训练。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，对一个小模型（``ModuleList``
里的两个残差块，加上线性层 ``out``）跑一步训练；模型先用 ``fully_shard`` 逐块分片，再整体分片。
每个块都用 ``apply_activation_checkpointing`` 加上梯度检查点，顺序有三种：先包装，再对每个包装器分片；
先包装，再对按类找到的每个块（在包装器里面）分片；先分片，再包装。第四种设置只分片、不加检查点，
作为对照。

FSDP 调用的 all-gather 函数外面套了一层计数，块也会记下自己的前向调用次数。每个进程把自己看到的
情况发回父进程，父进程打印一份报告，每次运行都一样：每种设置下 ``layers[0]`` 是什么，这一步里块的
调用次数和 all-gather 次数，``named_parameters()`` 给出的名字和 ``get_model_state_dict`` 的键，
以及梯度是否与对照的设置相同。
"""

import os
import socket
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

WORLD_SIZE = 2
# FSDP 做 all-gather 时调用的函数：较新的版本给它改了名。
ALL_GATHER = "all_gather_single" if hasattr(dist, "all_gather_single") else "all_gather_into_tensor"
calls = []  # Block 每次前向调用记一项


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        calls.append(1)
        return x + self.norm(self.lin(x)).relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(2))
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


def is_block(module):
    return isinstance(module, Block)


def prepare(order, mesh):
    """新建一个 Net，按给定的顺序加梯度检查点并分片。"""
    torch.manual_seed(0)
    model = Net()
    if order == "wrap, then shard the wrappers":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=is_block)
        for layer in model.layers:  # 现在每一层都是一个 CheckpointWrapper
            fully_shard(layer, mesh=mesh)
    elif order == "wrap, then shard the blocks inside":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=is_block)
        for module in model.modules():  # 找到包装器里面的每个 Block
            if is_block(module):
                fully_shard(module, mesh=mesh)
    else:  # "shard only" 或 "shard, then wrap"
        for layer in model.layers:
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if order == "shard, then wrap":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=is_block)
    return model


def step(model, batch):
    """一次前向和反向传播；返回其间块的调用次数和 all-gather 次数。"""
    gathered = []
    original = getattr(dist, ALL_GATHER)

    def count(*args, **kwargs):
        gathered.append(1)
        return original(*args, **kwargs)

    calls.clear()
    setattr(dist, ALL_GATHER, count)
    try:
        model(batch).pow(2).mean().backward()
    finally:
        setattr(dist, ALL_GATHER, original)
    return len(calls), len(gathered)


def describe(module):
    """模块的类；如果它包着另一个模块，再加上那个模块的类。"""
    inner = getattr(module, "_checkpoint_wrapped_module", None)
    return type(module).__name__ + (f" around {type(inner).__name__}" if inner is not None else "")


def run(rank):
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    torch.manual_seed(1)
    batch = torch.randn(WORLD_SIZE, 8, 4)[rank]  # 每个 rank 用这批数据中属于自己的一半
    rows, reference = {}, None
    for order in ["shard only", "wrap, then shard the wrappers", "wrap, then shard the blocks inside",
                  "shard, then wrap"]:
        model = prepare(order, mesh)
        block_calls, all_gathers = step(model, batch)
        names = [name for name, _ in model.named_parameters()]
        grads = [p.grad.full_tensor() for p in model.parameters()]
        if reference is None:
            reference = grads
        rows[order] = {
            "layers[0]": describe(model.layers[0]),
            "calls": block_calls, "all-gathers": all_gathers,
            "names": names,
            "keys": list(get_model_state_dict(model)),
            "same grads": all(torch.equal(g, r) for g, r in zip(grads, reference)),
        }
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


def report(rows):
    plain = [name for name, _ in Net().named_parameters()]
    for order, row in rows[0].items():
        other = rows[1][order]
        counts = f"block calls {row['calls']}, all-gathers {row['all-gathers']}"
        if (row["calls"], row["all-gathers"]) == (other["calls"], other["all-gathers"]):
            counts += ", on each rank"
        else:
            counts += f" on rank 0; {other['calls']} and {other['all-gathers']} on rank 1"
        print(f"{order}:")
        print(f"  layers[0]: {row['layers[0]']}")
        print(f"  in the step: {counts}")
        print(f"  names of named_parameters() changed: {row['names'] != plain}")
        print(f"    first: {row['names'][0]}")
        print(f"  keys of get_model_state_dict() changed: {row['keys'] != plain}")
        print(f"  gradients as with shard only: {row['same grads'] and other['same grads']}")


def main():
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(free_port(), results), nprocs=WORLD_SIZE, start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows)


if __name__ == "__main__":
    main()
