"""The lesson's first step: a forward hook that only says it was called."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import modules

# %%

# en: A hook is a function PyTorch calls for you at a fixed moment. Nothing in the model's
# en: code changes: register it, run the model, remove it.
# zh: 钩子是 PyTorch 在固定时刻替你调用的函数。
# zh: 模型的代码一行都不用改：注册钩子，运行模型，移除钩子。
layers = fill.layers

def say_hello(module, inputs, output):
    print("hook called on", type(module).__name__, "-> output", tuple(output.shape))

handles = [modules[name].register_forward_hook(say_hello) for name in layers]
# include: common.forward_logits
