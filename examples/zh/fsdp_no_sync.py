"""真实运行 FSDP2 和 FSDP1 下的梯度累积，分别保持和关掉梯度同步。

两个进程由 ``torch.multiprocessing`` 启动，在 CPU 上通过 gloo 后端连在一起，训练同一个小模型（整体作为一个单元分片），
共两次优化器更新，每次四个微批次，每个微批次的损失都除以四。共九种设置：

- FSDP2（``fully_shard``）：每个微批次都同步梯度；用 ``set_requires_gradient_sync(False)``
  让每次更新只在最后一个微批次同步；一直关掉同步；
- FSDP2，只在最后一个微批次同步，并在微批次之间保留完整参数：除最后一个微批次外都调用
  ``set_reshard_after_backward(False)``；每个微批次都传 ``False``，每次优化器更新之前调用
  ``reshard()``；每个微批次都传 ``False``，但不调用 ``reshard()``。
- FSDP1（``FullyShardedDataParallel``）：不用 ``no_sync()``；每次更新的前三个微批次放进
  ``no_sync()``；只把这三个微批次的反向传播放进去。

程序给 FSDP 调用的 reduce-scatter 函数和 all-gather 函数各套了一层包装，统计每个微批次做了几次
reduce-scatter，对 FSDP2 还统计做了几次 all-gather。
每个进程通过队列把自己看到的情况发回父进程，父进程打印一份报告，每次运行都一样：先是模型的大小，
然后对每种设置打印每个微批次的 reduce-scatter 次数（以及 all-gather 次数）、第一个微批次之后 rank 0 持有多少个梯度数值、
权重是否变了、训练结束时两个进程的权重是否相同，以及 rank 0 的权重在舍入误差范围内
是否与同一种 FSDP 的第一种设置的相同，是否与单个进程一次用两个进程的全部数据训练得到的相同。
"""

import os  # noqa: I001  导入顺序与各版本记录时一致，下次改代码时再排序
import socket
from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

WORLD_SIZE = 2
STEPS = 2
ACCUM = 4
BATCH = 2  # 每个进程每个微批次的样本数
# FSDP 做 reduce-scatter 和 all-gather 时调用的函数：较新的版本给它们改了名。
REDUCE_SCATTER = "reduce_scatter_single" if hasattr(dist, "reduce_scatter_single") else "reduce_scatter_tensor"
ALL_GATHER = "all_gather_single" if hasattr(dist, "all_gather_single") else "all_gather_into_tensor"


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def data(rank):
    """一个进程的全部微批次：各 rank 互不相同，每次运行都一样。"""
    generator = torch.Generator().manual_seed(1 + rank)
    return [(torch.randn(BATCH, 4, generator=generator), torch.randn(BATCH, 1, generator=generator))
            for _ in range(STEPS * ACCUM)]


def full_weights(model):
    """完整（未分片）的权重，以列表返回。"""
    if isinstance(model, FSDP):
        with FSDP.summon_full_params(model):
            return [p.tolist() for p in model.parameters()]
    # 没有重新分片的模型列出的是完整参数，而不是优化器更新过的分片。
    model.reshard()
    return [p.full_tensor().tolist() for p in model.parameters()]


def held(model):
    """本 rank 持有多少个梯度数值。等待同步的梯度，FSDP2 藏在内部，从外面看不到，
    FSDP1 放在它的扁平参数里，所以这里要读取 FSDP 的内部属性，而这些名字在不同版本之间会变。"""
    if isinstance(model, FSDP):
        grads = [model._flat_param.grad]
    else:
        state = model._get_fsdp_state()
        groups = getattr(state, "_fsdp_param_groups", None) or [state._fsdp_param_group]
        params = [p for group in groups for p in group.fsdp_params]
        grads = [p.sharded_param.grad for p in params]
        grads += [p.unsharded_param.grad for p in params if hasattr(p, "_unsharded_param")]
    return sum((g.to_local() if isinstance(g, DTensor) else g).numel() for g in grads if g is not None)


