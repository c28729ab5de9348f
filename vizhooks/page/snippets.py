"""Plain-PyTorch code (no vizhooks) that registers the same hooks as a view of the page.

The page shows these under "How this was made" so a student can paste them into a notebook.
Each snippet is complete: imports, model, the same preprocessing, the hooks, removal, and a print
of what was caught. tests/test_snippets.py runs every one of them in a fresh interpreter and
compares what it prints with what the page shows.

A snippet comes in two parts (:class:`Code`): the set-up (model, photo, preprocessing, ``to_map``
with only the branches the chosen layers need), the same for every lesson step, and the step's
hook lines; the lesson shows the hook lines first and folds the set-up. No line is wider than
:data:`WIDTH` columns, so a code box on a projector never scrolls sideways.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..architectures import SEED, TIMM_PREFIX, build_kwargs, imagenet_weights
from ..budget import capture_shapes
from ..images import MAX_SIZE
from ..maps import channels_last_modules
from ..models import input_spec, meta_model, resolve_entry
from .taught import TaughtModelGoneError, checkpoint_files, head, is_taught

VIEWS = ("maps", "gradients", "gradcam", "backward", "table")
#: Bodies used by the lesson only (see vizhooks/page/lesson.py).
LESSON_BODIES = ("hello", "prepost", "conv", "grad_none", "clamp", "sanity", "remove")

#: The widest line the page shows: a code box at a projector's width holds 88 columns.
WIDTH = 88

_FREE_SIZE = '''
# The page's preprocessing: shorter side -> {size} px, aspect kept
# (longer side at most {cap}), no crop, the model's own interpolation, mean and std.
image = Image.open({image!r}).convert("RGB")
w, h = image.size
short, long = min(w, h), max(w, h)
new_long = min(round({size} * long / short), {cap})
size = (new_long, {size}) if w >= h else ({size}, new_long)
image = image.resize(size, Image.Resampling.{resample}, reducing_gap=3.0)
'''

_FIXED_SIZE = '''
# The page's preprocessing: this model needs {side} x {side} pixels, so the shorter side
# goes to {side} and the centre is cropped to a square; the model's own interpolation,
# mean and std.
image = Image.open({image!r}).convert("RGB")
w, h = image.size
scale = {side} / min(w, h)
new_w, new_h = max({side}, round(w * scale)), max({side}, round(h * scale))
image = image.resize((new_w, new_h), Image.Resampling.{resample}, reducing_gap=3.0)
left, top = (new_w - {side}) // 2, (new_h - {side}) // 2
image = image.crop((left, top, left + {side}, top + {side}))
'''

_NORMALISE = '''mean = {mean}
std = {std}
x = TF.normalize(TF.to_tensor(image), mean, std).unsqueeze(0)
modules = dict(model.named_modules())
'''

# to_map: only the branches the chosen model needs (a CNN's maps pass through unchanged)
_TO_MAP = '''

def to_map(name, t):
    # any captured tensor as (1, C, H, W) feature maps, as the page shows it
{branches}    return t
'''

_TOKENS = '''    if t.ndim == 3:
        # transformer tokens (1, 1 + h*w, D): drop the class token, lay out the grid
        side = int((t.shape[1] - 1) ** 0.5)
        return t[:, 1:, :].transpose(1, 2).reshape(1, t.shape[2], side, side)
'''

_CHANNELS_LAST = '''    if name in CHANNELS_LAST:
        return t.permute(0, 3, 1, 2)
'''

_CHANNELS_LAST_LIST = '''
# modules whose output is (1, H, W, C) (Swin)
{channels_last}'''


def assign(var: str, values: list[str]) -> str:
    """``var = [...]`` as a line, or one value a line when that is wider than :data:`WIDTH`."""
    line = f"{var} = {list(values)!r}"
    if len(line) <= WIDTH:
        return line + "\n"
    return f"{var} = [\n" + "".join(f"    {v!r},\n" for v in values) + "]\n"


def call(head: str, args: list[str], tail: str = "") -> str:
    """``head(args)tail`` as a line, or one argument a line when that is wider than :data:`WIDTH`."""
    line = f"{head}({', '.join(args)}){tail}"
    if len(line) <= WIDTH:
        return line + "\n"
    return f"{head}(\n" + "".join(f"    {a},\n" for a in args) + f"){tail}\n"


def _taught_constructor(name: str, arch: str) -> str:
    """A taught model: its architecture with the new last layer put in, then the downloaded checkpoint
    (the Teach view's file: every weight of the backbone and of the new layer)."""
    found = head(name)
    if found is None:
        raise TaughtModelGoneError(name)
    file = repr(checkpoint_files(name)[0])
    load = call("model.load_state_dict", [call("torch.load", [file, "weights_only=True"]).rstrip("\n")])
    classes = len(found.names)
    if arch.startswith(TIMM_PREFIX):
        return "import timm\n\n" + call("model = timm.create_model", [
            repr(arch.removeprefix(TIMM_PREFIX)), f"num_classes={classes}"]) + load + "model.eval()\n"
    extra = [f"{k}={v!r}" for k, v in build_kwargs(arch).items() if k != "num_classes"]
    attribute = "model" + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in found.path.split("."))
    return (call(f"model = models.{arch}", ["weights=None", *extra])
            + f"{attribute} = torch.nn.Linear({found.weight.shape[1]}, {classes})\n" + load + "model.eval()\n")


