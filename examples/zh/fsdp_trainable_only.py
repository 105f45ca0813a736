"""只保存可训练的状态：一次 body 被冻结的 FSDP2（``fully_shard``）训练。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，用 Adam 把一个小模型
（冻结的 ``body`` 加上可训练的 ``head``）训练三步，然后用 ``torch.distributed.checkpoint``（DCP）
保存两次，每次保存到一个临时目录里：一次保存全部内容，一次经由带 ``StateDictOptions(ignore_frozen_params=True)``
的 ``get_model_state_dict`` 和 ``get_optimizer_state_dict`` 只保存可训练的状态。接着新建一个模型，
body 来自同一份预训练权重，head 是新的，在四种设置下加载只含可训练状态的检查点，再训练三步：
经由用同一个选项生成的状态字典加载，``set_model_state_dict`` 分别用默认选项和 ``strict=False``；
经由新模型完整的状态字典加载，分别不加和加上 ``allow_partial_load=True``。

每个进程把自己看到的情况发回父进程，父进程打印一份报告，每次运行都一样：每个检查点的键、每个进程
的状态字典里的张量个数和数值个数、文件的字节数以及其中数值所占的字节数；对每种设置，打印出现的错误、
``set_model_state_dict`` 报告缺失的键、head 是否等于保存时的权重、body 是否仍是预训练权重，
以及再训练三步之后的权重是否与连续训练六步的相同。
"""

import os
import socket
import tempfile
import textwrap
import warnings
from datetime import timedelta
from pathlib import Path

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
from torch.distributed.tensor import DTensor

