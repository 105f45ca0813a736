"""GAN 判别器的一步训练，用 ``fake.detach()`` 和 ``fake`` 各跑一遍。

一个很小的线性生成器把噪声变成一批假样本，一个很小的线性判别器
给一批真样本和这批假样本打分。判别器的损失只反向传播一次，假样本或者以
``fake.detach()`` 的形式传入（训练代码就是这样写的），或者直接传入 ``fake``。
程序报告这个损失的梯度到达了两个网络中的哪一个，
以及随后生成器的训练步骤能否复用 ``fake``。
"""

import torch
import torch.nn.functional as F


def make_models() -> tuple[torch.nn.Linear, torch.nn.Linear]:
    torch.manual_seed(0)
    generator = torch.nn.Linear(2, 3)
    discriminator = torch.nn.Linear(3, 1)
    return generator, discriminator


def bce(logits: torch.Tensor, label: float) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits, torch.full_like(logits, label))


def discriminator_step(detach: bool) -> dict:
    generator, discriminator = make_models()
    noise = torch.randn(4, 2)
    real = torch.randn(4, 3)
    fake = generator(noise)
    d_loss = bce(discriminator(real), 1.0) + bce(discriminator(fake.detach() if detach else fake), 0.0)
    d_loss.backward()
    row = {
        "D grad": discriminator.weight.grad.clone(),
        "G grad": None if generator.weight.grad is None else generator.weight.grad.clone(),
    }
    generator.zero_grad()
    g_loss = bce(discriminator(fake), 1.0)
    try:
        g_loss.backward()
    except RuntimeError as error:
        row["G step"] = "RuntimeError: " + str(error).split(" (")[0]
    else:
        row["G step"] = "ok"
    return row


def main() -> None:
    rows = {"fake.detach()": discriminator_step(detach=True), "fake": discriminator_step(detach=False)}
    for name, row in rows.items():
        print(f"D sees {name}:")
        print("  discriminator got a gradient:", row["D grad"] is not None)
        print("  generator got a gradient:    ", row["G grad"] is not None)
        print("  generator step afterwards:   ", row["G step"])
    same = torch.equal(rows["fake.detach()"]["D grad"], rows["fake"]["D grad"])
    print("discriminator gradient is the same either way:", same)


if __name__ == "__main__":
    main()