def _constructor(name: str, pretrained: bool, num_classes: int | None) -> str:
    entry = resolve_entry(name)
    arch = entry.arch
    if is_taught(name):
        return _taught_constructor(name, arch)
    # random weights are the page's own: the same seed, so every number printed matches the page
    seed = "" if pretrained else f"torch.manual_seed({SEED})\n"
    if arch.startswith(TIMM_PREFIX):
        return "import timm\n\n" + seed + call(
            "model = timm.create_model", [repr(arch.removeprefix(TIMM_PREFIX)), f"pretrained={pretrained}"], ".eval()")
    if entry.weights not in ("auto", "none", "imagenet"):
        return (f"model = models.{arch}(num_classes={num_classes or 1000})\n"
                + call("model.load_state_dict", [call("torch.load", [repr(entry.weights), "weights_only=True"])
                                                  .rstrip("\n")]) + "model.eval()\n")
    if pretrained:
        return call(f"model = models.{arch}", [f"weights=models.{type(imagenet_weights(arch)).__name__}.DEFAULT"],
                    ".eval()")
    # what the pretrained builder would set: the input size (ViT-H/14: 518) shapes every layer, and
    # GoogLeNet / Inception v3 normalise their input again inside (transform_input) and skip their
    # own initialisation (init_weights=False)
    extra = [f"{k}={v!r}" for k, v in build_kwargs(arch).items() if k != "num_classes"]
    return seed + call(f"model = models.{arch}", ["weights=None", *extra], ".eval()")


_WEIGHTS_FALLBACK = '''try:
{pretrained}except Exception as exc:
    # no cached checkpoint and no internet: the page's seeded random weights instead
    print(f"Random weights: pretrained weights for {name} could not be loaded ({{exc}}). "
          "Feature maps show an untrained network and predictions are meaningless.")
{random}'''


def with_weights_fallback(setup: str, model: str, num_classes: int | None = None, lang: str = "en") -> str:
    """``setup`` whose pretrained model falls back to the page's seeded random weights, with a
    sentence, where no checkpoint is cached and none can be downloaded (a notebook taken home and
    run offline). Set-ups that do not load pretrained weights are returned as they are."""
    if is_taught(model) or resolve_entry(model).weights not in ("auto", "none", "imagenet"):
        return setup
    pretrained, random = _constructor(model, True, num_classes), _constructor(model, False, num_classes)
    if pretrained not in setup:
        return setup
    indented = "".join(f"    {line}" if line.strip() else line for line in pretrained.splitlines(keepends=True))
    fallback = localise(_WEIGHTS_FALLBACK, lang).format(pretrained=indented, random=random, name=model)
    return setup.replace(pretrained, fallback, 1)


@functools.lru_cache(maxsize=64)
def _has_tokens(name: str, layers: tuple[str, ...], hw: tuple[int, int]) -> bool:
    """Whether a chosen layer takes or gives transformer tokens (1, T, D), worked out on the meta device."""
    return any(len(shape) == 3 for what in ("input", "output")
               for shape in capture_shapes(name, layers, hw, what).values())


