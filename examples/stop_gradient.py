"""A SimSiam-style symmetric loss with a stop-gradient on the target side.

An encoder ``f`` maps two views ``x1`` and ``x2`` of the same batch to ``z1`` and
``z2``; a predictor ``h`` maps those to ``p1`` and ``p2``. The loss is
``D(p1, z2.detach()) / 2 + D(p2, z1.detach()) / 2``, with ``D`` the negative cosine
similarity. For each of the two terms the program asks autograd which of ``z1`` and
``z2`` the term sends a gradient to, with the stop-gradient and without it.
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
