"""真实运行：保存并恢复一次 body 被冻结的 FSDP2（``fully_shard``）训练。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，用 Adam 把同一个小模型
（冻结的 ``body`` 加上可训练的 ``head``）训练三步，然后经由 ``get_model_state_dict`` 和
``get_optimizer_state_dict``，用 ``torch.distributed.checkpoint``（DCP）把分片的模型和优化器
保存到一个临时目录里。接着用另一组初始权重新建模型和优化器，通过 ``dcp.load``、``set_model_state_dict``
和 ``set_optimizer_state_dict`` 加载检查点，再训练三步。共五种设置：body 仍然冻结；body 解冻后
严格加载；body 解冻，加上 ``allow_partial_load=True``；body 解冻，并把 body 的条目排除在加载之外，
分别不加和加上 ``strict=False``。

每个进程把自己看到的情况发回父进程，父进程打印一份报告，每次运行都一样：保存下来的优化器状态字典
有哪些键，并与普通的 ``optimizer.state_dict()`` 对照；对每种恢复的设置，打印出现的错误、
``get_optimizer_state_dict`` 为新优化器造出的 Adam 状态（即它的步数）、加载之后和再训练三步之后的状态，
以及最终的权重是否与一次从未中断的训练相同：body 保持冻结时，对照的是连续训练六步；
body 解冻时，对照的是在第三步之后解冻 body 的那次训练。
"""

import os
import socket
import tempfile
import textwrap
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.checkpoint import DefaultLoadPlanner
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

WORLD_SIZE = 2
STEPS = 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


SETUPS = {
    "resumed, body frozen": dict(frozen=True),
    "resumed, body unfrozen": dict(),
    "resumed, body unfrozen, allow_partial_load=True": dict(
        planner=DefaultLoadPlanner(allow_partial_load=True)),
    "resumed, body unfrozen, body entries dropped": dict(drop="body"),
    "resumed, body unfrozen, body entries dropped, strict=False": dict(
        drop="body", options=StateDictOptions(strict=False)),
}


