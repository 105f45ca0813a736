"""直通估计器：前向传播时取整，反向传播时当作恒等映射。

``y = x + (torch.round(x) - x).detach()`` 的值与 ``torch.round(x)`` 相同，
但 autograd 只看到 ``x`` 加上一个常数，所以 ``y`` 对 ``x`` 的梯度处处为 1，
上游梯度原样穿过。单用 ``torch.round(x)`` 时梯度处处为 0，它前面的部分什么也学不到。
"""

import torch

X = [-1.6, -0.4, 0.2, 0.5, 0.7, 1.5, 2.5]


def straight_through_round(x: torch.Tensor) -> torch.Tensor:
    return x + (torch.round(x) - x).detach()


def forward_and_grad(fn, upstream: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor(X, requires_grad=True)
    y = fn(x)
    (y * upstream).sum().backward()
    return y.detach(), x.grad


def main() -> None:
    torch.manual_seed(0)
    upstream = torch.randn(len(X))
    y_round, grad_round = forward_and_grad(torch.round, upstream)
    y_st, grad_st = forward_and_grad(straight_through_round, upstream)
    print("x:                        ", torch.tensor(X))
    print("straight-through forward: ", y_st)
    print("equal to torch.round(x):  ", torch.equal(y_st, y_round))
    print("dy/dx, straight-through:  ", forward_and_grad(straight_through_round, torch.ones(len(X)))[1])
    print("dy/dx, torch.round:       ", forward_and_grad(torch.round, torch.ones(len(X)))[1])
    print("upstream gradient passes through unchanged:", torch.equal(grad_st, upstream))
    print("through torch.round it becomes zero:       ", torch.equal(grad_round, torch.zeros(len(X))))


if __name__ == "__main__":
    main()