def _preamble(name: str, image: str, size: int, pretrained: bool, num_classes: int | None,
              layers: list[str], lang: str = "en") -> str:
    entry = resolve_entry(name)
    model = meta_model(name)[0]
    spec = input_spec(entry.arch, model)
    head = ("import torch\nfrom PIL import Image\nfrom torchvision import models\n"
            "from torchvision.transforms import functional as TF\n\n")
    head += _constructor(name, pretrained, num_classes)
    resample = spec.interpolation.upper()
    if spec.fixed_size:
        head += localise(_FIXED_SIZE, lang).format(side=spec.fixed_size, image=image, resample=resample)
    else:
        size = max(int(size), spec.min_size)
        head += localise(_FREE_SIZE, lang).format(size=size, cap=min(2 * size, 2 * MAX_SIZE), image=image,
                                                 resample=resample)
    head += localise(_NORMALISE, lang).format(mean=list(spec.mean), std=list(spec.std))
    channels_last = sorted(channels_last_modules(model) & set(layers))
    branches = ""
    if _has_tokens(name, tuple(layers), _input_hw(name, size)):
        branches += _TOKENS
    if channels_last:
        head += localise(_CHANNELS_LAST_LIST, lang).format(channels_last=assign("CHANNELS_LAST", channels_last))
        branches += _CHANNELS_LAST
    return head + localise(_TO_MAP.format(branches=branches), lang)


_MAPS_OUTPUT = '''
# Forward hooks: called right after each module's forward(), with its output.
{layers_def}features = {{}}

def keep_output(name):
    def hook(module, inputs, output):
        # clone: a later in-place ReLU may change it
        features[name] = output.detach().clone()
    return hook

handles = [modules[name].register_forward_hook(keep_output(name)) for name in layers]
try:
    with torch.no_grad():
        logits = model(x)
finally:
    for handle in handles:
        handle.remove()

for name, t in features.items():
    print(name, tuple(to_map(name, t).shape))
'''

_MAPS_INPUT = '''
# Forward pre-hooks: called right before each module's forward(), with its inputs
# (a tuple).
{layers_def}features = {{}}

def keep_input(name):
    def hook(module, inputs):
        features[name] = inputs[0].detach().clone()
    return hook

handles = [modules[name].register_forward_pre_hook(keep_input(name)) for name in layers]
try:
    with torch.no_grad():
        logits = model(x)
finally:
    for handle in handles:
        handle.remove()

for name, t in features.items():
    print(name, tuple(to_map(name, t).shape))
'''

_GRADIENTS = '''
# Tensor hooks: a forward hook registers output.register_hook(...), which PyTorch calls
# during backward with d(logit) / d(output). No retain_grad() needed.
{layers_def}activations, gradients = {{}}, {{}}

def watch(name):
    def hook(module, inputs, output):
        activations[name] = output.detach().clone()

        def keep_grad(grad):
            gradients[name] = grad.detach().clone()

        output.register_hook(keep_grad)
    return hook

for p in model.parameters():
    p.requires_grad_(False)  # we only want gradients of activations
handles = [modules[name].register_forward_hook(watch(name)) for name in layers]
try:
    x.requires_grad_(True)
    logits = model(x)
    target = {target}
    logits[0, target].backward()
finally:
    for handle in handles:
        handle.remove()

print("target", target)
for name in layers:
    g = to_map(name, gradients[name])
    print(name, tuple(g.shape), f"min {{g.min():.6g}} max {{g.max():.6g}}")
'''

_GRADCAM = _GRADIENTS + '''
# Grad-CAM: weight each channel by its mean gradient, sum, ReLU, scale to [0, 1],
# upsample.
import torch.nn.functional as F

for name in layers:
    A, G = to_map(name, activations[name]), to_map(name, gradients[name])
    weights = G.mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * A).sum(dim=1, keepdim=True))
    low, high = cam.min(), cam.max()
    cam = (cam - low) / (high - low) if high > low else cam * 0
    cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
    cam = cam[0, 0]
    row, col = divmod(int(cam.argmax()), cam.shape[1])
    mean = f"mean {{cam.mean():.6g}}"
    print(name, "Grad-CAM", tuple(cam.shape), mean, "peak at", (row, col))
'''

