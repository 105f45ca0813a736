"""把损失记入日志，又不让日志留住计算图：实测。

一个小模型跑五个批次，每个批次之后把损失按三种方式之一记入日志：
张量本身、``loss.item()`` 或 ``loss.detach()``。然后程序测量日志留住了什么：
从日志里的值出发能到达的 autograd 节点，以及这些计算图为反向传播保存、
至今仍然持有的张量。保存的张量借助 ``torch.autograd.graph.saved_tensors_hooks`` 观察；
模型的参数不计在内，因为它们无论如何都会一直存在。程序对两种循环各测一遍：
训练循环里的 ``backward()`` 会释放每张计算图保存的张量（但不释放节点）；
评估循环没有放在 ``torch.no_grad()`` 下，其中没有任何东西释放这些张量。
"""

import weakref

import torch
import torch.nn.functional as F

BATCHES, BATCH, WIDTH = 5, 64, 256

LOGGERS = {
    "loss": lambda loss: loss,
    "loss.item()": lambda loss: loss.item(),
    "loss.detach()": lambda loss: loss.detach(),
}


class Packed:
    """计算图存进去的不是要保存的张量本身，而是这个对象，这样就能看到它何时被释放。

    它保存的是 ``tensor.detach()``，而不是 ``tensor``：如果一个张量正是保存它的
    那个节点的输出，直接保存这个张量，节点就会经由张量的 ``grad_fn`` 引用到自己，
    形成任何垃圾回收都打不破的循环引用（``saved_tensors_hooks`` 的文档对此有警告）。
    """

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach()


class SavedTensorMeter:
    """在钩子生效期间跟踪为反向传播保存的张量，传入的参数除外。"""

    def __init__(self, parameters) -> None:
        self.parameters = {p.untyped_storage().data_ptr() for p in parameters}
        self.live = weakref.WeakSet()

    def pack(self, tensor: torch.Tensor) -> Packed:
        packed = Packed(tensor)
        if tensor.untyped_storage().data_ptr() not in self.parameters:
            self.live.add(packed)
        return packed

    def unpack(self, packed: Packed) -> torch.Tensor:
        return packed.tensor

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def bytes_held(self) -> int:
        storages = {p.tensor.untyped_storage().data_ptr(): p.tensor.untyped_storage().nbytes() for p in self.live}
        return sum(storages.values())


def count_nodes(log: list) -> int:
    seen = set()
    stack = [entry.grad_fn for entry in log if isinstance(entry, torch.Tensor)]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def run(loop: str, logger) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh(), torch.nn.Linear(WIDTH, 1))
    meter = SavedTensorMeter(model.parameters())
    log = []
    for _ in range(BATCHES):
        x, y = torch.randn(BATCH, WIDTH), torch.randn(BATCH, 1)
        with meter.hooks():
            loss = F.mse_loss(model(x), y)
        if loop == "train":
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
        log.append(logger(loss))
        del x, y, loss
    return {"graph nodes": count_nodes(log), "saved tensors": len(meter.live), "saved bytes": meter.bytes_held()}


def main() -> None:
    print(f"{'loop':<6} {'logged as':<14} {'graph nodes':>11} {'saved tensors':>13} {'saved bytes':>11}")
    for loop in ("train", "eval"):
        for name, logger in LOGGERS.items():
            row = run(loop, logger)
            print(f"{loop:<6} {name:<14} {row['graph nodes']:>11} {row['saved tensors']:>13} {row['saved bytes']:>11}")


if __name__ == "__main__":
    main()
