"""The Gradients view's code: a forward hook on each chosen layer registers a tensor hook on its
output, which keeps the gradient backward brings (the target class's score, differentiated)."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.common import target
from vizhooks.lesson.snippets.setup import model, modules, to_map

# %%

# en: Tensor hooks: a forward hook registers output.register_hook(...), which PyTorch calls
# en: during backward with d(logit) / d(output). No retain_grad() needed.
# zh: 张量钩子：前向钩子里调用 output.register_hook(...)，
# zh: PyTorch 会在反向传播时把 d(logit) / d(output) 传给它。不需要 retain_grad()。
layers = fill.layers
activations, gradients = {}, {}

def watch(name):
    def hook(module, inputs, output):
        activations[name] = output.detach().clone()
        # include: common.keep_grad
    return hook

for p in model.parameters():
    p.requires_grad_(False)  # en: we only want gradients of activations
    # zh: 我们只需要激活值的梯度
handles = [modules[name].register_forward_hook(watch(name)) for name in layers]
# include: common.backward

print("target", target)
for name in layers:
    g = to_map(name, gradients[name])
    print(name, tuple(g.shape), f"min {g.min():.6g} max {g.max():.6g}")
