"""Plain-PyTorch code (no vizhooks) that registers the same hooks as a view of the page.

The page shows these under "How this was made" so a student can paste them into a notebook.
Each snippet is complete: imports, model, the same preprocessing, the hooks, removal, and a print
of what was caught. Tests run them in a fresh interpreter.
"""

from __future__ import annotations

from .images import MAX_SIZE
from .models import IMAGENET_MEAN, IMAGENET_STD, imagenet_weights

VIEWS = ("maps", "gradients", "gradcam", "backward", "table")

_PREAMBLE = '''import torch
from PIL import Image
from torchvision import models
from torchvision.transforms import functional as TF

model = models.{model}(weights={weights}).eval()

# The page's preprocessing: shorter side -> {size} px, aspect kept (longer side at most {cap}),
# no crop, ImageNet mean/std.
image = Image.open({image!r}).convert("RGB")
w, h = image.size
short, long = min(w, h), max(w, h)
new_long = min(round({size} * long / short), {cap})
size = (new_long, {size}) if w >= h else ({size}, new_long)
image = image.resize(size, Image.Resampling.BILINEAR, reducing_gap=3.0)
x = TF.normalize(TF.to_tensor(image), {mean}, {std}).unsqueeze(0)
modules = dict(model.named_modules())
'''

_MAPS_OUTPUT = '''
# Forward hooks: called right after each module's forward(), with its output.
features = {{}}

def keep_output(name):
    def hook(module, inputs, output):
        features[name] = output.detach().clone()  # clone: a later in-place ReLU may change it
    return hook

handles = [modules[name].register_forward_hook(keep_output(name)) for name in {layers!r}]
try:
    with torch.no_grad():
        logits = model(x)
finally:
    for handle in handles:
        handle.remove()

for name, t in features.items():
    print(name, tuple(t.shape))
'''

_MAPS_INPUT = '''
# Forward pre-hooks: called right before each module's forward(), with its inputs (a tuple).
features = {{}}

def keep_input(name):
    def hook(module, inputs):
        features[name] = inputs[0].detach().clone()
    return hook

handles = [modules[name].register_forward_pre_hook(keep_input(name)) for name in {layers!r}]
try:
    with torch.no_grad():
        logits = model(x)
finally:
    for handle in handles:
        handle.remove()

for name, t in features.items():
    print(name, tuple(t.shape))
'''

_GRADIENTS = '''
# Tensor hooks: a forward hook registers output.register_hook(...), which PyTorch calls during
# backward with d(logit) / d(output). No retain_grad() needed.
activations, gradients = {{}}, {{}}

def watch(name):
    def hook(module, inputs, output):
        activations[name] = output.detach().clone()
        output.register_hook(lambda grad: gradients.__setitem__(name, grad.detach().clone()))
    return hook

for p in model.parameters():
    p.requires_grad_(False)  # we only want gradients of activations
handles = [modules[name].register_forward_hook(watch(name)) for name in {layers!r}]
try:
    x.requires_grad_(True)
    logits = model(x)
    target = {target}
    logits[0, target].backward()
finally:
    for handle in handles:
        handle.remove()

for name, g in gradients.items():
    print(name, tuple(g.shape))
'''

_GRADCAM = _GRADIENTS + '''
# Grad-CAM: weight each channel by its mean gradient, sum, ReLU, scale to [0, 1], upsample.
import torch.nn.functional as F

for name in {layers!r}:
    weights = gradients[name].mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * activations[name]).sum(dim=1, keepdim=True))
    cam = (cam - cam.min()) / (cam.max() - cam.min()) if cam.max() > cam.min() else cam * 0
    cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    print(name, "Grad-CAM", tuple(cam.shape))
'''

_BACKWARD = '''
# Full backward hooks: called during backward with the gradients of a module's inputs and
# outputs. They cannot wrap a module whose output is changed in place later (bn1, followed by
# ReLU(inplace=True)) or an in-place module itself (relu), so those two are left out here.
def report(module, grad_input, grad_output):
    shapes = lambda grads: [None if g is None else tuple(g.shape) for g in grads]
    print(type(module).__name__, "grad_input", shapes(grad_input), "grad_output", shapes(grad_output))

for p in model.parameters():
    p.requires_grad_(False)
names = [n for n, _ in model.named_children() if n not in ("bn1", "relu")]
handles = [modules[n].register_full_backward_hook(report) for n in names]
try:
    x.requires_grad_(True)
    logits = model(x)
    target = {target}
    logits[0, target].backward()
finally:
    for handle in handles:
        handle.remove()
'''

_TABLE = '''
# A layer table from forward pre-hooks (input shape, start time) and forward hooks (output
# shape, end time), on every module, in one pass.
import time

rows, started = {{}}, {{}}

def before(name):
    def hook(module, inputs):
        started[name] = time.perf_counter()
    return hook

def after(name):
    def hook(module, inputs, output):
        if name not in rows:
            params = sum(p.numel() for p in module.parameters())
            rows[name] = [type(module).__name__, tuple(output.shape), params, 0.0]
        rows[name][3] += (time.perf_counter() - started[name]) * 1000
    return hook

handles = []
for name, module in modules.items():
    if name:
        handles.append(module.register_forward_pre_hook(before(name)))
        handles.append(module.register_forward_hook(after(name)))
try:
    with torch.no_grad():
        model(x)
finally:
    for handle in handles:
        handle.remove()

for name, (kind, shape, params, ms) in rows.items():
    print(f"{{name:24}} {{kind:12}} {{str(shape):22}} {{params:>10,}} {{ms:8.2f}} ms")
'''


def snippet(
    view: str,
    *,
    model: str,
    image: str,
    size: int,
    layers: list[str],
    what: str = "output",
    target: int | None = None,
    pretrained: bool = False,
) -> str:
    """Python source for one view. ``image`` is the path written into the code; ``target``
    None means "the top-1 class" (computed in the snippet)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}.")
    weights = f"models.{type(imagenet_weights(model)).__name__}.DEFAULT" if pretrained else "None"
    head = _PREAMBLE.format(model=model, weights=weights, size=int(size), cap=min(2 * int(size), 2 * MAX_SIZE),
                            image=image, mean=list(IMAGENET_MEAN), std=list(IMAGENET_STD))
    target_expr = str(int(target)) if target is not None else "int(logits[0].argmax())  # top-1 class"
    body = {
        "maps": _MAPS_INPUT if what == "input" else _MAPS_OUTPUT,
        "gradients": _GRADIENTS,
        "gradcam": _GRADCAM,
        "backward": _BACKWARD,
        "table": _TABLE,
    }[view]
    return head + body.format(layers=list(layers), target=target_expr)
