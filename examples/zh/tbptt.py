"""截断的时间反向传播：段与段之间执行与不执行 ``hidden.detach()`` 的对比。

一个 RNN 单元把长 12 步的序列按每段 4 步读入，每读完一段就做一次反向传播。
程序对每一段统计从这段损失出发能到达的 autograd 节点数，
并记下这次反向传播到达了哪些时间步（每一步的隐藏状态上都挂着钩子，梯度一到就记一笔）。
段与段之间执行 ``hidden = hidden.detach()`` 时，每段的节点数都一样，
每次反向传播也只到达本段的四个时间步。
不执行时，计算图一直回溯到第 0 步，每过一段就长大一截；而且除非第一次反向传播
保留了计算图（``retain_graph=True``），否则第二次反向传播会失败。
"""

import torch

STEPS, CHUNK, SIZE = 12, 4, 3


def count_nodes(tensor: torch.Tensor) -> int:
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def run(detach: bool, retain_graph: bool = True) -> list[dict]:
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(SIZE, SIZE)
    inputs = torch.randn(STEPS, 1, SIZE)
    targets = torch.randn(STEPS, 1, SIZE)
    hidden = torch.zeros(1, SIZE)
    reached = []
    rows = []
    for start in range(0, STEPS, CHUNK):
        if detach:
            hidden = hidden.detach()
        loss = torch.zeros(())
        for step in range(start, start + CHUNK):
            hidden = cell(inputs[step], hidden)
            hidden.register_hook(lambda grad, step=step: reached.append(step))
            loss = loss + (hidden - targets[step]).pow(2).mean()
        reached.clear()
        cell.zero_grad()
        nodes = count_nodes(loss)
        loss.backward(retain_graph=retain_graph)
        rows.append({"steps": (start, start + CHUNK - 1), "nodes": nodes, "reached": sorted(reached)})
    return rows


def without_retain_graph() -> str:
    try:
        run(detach=False, retain_graph=False)
    except RuntimeError as error:
        return "RuntimeError: " + str(error).split(" (")[0]
    return "no error"


def main() -> None:
    for detach in (True, False):
        print("with hidden.detach():" if detach else "without detach (retain_graph=True):")
        # 分离之后，各段的反向传播不会再走进旧的计算图，所以只有不分离的那次运行需要保留计算图。
        for row in run(detach, retain_graph=not detach):
            first, last = row["steps"]
            reached = row["reached"]
            print(f"  chunk {first:>2}-{last:<2}  nodes {row['nodes']:>3}  backward reached steps {reached[0]}-{reached[-1]}")
    print("without detach or retain_graph:", without_retain_graph())


if __name__ == "__main__":
    main()
