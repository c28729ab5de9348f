"""The lesson's last step: a hook registered in a loop and never removed piles up."""

import torch

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, modules, x

# %%

# en: Forgetting handle.remove(): a hook registered in a loop stays on the model, so every
# en: pass adds one more and the calls pile up. Removing it after each pass keeps one call
# en: per pass.
# zh: 忘记 handle.remove()：在循环里注册的钩子会一直留在模型上，
# zh: 所以每次前向传播都多一个钩子，调用次数越积越多。
# zh: 每次前向传播后移除它，每次就只调用一次。
layer = modules[fill.layer]
calls = []

def count(module, inputs, output):
    calls.append(1)

for forget in (True, False):
    per_pass = []
    handles = []
    for _ in range(3):
        calls.clear()
        handle = layer.register_forward_hook(count)
        handles.append(handle)
        with torch.no_grad():
            model(x)
        per_pass.append(len(calls))
        if not forget:
            handle.remove()
    for handle in handles:  # en: clean up, in both cases
    # zh: 两种情况最后都要清理
        handle.remove()
    print("forgot to remove" if forget else "removed each time", per_pass)