_BACKWARD = '''
# Full backward hooks: called during backward with the gradients of a module's inputs
# and outputs. They cannot wrap a module whose output is changed in place later
# (ResNet's bn1, followed by ReLU(inplace=True)) or an in-place module itself (its
# relu), so those are left out here.
{skip_def}
def report(name):
    def hook(module, grad_input, grad_output):
        def shapes(grads):
            return [None if g is None else tuple(g.shape) for g in grads]

        print(name, type(module).__name__, "grad_input", shapes(grad_input),
              "grad_output", shapes(grad_output))
    return hook

for p in model.parameters():
    p.requires_grad_(False)
names = [n for n, _ in model.named_children() if n not in skip]
handles = [modules[n].register_full_backward_hook(report(n)) for n in names]
try:
    x.requires_grad_(True)
    logits = model(x)
    target = {target}
    logits[0, target].backward()
finally:
    for handle in handles:
        handle.remove()

print("not hooked", skip)
print("target", target)
'''

_TABLE = '''
# A layer table from forward pre-hooks (input shape, start time) and forward hooks
# (output shape, end time), on every module, in one pass.
import time

rows, started = {{}}, {{}}

def shape_of(value):
    while isinstance(value, (tuple, list)) and value:
        value = value[0]
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None

def before(name):
    def hook(module, inputs):
        if name not in rows:
            params = sum(p.numel() for p in module.parameters())
            rows[name] = [type(module).__name__, shape_of(inputs), None, params, 0.0]
        started[name] = time.perf_counter()
    return hook

def after(name):
    def hook(module, inputs, output):
        if rows[name][2] is None:
            rows[name][2] = shape_of(output)
        rows[name][4] += (time.perf_counter() - started[name]) * 1000
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

for name, (kind, shape_in, shape_out, params, ms) in rows.items():
    shapes = f"{{str(shape_in):20}} -> {{str(shape_out):20}}"
    print(f"{{name:24}} {{kind:18}} {{shapes}} {{params:>11,}} {{ms:8.2f}} ms")
total = sum(row[3] for name, row in rows.items() if "." not in name)
print("total params", f"{{total:,}}")
'''


_HELLO = '''
# A hook is a function PyTorch calls for you at a fixed moment. Nothing in the model's
# code changes: register it, run the model, remove it.
{layers_def}
def say_hello(module, inputs, output):
    print("hook called on", type(module).__name__, "-> output", tuple(output.shape))

handles = [modules[name].register_forward_hook(say_hello) for name in layers]
try:
    with torch.no_grad():
        logits = model(x)
finally:
    for handle in handles:
        handle.remove()
'''

_PREPOST = '''
# The same layer seen twice: a forward pre-hook gets what goes in, a forward hook what
# comes out.
name = {layer!r}
seen = {{}}
layer = modules[name]

def before(module, inputs):
    seen["input"] = inputs[0].detach().clone()

def after(module, inputs, output):
    seen["output"] = output.detach().clone()

handles = [layer.register_forward_pre_hook(before), layer.register_forward_hook(after)]
try:
    with torch.no_grad():
        model(x)
finally:
    for handle in handles:
        handle.remove()

for kind, t in seen.items():
    m = to_map(name, t)
    numbers = f"min {{m.min():.6g}} mean {{m.mean():.6g}} max {{m.max():.6g}}"
    print(name, kind, tuple(m.shape), numbers)
'''

