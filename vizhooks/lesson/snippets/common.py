"""Lines several snippets share, written once and put in by ``# include: common.NAME``: a tensor hook
that keeps a layer's gradient (inside a forward hook), one forward pass with the hooks on (keeping the
logits or not) and one backward pass from the target class, every hook removed in ``finally``."""

import torch

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, x

handles: list[torch.utils.hooks.RemovableHandle] = []
gradients: dict[str, torch.Tensor] = {}
name, output = "", model(x)

# %% keep_grad

def keep_grad(grad):
    gradients[name] = grad.detach().clone()

output.register_hook(keep_grad)
# %% forward_logits
try:
    with torch.no_grad():
        logits = model(x)
finally:
    for handle in handles:
        handle.remove()
# %% forward
try:
    with torch.no_grad():
        model(x)
finally:
    for handle in handles:
        handle.remove()
# %% backward
try:
    x.requires_grad_(True)
    logits = model(x)
    target = fill.target
    logits[0, target].backward()
finally:
    for handle in handles:
        handle.remove()
