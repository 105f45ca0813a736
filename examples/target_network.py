"""A target network (an EMA teacher) that follows the online network under ``torch.no_grad()``.

The online network learns by gradient descent. The target network starts as a copy
whose parameters do not require grad, and moves only by an exponential moving
average of the online parameters, ``p_t = m * p_t + (1 - m) * p``, computed in place
under ``torch.no_grad()``. The program checks that the online network's backward
pass and its SGD step leave the target untouched, that the update moves the target
by exactly the average, and what the same update does without ``torch.no_grad()``.
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