_CONV = '''
# One output value of a convolution, by hand. A pre-hook keeps the conv's input, a hook
# its output; the window under the kernel times the weights, summed, plus the bias, is
# the value the hook saw.
name = {layer!r}
conv = modules[name]
seen = {{}}

def keep_input(module, inputs):
    seen["input"] = inputs[0].detach().clone()

def keep_output(module, inputs, output):
    seen["output"] = output.detach().clone()

handles = [conv.register_forward_pre_hook(keep_input),
           conv.register_forward_hook(keep_output)]
try:
    with torch.no_grad():
        model(x)
finally:
    for handle in handles:
        handle.remove()

out = seen["output"][0]
channel = {channel}
{where}
# the input channels this output channel sees: all of them, or its group's
per_group = conv.in_channels // conv.groups
first = channel // (conv.out_channels // conv.groups) * per_group
inp = seen["input"][:, first:first + per_group]
# every window as one column: (1, per_group * kh * kw, places), zeros where padded
windows = torch.nn.functional.unfold(inp, conv.kernel_size, dilation=conv.dilation,
                                     padding=conv.padding, stride=conv.stride)
window = windows[0, :, row * out.shape[-1] + col]
products = window * conv.weight[channel].detach().flatten()
bias = conv.bias[channel].item() if conv.bias is not None else 0.0
by_hand = products.sum().item() + bias
kernel = tuple(conv.weight.shape[1:])
print(name, "channel", channel, "at", (row, col), "kernel", kernel)
total = products.sum().item()
print("products", products.numel(), "sum", f"{{total:.6g}}", "bias", f"{{bias:.6g}}")
hooked = out[channel, row, col].item()
print("by hand", f"{{by_hand:.6g}}", "| from the hook", f"{{hooked:.6g}}")
'''

_GRAD_NONE = '''
# .grad is only kept for leaf tensors (inputs, parameters). A layer's output is not a
# leaf, so after backward its .grad is None; a tensor hook is how you see its gradient.
{layers_def}kept, gradients = {{}}, {{}}

def watch(name):
    def hook(module, inputs, output):
        kept[name] = output

        def keep_grad(grad):
            gradients[name] = grad.detach().clone()

        output.register_hook(keep_grad)
    return hook

for p in model.parameters():
    p.requires_grad_(False)
handles = [modules[name].register_forward_hook(watch(name)) for name in layers]
try:
    x.requires_grad_(True)
    logits = model(x)
    target = {target}
    logits[0, target].backward()
finally:
    for handle in handles:
        handle.remove()

for name in layers:
    g = to_map(name, gradients[name])
    print(name, ".grad:", kept[name].grad, "| from the tensor hook:", tuple(g.shape),
          f"min {{g.min():.6g}} max {{g.max():.6g}}")
'''

_CLAMP = '''
# A tensor hook may return a new gradient: here the gradient at clamp_at is clipped to
# [-limit, limit], and every layer before it receives the changed gradient.
{layers_def}clamp_at = {clamp_at!r}
limit = {limit!r}
target = {target}


def gradients_of(layers, clamp_at=None):
    grads = {{}}

    def watch(name):
        def hook(module, inputs, output):
            def on_grad(grad):
                grads[name] = grad.detach().clone()
                if name == clamp_at:
                    # the returned tensor replaces the gradient
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
'''

_SANITY = '''
# Does the map depend on the model? Grad-CAM of the photo, then again after each stage
# of a copy of the network is re-initialised, from the head down (Adebayo et al. 2018).
import copy

name = {layer!r}
target = {target}
{stages_def}

def grad_cam(net):
    kept = {{}}

    def hook(module, inputs, output):
        kept["act"] = output
        output.register_hook(lambda grad: kept.update(grad=grad))

    handle = dict(net.named_modules())[name].register_forward_hook(hook)
    try:
        net(x.detach().clone().requires_grad_(True))[0, target].backward()
    finally:
        handle.remove()
    act, grad = to_map(name, kept["act"]), to_map(name, kept["grad"])
    weights = grad.mean(dim=(2, 3), keepdim=True)
    cam = torch.relu((weights * act).sum(dim=1, keepdim=True))
    # the page's size: the map stretched over the photo
    return torch.nn.functional.interpolate(cam, size=x.shape[-2:], mode="bilinear",
                                           align_corners=False)[0, 0]


def ranks(t):
    # tied values share the mean of their places
    v, order = t.flatten().double().sort()
    first = torch.searchsorted(v, v, right=False)
    last = torch.searchsorted(v, v, right=True)
    r = torch.empty_like(v)
    r[order] = (first + last + 1).double() / 2
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    scale = (ra.norm() * rb.norm()).item()
    return (ra * rb).sum().item() / scale if scale > 0 else 0.0


scrambled = copy.deepcopy(model)
for p in [*model.parameters(), *scrambled.parameters()]:
    p.requires_grad_(False)
original = grad_cam(model)
parts = dict(scrambled.named_modules())
for step, stage in enumerate(stages, 1):
    torch.manual_seed(step)  # PyTorch's own initialisation, drawn anew
    for module in parts[stage].modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    rho = spearman(original, grad_cam(scrambled))
    print(f"{{stage:>10}} re-initialised: Spearman {{rho:.3f}}")
'''