def train(rank, fsdp, sync, reshard="every"):
    """用 ``fsdp``（"FSDP2" 或 "FSDP1"）训练；``sync`` 指明哪些微批次同步梯度，
    ``reshard`` 指明 FSDP2 何时释放完整参数：每次反向传播之后（"every"）、每次更新的最后一次
    反向传播之后（"last"）、更新之前调用 ``reshard()``（"before the step"），或者从不（"never"）。"""
    reduced, gathered = [], []  # 每个微批次期间发起的集合通信次数
    originals = {name: getattr(dist, name) for name in (REDUCE_SCATTER, ALL_GATHER)}

    def counter(name, counts):
        def count(*args, **kwargs):
            counts[-1] += 1
            return originals[name](*args, **kwargs)
        return count

    model = make_model()
    if fsdp == "FSDP2":
        model = fully_shard(model, mesh=init_device_mesh("cpu", (WORLD_SIZE,)))
    else:
        # 不传 device_id 时，FSDP1 会去找加速器，找不到就拒绝运行。
        model = FSDP(model, device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = iter(data(rank))
    initial = full_weights(model)
    setattr(dist, REDUCE_SCATTER, counter(REDUCE_SCATTER, reduced))
    setattr(dist, ALL_GATHER, counter(ALL_GATHER, gathered))
    try:
        for _ in range(STEPS):
            optimizer.zero_grad()
            for micro in range(ACCUM):
                x, y = next(batches)
                reduced.append(0)
                gathered.append(0)
                local = sync == "never" or (sync != "every" and micro < ACCUM - 1)
                last = micro == ACCUM - 1
                if fsdp == "FSDP2":
                    model.set_requires_gradient_sync(not local)
                    # 这次反向传播之后释放完整参数，还是留着？
                    if reshard != "every":
                        model.set_reshard_after_backward(reshard == "last" and last)
                    loss = nn.functional.mse_loss(model(x), y) / ACCUM
                    loss.backward()
                elif sync == "backward only":
                    loss = nn.functional.mse_loss(model(x), y) / ACCUM
                    with model.no_sync() if local else nullcontext():
                        loss.backward()
                else:
                    with model.no_sync() if local else nullcontext():
                        loss = nn.functional.mse_loss(model(x), y) / ACCUM
                        loss.backward()
                if len(reduced) == 1:
                    first = held(model)
            if reshard == "before the step":  # 每个 FSDP 模块、每个 rank 上都要调用
                for module in model.modules():
                    if isinstance(module, FSDPModule):
                        module.reshard()
            optimizer.step()
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)
    # FSDP2 仍然持有的完整参数：下一次前向传播就用它们计算。
    full = [p.tolist() for p in model.parameters() if not isinstance(p, DTensor)]
    kept = "none"
    if fsdp == "FSDP2" and full:
        kept = "the initial weights" if full == initial else "other weights"
    weights = full_weights(model)
    return {"reduced": reduced, "gathered": gathered, "kept": kept, "held": first,
            "moved": weights != initial, "weights": weights}


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
    "FSDP2, sync every micro-batch": ("FSDP2", "every"),
    "FSDP2, sync the last only": ("FSDP2", "all but the last"),
    "FSDP2, sync never": ("FSDP2", "never"),
    "FSDP2, sync and reshard after the last only": ("FSDP2", "all but the last", "last"),
    "FSDP2, sync the last only, reshard() before the step": ("FSDP2", "all but the last", "before the step"),
    "FSDP2, sync the last only, reshard never": ("FSDP2", "all but the last", "never"),
    "FSDP1, without no_sync": ("FSDP1", "every"),
    "FSDP1, no_sync for all but the last": ("FSDP1", "all but the last"),
    "FSDP1, no_sync around backward only": ("FSDP1", "backward only"),
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
            results.put((rank, name, train(rank, *setup)))
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


def per_step(counts):
    """每个微批次的次数，各次优化器更新之间用竖线隔开："1 0 0 0 | 1 0 0 0"。"""
    steps = [counts[i:i + ACCUM] for i in range(0, STEPS * ACCUM, ACCUM)]
    return " | ".join(" ".join(map(str, s)) for s in steps)


def report(rows):
    print("numbers in the model:", sum(len(torch.tensor(p).flatten()) for p in rows[0]["one process"]["weights"]))
    reference = rows[0]["one process"]["weights"]
    for name, (fsdp, sync, *_) in SETUPS.items():
        row, other = rows[0][name], rows[1][name]
        first = rows[0][next(n for n, (f, *_) in SETUPS.items() if f == fsdp)]["weights"]
        print(f"{name}:")
        print("  reduce-scatters per micro-batch:", per_step(row["reduced"]))
        if fsdp == "FSDP2":
            print("  all-gathers per micro-batch:", per_step(row["gathered"]))
            print("  full parameters still gathered after the last step:", row["kept"])
        print("  gradient numbers held after micro-batch 1:", row["held"])
        print("  weights moved:", row["moved"])
        print("  same weights on both ranks:", row["weights"] == other["weights"])
        if sync != "every":
            print("  allclose to syncing every one:", close(row["weights"], first))
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
