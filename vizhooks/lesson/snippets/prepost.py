"""The lesson's pre-hook step: one layer's input (forward pre-hook) and output (forward hook)."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import modules, to_map

# %%

# en: The same layer seen twice: a forward pre-hook gets what goes in, a forward hook what
# en: comes out.
# zh: 同一层看两次：前向预钩子拿到进入这一层的张量，
# zh: 前向钩子拿到这一层产出的张量。
name = fill.layer
seen = {}
layer = modules[name]

def before(module, inputs):
    seen["input"] = inputs[0].detach().clone()

def after(module, inputs, output):
    seen["output"] = output.detach().clone()

handles = [layer.register_forward_pre_hook(before), layer.register_forward_hook(after)]
# include: common.forward

for kind, t in seen.items():
    m = to_map(name, t)
    numbers = f"min {m.min():.6g} mean {m.mean():.6g} max {m.max():.6g}"
    print(name, kind, tuple(m.shape), numbers)