WORLD_SIZE = 2
STEPS = 3
TRAINABLE = StateDictOptions(ignore_frozen_params=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


SETUPS = {
    "load trainable keys, set_model_state_dict's defaults": dict(),
    "load trainable keys, strict=False": dict(options=StateDictOptions(strict=False)),
    "load all keys": dict(full=True),
    "load all keys, allow_partial_load=True": dict(
        full=True, planner=DefaultLoadPlanner(allow_partial_load=True)),
}


def build(head_seed=None):
    """新建一个 Net：body 是预训练权重（种子 0）并冻结，用 fully_shard 分片，连同它的 Adam 一起返回。

    给出 head_seed 时，head 用这个种子重新初始化。"""
    torch.manual_seed(0)
    model = Net()
    if head_seed is not None:
        torch.manual_seed(head_seed)
        model.head.reset_parameters()
    model.body.requires_grad_(False)
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


def tensors(state_dict):
    """一个（嵌套的）状态字典里的张量，DTensor 原样返回。"""
    if isinstance(state_dict, dict):
        return [t for value in state_dict.values() for t in tensors(value)]
    if isinstance(state_dict, list):
        return [t for value in state_dict for t in tensors(value)]
    if isinstance(state_dict, torch.Tensor):
        return [state_dict]
    return []


def nbytes(held):
    return sum(t.numel() * t.element_size() for t in held)


def save(model, optimizer, directory, options=None):
    state_dict = {"model": get_model_state_dict(model, options=options),
                  "optim": get_optimizer_state_dict(model, optimizer, options=options)}
    dcp.save(state_dict, checkpoint_id=directory)
    held = tensors(state_dict)
    # 每个 DTensor，本进程只持有自己的分片；其余的张量（Adam 的 step）则和另一个进程一样完整持有。
    # DCP 写下每个进程的分片，完整的张量只写一次。
    shards = [t.to_local() for t in held if isinstance(t, DTensor)]
    whole = [t for t in held if not isinstance(t, DTensor)]
    return {"model": list(state_dict["model"]), "optim": list(state_dict["optim"]["state"]),
            "params": state_dict["optim"]["param_groups"][0]["params"],
            "tensors": len(held), "numbers": sum(t.numel() for t in shards + whole),
            "shard bytes": nbytes(shards), "whole bytes": nbytes(whole)}


def resume(directory, batches, reference, pretrained, full=False, planner=None, options=None):
    """把只含可训练状态的检查点加载到新模型里，再接着训练。"""
    model, optimizer = build(head_seed=5)
    state_dict = {"model": get_model_state_dict(model, options=None if full else TRAINABLE),
                  "optim": get_optimizer_state_dict(model, optimizer)}
    row = {}
    try:
        dcp.load(state_dict, checkpoint_id=directory, planner=planner)
        missing = set_model_state_dict(model, state_dict["model"], options=options).missing_keys
        set_optimizer_state_dict(model, optimizer, state_dict["optim"])
    except (RuntimeError, CheckpointException) as error:
        if isinstance(error, CheckpointException):
            # DCP 把每个 rank 的错误收集到同一个异常里
            row["ranks"] = sorted(error.failures)
            error = error.failures[0][0]
        row["error"] = f"{type(error).__name__}: {error}"
        return row
    row["missing"] = missing
    weights = full_weights(model)
    row["head as saved"] = all(torch.equal(weights[n], w) for n, w in reference["saved"].items()
                               if n.startswith("head"))
    row["body as pretrained"] = all(torch.equal(weights[n], w) for n, w in pretrained.items()
                                    if n.startswith("body"))
    train(model, optimizer, batches)
    after = full_weights(model)
    row["as uninterrupted"] = all(torch.allclose(after[n], w) for n, w in reference["end"].items())
    return row


def run(rank, directories):
    torch.manual_seed(1)
    data = torch.randn(2 * STEPS, WORLD_SIZE, 8, 4)[:, rank]  # 每个 rank 用其中属于自己的那一份训练
    first, last = data[:STEPS], data[STEPS:]

    model, optimizer = build()
    pretrained = full_weights(model)
    train(model, optimizer, first)
    reference = {"saved": full_weights(model)}
    rows = {"saved": {"everything": save(model, optimizer, directories["everything"]),
                      "trainable only": save(model, optimizer, directories["trainable only"],
                                             options=TRAINABLE)}}
    train(model, optimizer, last)
    reference["end"] = full_weights(model)
    dist.barrier()
    for name, directory in directories.items():
        rows["saved"][name]["bytes"] = sum(f.stat().st_size for f in Path(directory).iterdir())
    for name, setup in SETUPS.items():
        rows[name] = resume(directories["trainable only"], last, reference, pretrained, **setup)
        dist.barrier()
    return rows


def worker(rank, port, directories, results):
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
            rows = run(rank, directories)
        rows["saved"]["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        results.put((rank, rows))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(message, indent="    "):
    """逐行折行打印一条信息，去掉行首用来缩进的制表符。"""
    for line in message.splitlines():
        for part in textwrap.wrap(line.strip(), 60):
            print(indent + part)


def each_rank(value, other):
    return f"{value} on each rank" if value == other else f"{value} on rank 0, {other} on rank 1"


def report(rows):
    print(f"saved after {STEPS} steps, body frozen:")
    for name in ("everything", "trainable only"):
        saved, other = rows[0]["saved"][name], rows[1]["saved"][name]
        print(f"  {name}:")
        print(f"    model keys: {', '.join(saved['model'])}")
        print(f"    optimizer state keys: {', '.join(saved['optim'])}")
        print(f"    optimizer group params: {len(saved['params'])} names")
        print(f"    state dict tensors: {each_rank(saved['tensors'], other['tensors'])}")
        print(f"    numbers in them: {each_rank(saved['numbers'], other['numbers'])}")
        print(f"    files: {saved['bytes'] / 1000:.0f} kB, of which the numbers"
              f" {saved['shard bytes'] + other['shard bytes'] + saved['whole bytes']} bytes")
    warned = rows[0]["saved"]["warnings"]
    print(f"  warnings: {len(warned) or 'none'}")
    for warning in warned:
        show(warning)
    for name in SETUPS:
        row, other = rows[0][name], rows[1][name]
        print(f"{name}:")
        if "error" in row:
            if "ranks" in row:
                print(f"  CheckpointException, failed ranks {row['ranks']}:")
            else:
                print(f"  raised {'on both ranks' if other.get('error') == row['error'] else 'on rank 0'}:")
            show(row["error"])
            continue
        print(f"  missing keys: {', '.join(row['missing']) or 'none'}")
        print(f"  head as saved: {row['head as saved'] and other['head as saved']};"
              f" body as pretrained: {row['body as pretrained'] and other['body as pretrained']}")
        print(f"  after {STEPS} more steps, as uninterrupted:"
              f" {row['as uninterrupted'] and other['as uninterrupted']}")


def main():
    # 用 "fork" 启动，程序粘贴到 notebook 里也能运行；用 spawn 则必须从文件中导入 worker()。
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    with tempfile.TemporaryDirectory() as everything, tempfile.TemporaryDirectory() as trainable:
        directories = {"everything": everything, "trainable only": trainable}
        mp.start_processes(worker, args=(free_port(), directories, results), nprocs=WORLD_SIZE,
                           start_method="fork")
    rows = {}
    while not results.empty():
        rank, row = results.get()
        rows[rank] = row
    report(rows)


if __name__ == "__main__":
    main()
