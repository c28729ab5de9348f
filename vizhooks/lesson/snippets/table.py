"""The layer table's code: a pre-hook and a hook on every module note input and output shapes,
parameters and time, in one pass."""

import torch

from vizhooks.lesson.snippets.setup import modules

# %%

# en: A layer table from forward pre-hooks (input shape, start time) and forward hooks
# en: (output shape, end time), on every module, in one pass.
# zh: 用前向预钩子（输入形状、开始时间）和前向钩子（输出形状、结束时间）
# zh: 在一次前向传播中为每个模块生成一张层信息表。
import time

rows, started = {}, {}

def shape_of(value):
    while isinstance(value, (tuple, list)) and value:
        value = value[0]
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None

def before(name):
    def hook(module, inputs):
        if name not in rows:
            params = sum(p.numel() for p in module.parameters())
            rows[name] = [type(module).__name__, shape_of(inputs), None, params, 0.0]
        started[name] = time.perf_counter()
    return hook

def after(name):
    def hook(module, inputs, output):
        if rows[name][2] is None:
            rows[name][2] = shape_of(output)
        rows[name][4] += (time.perf_counter() - started[name]) * 1000
    return hook

handles = []
for name, module in modules.items():
    if name:
        handles.append(module.register_forward_pre_hook(before(name)))
        handles.append(module.register_forward_hook(after(name)))
# include: common.forward

for name, (kind, shape_in, shape_out, params, ms) in rows.items():
    shapes = f"{str(shape_in):20} -> {str(shape_out):20}"
    print(f"{name:24} {kind:18} {shapes} {params:>11,} {ms:8.2f} ms")
total = sum(row[3] for name, row in rows.items() if "." not in name)
print("total params", f"{total:,}")
