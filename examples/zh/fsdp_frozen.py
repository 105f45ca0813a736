"""真实运行 FSDP2（``fully_shard``）和 FSDP1，看冻结参数会怎样。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，
用 Adam 把同一个由 ``body`` 和 ``head`` 组成的小模型训练几步，共八种设置：

- FSDP2：冻结的 body 单独作为一个分片单元；整个模型作为一个单元，冻结参数和可训练参数放在一起；
  另有一种设置在调用 ``fully_shard`` 之前就创建了优化器，创建得太早；
- FSDP1（``FullyShardedDataParallel``）：整个模型作为一个单元，分别不加和加上
  ``use_orig_params=True``；以及把冻结的 body 单独包装；
- FSDP1：只冻结 body 的第一层，body 作为一个单元包装，分别不加和加上 ``use_orig_params=True``。

每个进程把自己看到的情况发回父进程，父进程打印一份报告，每次运行都一样：包装和训练时出现的错误
和警告（各自的第一行折行显示）；参数的类型和 Adam 状态的类型；每个参数一行，写明它是否冻结、
它在每个进程上的分片形状，以及它在哪些进程上拿到了梯度、Adam 在哪些进程上为它保存了状态；
然后是冻结参数和可训练参数是否变了，完整权重在两个进程之间是否一致，
以及是否与单个进程用每批数据的两半训练一个未分片副本得到的权重一致。
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
    # 不传 device_id 时，FSDP1 会去找加速器，找不到就拒绝运行。
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
    """完整（未分片）的权重，以原来的参数名为键，值为列表。"""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return full_weights(model.module)
    return {clean(name): (p.full_tensor() if isinstance(p, DTensor) else p).tolist()
            for name, p in model.named_parameters()}


def shape(t):
    return "x".join(map(str, t.shape)) or "1"


def train(rank, wrap, frozen="body", early=False):
    """新建一个 Net，用 ``wrap`` 包装后训练 STEPS 步，返回本 rank 看到的情况。"""
    torch.manual_seed(0)  # 两个 rank 的初始权重相同
    model = Net()
    model.get_submodule(frozen).requires_grad_(False)
    if early:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    reference = copy.deepcopy(model)
    torch.manual_seed(1)
    data = torch.randn(STEPS, WORLD_SIZE, 8, 4)  # 每个 rank 用其中属于自己的那一份训练
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
            results.put((rank, name, train(rank, **setup)))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="    "):
    """打印一条信息：第一行折行，其余各行原样输出。"""
    first, *rest = message.splitlines()
    for line in textwrap.wrap(first, 66) + rest:
        print(indent + line)


def ranks(found):
    """用文字说明在哪里找到：两个 rank 上都有、只在一个 rank 上，或者哪里都没有（""）。"""
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
