"""The lesson's clamp step: a tensor hook that returns a clipped gradient changes every layer before
it."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, modules, to_map, x

# %%

# en: A tensor hook may return a new gradient: here the gradient at clamp_at is clipped to
# en: [-limit, limit], and every layer before it receives the changed gradient.
# zh: 张量钩子可以返回新的梯度：这里把 clamp_at 处的梯度
# zh: 裁剪到 [-limit, limit]，它之前的每一层收到的都是改变后的梯度。
layers = fill.layers
clamp_at = fill.clamp_at
limit = fill.limit
target = fill.target


def gradients_of(layers, clamp_at=None):
    grads = {}

    def watch(name):
        def hook(module, inputs, output):
            def on_grad(grad):
                grads[name] = grad.detach().clone()
                if name == clamp_at:
                    # en: the returned tensor replaces the gradient
                    # zh: 返回的张量会替换原来的梯度
                    return grad.clamp(-limit, limit)
            output.register_hook(on_grad)
        return hook

    names = [*layers, clamp_at] if clamp_at else list(layers)
    handles = [modules[n].register_forward_hook(watch(n)) for n in names]
    try:
        inp = x.detach().clone().requires_grad_(True)
        logits = model(inp)
        logits[0, target].backward()
    finally:
        for handle in handles:
            handle.remove()
    return grads

for p in model.parameters():
    p.requires_grad_(False)
plain = gradients_of(layers)
clamped = gradients_of(layers, clamp_at=clamp_at)
for name in layers:
    change = (clamped[name] - plain[name]).abs().max().item()
    print(name, tuple(to_map(name, plain[name]).shape), "largest change", change)