_REMOVE = '''
# Forgetting handle.remove(): a hook registered in a loop stays on the model, so every
# pass adds one more and the calls pile up. Removing it after each pass keeps one call
# per pass.
layer = modules[{layer!r}]
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
    for handle in handles:  # clean up, in both cases
        handle.remove()
    print("forgot to remove" if forget else "removed each time", per_pass)
'''


def _comment_split(line: str) -> tuple[str, str] | None:
    """(code part, comment text) when the line has a ``#`` comment outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i], line[i + 1:].strip()
    return None


def template_comments(template: str) -> list[str]:
    """The comment texts of a template, in order (what snippets_zh translates)."""
    return [part[1] for line in template.splitlines() if (part := _comment_split(line)) and part[1]]


def localise(template: str, lang: str) -> str:
    """``template`` with its comments in ``lang``: the code is the same in every language."""
    if lang == "en":
        return template
    from .snippets_zh import COMMENTS_ZH

    out = []
    for line in template.splitlines(keepends=True):
        part = _comment_split(line)
        if part and part[1] in COMMENTS_ZH:
            end = "\n" if line.endswith("\n") else ""
            out.append(f"{part[0]}# {COMMENTS_ZH[part[1]]}{end}")
        else:
            out.append(line)
    return "".join(out)


TEMPLATES: dict[str, str] = {}  # filled below: every template a snippet is made of, by name


@dataclass(frozen=True)
class Code:
    """A snippet in two parts: the set-up (imports, model, photo, preprocessing, ``to_map``), the
    same for every step of one page, and the step's own hook lines, which run after it."""

    setup: str
    steps: str

    @property
    def full(self) -> str:
        """The whole runnable file."""
        return self.setup + self.steps


def lesson_code(body: str, *, model: str, image: str, size: int, layers: list[str], target: int | None = None,
                clamp_at: str | None = None, limit: float = 1e-3, pretrained: bool = False,
                num_classes: int | None = None, lang: str = "en", setup_layers: list[str] | None = None,
                conv: ConvPlace | None = None) -> Code:
    """One lesson step's code (``body`` in ``LESSON_BODIES``) as set-up and step lines.

    ``setup_layers`` are the layers the set-up prepares ``to_map`` for (default ``layers`` and
    ``clamp_at``): the page passes all its chosen layers, so every step shares one set-up. ``conv``
    is the place the "conv" body takes apart (default: :func:`conv_place` of ``layers``)."""
    if body not in LESSON_BODIES:
        raise ValueError(f"body must be one of {', '.join(LESSON_BODIES)}, not {body!r}.")
    names = setup_layers if setup_layers is not None else [*layers, *([clamp_at] if clamp_at else [])]
    head = _preamble(model, image, size, pretrained, num_classes, names, lang)
    target_expr = str(int(target)) if target is not None else "int(model(x)[0].argmax())"
    text = {"hello": _HELLO, "prepost": _PREPOST, "conv": _CONV, "grad_none": _GRAD_NONE, "clamp": _CLAMP,
            "sanity": _SANITY, "remove": _REMOVE}[body]
    place = (conv or conv_place(model, layers)) if body == "conv" else ConvPlace(layers[-1 if body == "sanity" else 0])
    stages = sanity_stages(model) if body == "sanity" else []
    where = (f"row, col = {place.row}, {place.col}" if place.row is not None and place.col is not None else
             localise("row, col = out.shape[-2] // 2, out.shape[-1] // 2  # the centre", lang))
    return Code(head, localise(text, lang).format(layers_def=assign("layers", layers), layer=place.layer,
                                                  target=target_expr, clamp_at=clamp_at, limit=float(limit),
                                                  channel=place.channel, where=where,
                                                  stages_def=assign("stages", stages)))


