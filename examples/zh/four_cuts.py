"""用原文的四种工具逐一重跑它的实验，把结果列成一张表。

对 ``.data``、``.detach()``、``.detach_()`` 和 ``.clone()`` 中的每一种：重新构建
``out = a.sigmoid()``，用这种工具从 ``out`` 得到 ``c``，把 ``c`` 原地清零，
再经由 ``out`` 反向传播。表中列出 ``c`` 与 ``out`` 共享了什么，以及反向传播的结果：
梯度正确、梯度错误，还是报错。这张表以 Markdown 文本打印，在 Jupyter 中则渲染成表格。
"""

import torch

TOOLS = {
    ".data": lambda out: out.data,
    ".detach()": lambda out: out.detach(),
    ".detach_()": lambda out: out.detach_(),
    ".clone()": lambda out: out.clone(),
}


def right_gradient() -> torch.Tensor:
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a.sigmoid().sum().backward()
    return a.grad


def run(tool) -> dict:
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    c = tool(out)
    shares_storage = c.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
    version_before = out._version
    c.zero_()
    # 只有 c 和 out 共用同一个版本计数器时，原地修改 c 才会让 out 的版本变化。
    shares_version = out._version != version_before
    try:
        out.sum().backward()
    except RuntimeError as error:
        outcome = "RuntimeError: " + str(error).split(":")[0]
    else:
        right = torch.allclose(a.grad, right_gradient())
        outcome = f"a.grad = {a.grad} ({'right' if right else 'WRONG'})"
    return {
        "c is out": c is out,
        "shares storage": shares_storage,
        "shares version": shares_version,
        "c.requires_grad": c.requires_grad,
        "backward": outcome,
    }


# run() 返回的每行中的各列，以及各列的表头。反向传播的结果排在最前（紧跟在 tool 列之后）：
# 在窄屏上，这是读者不用横向滚动就能看到的一列。
COLUMNS = {
    "backward": "backward",
    "c is out": "`c is out`",
    "shares storage": "shares storage",
    "shares version": "shares version",
    "c.requires_grad": "`c.requires_grad`",
}


def markdown_table(rows: dict) -> str:
    """把各行排成 Markdown 表格：在 notebook 里会渲染成表格，作为纯文本也一样好读。"""
    lines = ["| tool | " + " | ".join(COLUMNS.values()) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name, row in rows.items():
        lines.append(f"| `{name}` | " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
    return "\n".join(lines)


def in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def main() -> None:
    table = markdown_table({name: run(tool) for name, tool in TOOLS.items()})
    if in_ipython():
        # 在 Jupyter（以及本书）中表格会渲染出来；这段文本本身也就是它的纯文本形式。
        from IPython.display import display

        display({"text/markdown": table, "text/plain": table}, raw=True)
    else:
        print(table)


if __name__ == "__main__":
    main()
