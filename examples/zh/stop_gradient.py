"""SimSiam 式的对称损失，在目标一侧停止梯度。

编码器 ``f`` 把同一批数据的两个增强视图 ``x1``、``x2`` 映射为 ``z1``、``z2``，
预测器 ``h`` 再把它们映射为 ``p1``、``p2``。损失是
``D(p1, z2.detach()) / 2 + D(p2, z1.detach()) / 2``，其中 ``D`` 是负的余弦相似度。
对其中每一项，程序在停止梯度和不停止梯度两种情况下分别询问 autograd：
这一项把梯度传给了 ``z1`` 和 ``z2`` 中的哪一个。
"""

import torch
import torch.nn.functional as F


def negative_cosine(p: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    return -F.cosine_similarity(p, z, dim=-1).mean()


def reached(stop_gradient: bool) -> dict:
    torch.manual_seed(0)
    encoder = torch.nn.Linear(4, 3)
    predictor = torch.nn.Linear(3, 3)
    x = torch.randn(5, 4)
    x1, x2 = x + 0.1 * torch.randn(5, 4), x + 0.1 * torch.randn(5, 4)
    z1, z2 = encoder(x1), encoder(x2)
    p1, p2 = predictor(z1), predictor(z2)
    target = (lambda z: z.detach()) if stop_gradient else (lambda z: z)
    terms = {
        "D(p1, z2)": negative_cosine(p1, target(z2)) / 2,
        "D(p2, z1)": negative_cosine(p2, target(z1)) / 2,
    }
    rows = {}
    for name, term in terms.items():
        grads = torch.autograd.grad(term, (z1, z2), retain_graph=True, allow_unused=True)
        rows[name] = {"z1": grads[0] is not None, "z2": grads[1] is not None}
    loss = sum(terms.values())
    loss.backward()
    rows["encoder and predictor learn"] = encoder.weight.grad is not None and predictor.weight.grad is not None
    return rows


def main() -> None:
    for stop_gradient in (True, False):
        print("with z.detach():" if stop_gradient else "without it:")
        rows = reached(stop_gradient)
        for name in ("D(p1, z2)", "D(p2, z1)"):
            print(f"  {name} sends a gradient to  z1: {rows[name]['z1']!s:<5}  z2: {rows[name]['z2']}")
        print("  encoder and predictor get gradients:", rows["encoder and predictor learn"])


if __name__ == "__main__":
    main()
