"""The lesson's patching step: photo A run with one layer's output taken from photo B, for each
layer in turn (activation patching): where does B's answer come back?"""

import torch
from PIL import Image
from torchvision.transforms import functional as TF

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import image, model, modules, x

# %%

# en: Activation patching: one forward hook keeps photo B's output of a layer, another
# en: returns it while photo A runs (a forward hook that returns a tensor replaces the
# en: output). How much of B's answer comes back, layer by layer?
# zh: 激活修补：一个前向钩子保存照片 B 在某一层的输出，另一个钩子在照片 A
# zh: 运行时把它返回（前向钩子返回的张量会替换这一层的输出）。
# zh: 一层一层地看：B 的答案回来了多少？
layers = fill.layers
# en: photo B, squashed to photo A's size: every layer then gives both maps of one size
# zh: 照片 B 缩放成照片 A 的大小：这样每一层给两张照片的特征图一样大
other = Image.open(fill.source_image).convert("RGB")
other = other.resize(image.size, fill.resample, reducing_gap=3.0)
b_mean = fill.mean
b_std = fill.std
source = TF.normalize(TF.to_tensor(other), b_mean, b_std).unsqueeze(0)
kept = {}


def run(photo, hooks):
    handles = [modules[n].register_forward_hook(hook) for n, hook in hooks.items()]
    try:
        with torch.no_grad():
            return model(photo)[0]
    finally:
        for handle in handles:
            handle.remove()


def keep(name):
    def hook(module, inputs, output):
        kept[name] = output.clone()  # en: a copy: in-place operations change it later
        # zh: 存一份副本：后面的原地操作会改动它
    return hook


def put_back(name):
    def hook(module, inputs, output):
        return kept[name]
    return hook


b_logits = run(source, {name: keep(name) for name in layers})
a_logits = run(x, {})
target = int(b_logits.argmax())  # en: B's top class
# zh: B 的 Top-1 类别
print("target", target)
for name in layers:
    patched = run(x, {name: put_back(name)})
    gap = b_logits[target] - a_logits[target]
    restored = (patched[target] - a_logits[target]) / gap
    print(f"{name} restored {restored.item():.4f}")
