"""The lesson's conv step: one output value of a convolution, by hand, from what a pre-hook and a
hook kept."""

import torch

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import modules

# %%

# en: One output value of a convolution, by hand. A pre-hook keeps the conv's input, a hook
# en: its output; the window under the kernel times the weights, summed, plus the bias, is
# en: the value the hook saw.
# zh: 手工算出卷积的一个输出值。前向预钩子保存卷积层的输入，
# zh: 前向钩子保存它的输出；卷积核覆盖的窗口与权重逐元素相乘、求和、
# zh: 再加上偏置，就是钩子看到的那个值。
name = fill.layer
conv = modules[name]
seen = {}

def keep_input(module, inputs):
    seen["input"] = inputs[0].detach().clone()

def keep_output(module, inputs, output):
    seen["output"] = output.detach().clone()

handles = [conv.register_forward_pre_hook(keep_input),
           conv.register_forward_hook(keep_output)]
# include: common.forward

out = seen["output"][0]
channel = fill.channel
row, col = fill.where
# en: the input channels this output channel sees: all of them, or its group's
# zh: 这个输出通道看到的输入通道：全部，或只是它所在组的那些
per_group = conv.in_channels // conv.groups
first = channel // (conv.out_channels // conv.groups) * per_group
inp = seen["input"][:, first:first + per_group]
# en: every window as one column: (1, per_group * kh * kw, places), zeros where padded
# zh: 每个窗口展开成一列：(1, per_group * kh * kw, 位置数)，填充处为 0
windows = torch.nn.functional.unfold(inp, conv.kernel_size, dilation=conv.dilation,
                                     padding=conv.padding, stride=conv.stride)
window = windows[0, :, row * out.shape[-1] + col]
products = window * conv.weight[channel].detach().flatten()
bias = conv.bias[channel].item() if conv.bias is not None else 0.0
by_hand = products.sum().item() + bias
kernel = tuple(conv.weight.shape[1:])
print(name, "channel", channel, "at", (row, col), "kernel", kernel)
total = products.sum().item()
print("products", products.numel(), "sum", f"{total:.6g}", "bias", f"{bias:.6g}")
hooked = out[channel, row, col].item()
print("by hand", f"{by_hand:.6g}", "| from the hook", f"{hooked:.6g}")
