"""The Maps view's code: forward hooks keep each chosen layer's output (``output``), or forward
pre-hooks its input (``input``); then the shapes, as the page's captions give them."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import modules, to_map

# %% output

# en: Forward hooks: called right after each module's forward(), with its output.
# zh: 前向钩子：在每个模块的 forward() 之后立即调用，参数中有它的输出。
layers = fill.layers
features = {}

def keep_output(name):
    def hook(module, inputs, output):
        # en: clone: a later in-place ReLU may change it
        # zh: clone：后面的原地 ReLU 可能会改写它
        features[name] = output.detach().clone()
    return hook

handles = [modules[name].register_forward_hook(keep_output(name)) for name in layers]
# include: common.forward_logits

# include: maps.print
# %% input

# en: Forward pre-hooks: called right before each module's forward(), with its inputs
# en: (a tuple).
# zh: 前向预钩子：在每个模块的 forward() 之前立即调用，
# zh: 参数中有它的输入（一个元组）。
layers = fill.layers
features = {}

def keep_input(name):
    def hook(module, inputs):
        features[name] = inputs[0].detach().clone()
    return hook

handles = [modules[name].register_forward_pre_hook(keep_input(name)) for name in layers]
# include: common.forward_logits

# include: maps.print
# %% print
for name, t in features.items():
    print(name, tuple(to_map(name, t).shape))
