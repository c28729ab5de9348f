"""The lesson's tensor-hook step: a layer's output has no .grad after backward; a tensor hook sees
its gradient."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, modules, to_map

# %%

# en: .grad is only kept for leaf tensors (inputs, parameters). A layer's output is not a
# en: leaf, so after backward its .grad is None; a tensor hook is how you see its gradient.
# zh: .grad 只为叶子张量（输入、参数）保留。层的输出不是叶子张量，
# zh: 所以反向传播后它的 .grad 是 None；要看它的梯度，就用张量钩子。
layers = fill.layers
kept, gradients = {}, {}

def watch(name):
    def hook(module, inputs, output):
        kept[name] = output
        # include: common.keep_grad
    return hook

for p in model.parameters():
    p.requires_grad_(False)
handles = [modules[name].register_forward_hook(watch(name)) for name in layers]
# include: common.backward

for name in layers:
    g = to_map(name, gradients[name])
    print(name, ".grad:", kept[name].grad, "| from the tensor hook:", tuple(g.shape),
          f"min {g.min():.6g} max {g.max():.6g}")