def build(seed, frozen):
    """用给定种子新建一个 Net（body 冻结或不冻结），用 fully_shard 分片，连同它的 Adam 一起返回。"""
    torch.manual_seed(seed)
    model = Net()
    model.body.requires_grad_(not frozen)
    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    fully_shard(model.body, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.Adam(model.parameters(), lr=0.1)


def train(model, optimizer, batches):
    for batch in batches:
        optimizer.zero_grad()
        model(batch).pow(2).mean().backward()
        optimizer.step()


def full_weights(model):
    return {name: p.full_tensor() for name, p in model.named_parameters()}


def steps(model, optimizer):
    """Adam 为每个参数记下的步数，以参数名为键；没有为它保存状态的参数记为 None。"""
    return {name: int(optimizer.state[p]["step"]) if p in optimizer.state else None
            for name, p in model.named_parameters()}


def resume(directory, batches, reference, frozen=False, drop=None, planner=None, options=None):
    model, optimizer = build(seed=5, frozen=frozen)
    state_dict = {"model": get_model_state_dict(model),
                  "optim": get_optimizer_state_dict(model, optimizer)}
    row = {"made": steps(model, optimizer)}
    if drop:
        state = state_dict["optim"]["state"]
        state_dict["optim"]["state"] = {k: v for k, v in state.items() if not k.startswith(drop)}
    try:
        dcp.load(state_dict, checkpoint_id=directory, planner=planner)
        set_model_state_dict(model, state_dict["model"])
        set_optimizer_state_dict(model, optimizer, state_dict["optim"], options=options)
    except (RuntimeError, KeyError, CheckpointException) as error:
        if isinstance(error, CheckpointException):
            # DCP 把每个 rank 的错误收集到同一个异常里
            row["ranks"] = sorted(error.failures)
            error = error.failures[0][0]
        row["error"] = f"{type(error).__name__}: {error}"
        return row
    row["loaded"] = steps(model, optimizer)
    train(model, optimizer, batches)
    row["trained"] = steps(model, optimizer)
    after = full_weights(model)
    row["as uninterrupted"] = all(torch.allclose(after[n], w) for n, w in reference.items())
    return row


def run(rank, directory):
    torch.manual_seed(1)
    data = torch.randn(2 * STEPS, WORLD_SIZE, 8, 4)[:, rank]  # 每个 rank 用其中属于自己的那一份训练
    first, last = data[:STEPS], data[STEPS:]
    references = {}
    for frozen in (True, False):
        model, optimizer = build(seed=0, frozen=True)
        train(model, optimizer, first)
        model.body.requires_grad_(not frozen)
        train(model, optimizer, last)
        references[frozen] = full_weights(model)

    model, optimizer = build(seed=0, frozen=True)
    train(model, optimizer, first)
    optim = get_optimizer_state_dict(model, optimizer)
    dcp.save({"model": get_model_state_dict(model), "optim": optim}, checkpoint_id=directory)
    plain = optimizer.state_dict()
    rows = {"saved": {
        "model": [type(v).__name__ for v in get_model_state_dict(model).values()],
        "state": list(optim["state"]),
        "entries": sorted({key for s in optim["state"].values() for key in s}),
        "params": optim["param_groups"][0]["params"],
        "plain state": list(plain["state"]),
        "plain params": plain["param_groups"][0]["params"],
    }}
    for name, setup in SETUPS.items():
        rows[name] = resume(directory, last, references[setup.get("frozen", False)], **setup)
        dist.barrier()
    return rows


def worker(rank, port, directory, results):
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
            rows = run(rank, directory)
        rows["saved"]["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        results.put((rank, rows))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="    "):
    """打印一条信息：第一行折行，其余各行原样输出。"""
    first, *rest = message.splitlines()
    for line in textwrap.wrap(first, 56) + rest:
        print(indent + line)


def by_module(counts):
    """用文字写出步数；一个模块的所有参数步数相同时，这个模块只写一项。"""
    parts = []
    for module in ("body", "head"):
        mine = {name: n for name, n in counts.items() if name.startswith(module)}
        if len(set(mine.values())) == 1:
            n = next(iter(mine.values()))
            parts.append(f"{module} {'none' if n is None else f'step {n}'}")
        else:
            parts += [f"{name} {'none' if n is None else f'step {n}'}" for name, n in mine.items()]
    return "; ".join(parts)


def report(rows):
    saved = rows[0]["saved"]
    print(f"saved after {STEPS} steps, body frozen:")
    print(f"  model state dict: {len(saved['model'])} tensors,"
          f" {' '.join(sorted(set(saved['model'])))}")
    print(f"  optim state keys: {', '.join(saved['state'])}")
    print(f"  entries: {', '.join(saved['entries'])}")
    print(f"  group params: {len(saved['params'])} names")
    show(", ".join(saved["params"]))
    print(f"  plain state keys: {saved['plain state']}")
    print(f"  plain group params: {saved['plain params']}")
    print(f"  warnings: {len(saved['warnings']) or 'none'}")
    for warning in saved["warnings"]:
        show(warning)
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        print(f"  made before loading: {by_module(row['made'])}")
        if "error" in row:
            if "ranks" in row:
                print(f"  CheckpointException, failed ranks {row['ranks']}:")
            else:
                print(f"  raised {'on both ranks' if other.get('error') == row['error'] else 'on rank 0'}:")
            show(row["error"])
            continue
        print(f"  after loading: {by_module(row['loaded'])}")
        print(f"  after {STEPS} more steps: {by_module(row['trained'])}")
        print(f"  as uninterrupted: {row['as uninterrupted'] and other['as uninterrupted']}")


def main():
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    with tempfile.TemporaryDirectory() as directory:
        mp.start_processes(worker, args=(free_port(), directory, results), nprocs=WORLD_SIZE,
                           start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows)


if __name__ == "__main__":
    main()