@dataclass(frozen=True)
class ConvPlace:
    """Which output value the lesson's "conv" step takes apart: a Conv2d, an output channel and a
    place in its map (None: the centre, worked out by the code itself)."""

    layer: str
    channel: int = 0
    row: int | None = None
    col: int | None = None


def sanity_stages(model: str) -> list[str]:
    """The sanity check's stages for ``model`` (vizhooks.sanity.randomisation_stages, on the meta device)."""
    from ..sanity import randomisation_stages

    meta, lock = meta_model(model)
    with lock:
        return randomisation_stages(meta)


def conv_place(model: str, layers: list[str]) -> ConvPlace:
    """The Convolution view's default: the first chosen layer that is a Conv2d, else the model's
    first Conv2d (found on the meta device); channel 0 at the centre of its map."""
    import torch

    meta, lock = meta_model(model)
    with lock:
        modules = dict(meta.named_modules())
    convs = [n for n, m in modules.items() if isinstance(m, torch.nn.Conv2d)]
    chosen = [n for n in layers if isinstance(modules.get(n.split("#")[0]), torch.nn.Conv2d)]
    return ConvPlace((chosen or convs or layers)[0].split("#")[0])


def lesson_snippet(body: str, **kwargs: Any) -> str:
    """Python source for one lesson step: :func:`lesson_code` as one runnable file."""
    return lesson_code(body, **kwargs).full


def view_code(
    view: str,
    *,
    model: str,
    image: str,
    size: int,
    layers: list[str],
    what: str = "output",
    target: int | None = None,
    pretrained: bool = False,
    num_classes: int | None = None,
    lang: str = "en",
) -> Code:
    """One view's code as set-up and step lines. ``image`` is the path written into the code;
    ``target`` None means "the top-1 class" (computed in the snippet)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}.")
    head = _preamble(model, image, size, pretrained, num_classes, list(layers), lang)
    top1 = localise("int(logits[0].argmax())  # top-1 class", lang)
    target_expr = str(int(target)) if target is not None else top1
    body = {
        "maps": _MAPS_INPUT if what == "input" else _MAPS_OUTPUT,
        "gradients": _GRADIENTS,
        "gradcam": _GRADCAM,
        "backward": _BACKWARD,
        "table": _TABLE,
    }[view]
    skip: list[str] = []
    if view == "backward":
        skip = _inplace_children(model, x_hw=_input_hw(model, size))
    return Code(head, localise(body, lang).format(layers_def=assign("layers", list(layers)), target=target_expr,
                                                  skip_def=assign("skip", skip)))


def snippet(view: str, **kwargs: Any) -> str:
    """Python source for one view: :func:`view_code` as one runnable file."""
    return view_code(view, **kwargs).full


def _input_hw(name: str, size: int) -> tuple[int, int]:
    spec = input_spec(resolve_entry(name).arch, meta_model(name)[0])
    side = spec.fixed_size or max(int(size), spec.min_size)
    return side, side


def _inplace_children(name: str, x_hw: tuple[int, int]) -> list[str]:
    """Top-level modules a full backward hook cannot wrap (worked out on the meta device)."""
    import torch

    from ..gradients import inplace_conflicts

    model, lock = meta_model(name)
    children = [n for n, _ in model.named_children()]
    with lock:
        return sorted(inplace_conflicts(model, torch.empty(1, 3, *x_hw, device="meta"), children))


TEMPLATES.update({
    "free_size": _FREE_SIZE, "fixed_size": _FIXED_SIZE, "normalise": _NORMALISE, "maps_output": _MAPS_OUTPUT,
    "maps_input": _MAPS_INPUT, "gradients": _GRADIENTS, "gradcam": _GRADCAM, "backward": _BACKWARD,
    "table": _TABLE, "hello": _HELLO, "prepost": _PREPOST, "conv": _CONV, "grad_none": _GRAD_NONE, "clamp": _CLAMP,
    "sanity": _SANITY, "remove": _REMOVE, "to_map": _TO_MAP, "tokens": _TOKENS, "channels_last": _CHANNELS_LAST,
    "channels_last_list": _CHANNELS_LAST_LIST,
})
