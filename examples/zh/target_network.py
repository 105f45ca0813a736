"""在 ``torch.no_grad()`` 下跟随在线网络移动的目标网络（EMA 教师网络）。

在线网络靠梯度下降学习。目标网络一开始是在线网络的副本，参数不要求梯度，
此后只按在线参数的指数移动平均更新，即 ``p_t = m * p_t + (1 - m) * p``，
在 ``torch.no_grad()`` 下原地计算。程序检查在线网络的反向传播和 SGD 步骤
没有碰到目标网络，检查这次更新恰好让目标网络按平均值移动，
最后看看不加 ``torch.no_grad()`` 时同样的更新会造成什么结果。
"""

import copy

import torch
import torch.nn.functional as F

MOMENTUM = 0.9


def make_networks() -> tuple[torch.nn.Linear, torch.nn.Linear]:
    torch.manual_seed(0)
    online = torch.nn.Linear(3, 2)
    target = copy.deepcopy(online).requires_grad_(False)
    return online, target


def ema_update(target: torch.nn.Module, online: torch.nn.Module, m: float = MOMENTUM) -> None:
    with torch.no_grad():
        for p_t, p in zip(target.parameters(), online.parameters()):
            p_t.mul_(m).add_((1 - m) * p)


def snapshot(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def train_step() -> dict:
    online, target = make_networks()
    x = torch.randn(8, 3)
    view = x + 0.1 * torch.randn(8, 3)
    target_before, online_before = snapshot(target), snapshot(online)
    prediction, goal = online(x), target(view)
    loss = F.mse_loss(prediction, goal)
    loss.backward()
    with torch.no_grad():
        for p in online.parameters():
            p -= 0.5 * p.grad
    target_after_step = snapshot(target)
    ema_update(target, online)
    expected = [MOMENTUM * t + (1 - MOMENTUM) * p for t, p in zip(target_after_step, online.parameters())]
    return {
        "target params require grad": any(p.requires_grad for p in target.parameters()),
        "target output requires grad": goal.requires_grad,
        "target grads after backward": [p.grad for p in target.parameters()],
        "target unchanged by step": all(map(torch.equal, target_before, target_after_step)),
        "online changed by step": not any(map(torch.equal, online_before, snapshot(online))),
        "target moved by ema_update": not any(map(torch.equal, target_before, snapshot(target))),
        "target == m*t + (1-m)*p": all(torch.allclose(t, e) for t, e in zip(target.parameters(), expected)),
    }


def update_without_no_grad() -> dict:
    online, target = make_networks()
    m = MOMENTUM
    for p_t, p in zip(target.parameters(), online.parameters()):
        p_t.mul_(m).add_((1 - m) * p)
    return {
        "requires_grad": target.weight.requires_grad,
        "is_leaf": target.weight.is_leaf,
        "grad_fn": target.weight.grad_fn.name(),
        "output requires_grad": target(torch.randn(8, 3)).requires_grad,
    }


def main() -> None:
    for name, value in train_step().items():
        print(f"{name + ':':<30}", value)
    print("the same update without torch.no_grad(), then the target's weight and output:")
    print("  " + ", ".join(f"{name} {value}" for name, value in update_without_no_grad().items()))


if __name__ == "__main__":
    main()
