"""The lesson's Clever Hans step: does the model look at the object or at a sticker? Grad-CAM of one
class for the photo and for the photo with a red sticker in its bottom-right corner, and where the
heat's centre lies in each: what the Audit view compares over a whole folder."""

import torch

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, modules, to_map, x

# %%

# en: Right for the wrong reason? Put a red sticker in the bottom-right corner, and
# en: see where the model looks for the class {fill.target}
# en: in both pictures (Grad-CAM). The heat's centre (row, column; 0: top or left edge,
# en: 1: bottom or right) is what the Audit view compares over a whole folder of photos.
# zh: 模型是不是"答对了，理由却错了"？在右下角贴一张红色贴纸，
# zh: 用 Grad-CAM 看看模型在两张图里找类别 {fill.target} 时各看哪里。
# zh: 热力的中心（行、列；0 是上边或左边，1 是下边或右边）
# zh: 正是"检查"视图在一整个文件夹里比较的东西。
import torch.nn.functional as F

name = fill.layer
target = fill.target
mean, std = torch.tensor(fill.mean), torch.tensor(fill.std)
red = (torch.tensor([1.0, 0.0, 0.0]) - mean) / std
side = max(4, min(x.shape[-2:]) // 6)
sticker = x.detach().clone()
sticker[0, :, -side:, -side:] = red[:, None, None]
seen = {}


def keep(module, inputs, output):
    seen["act"] = output.detach().clone()
    output.register_hook(lambda grad: seen.update(grad=grad.detach()))


model.requires_grad_(False)
handle = modules[name].register_forward_hook(keep)
try:
    for label, picture in (("photo", x), ("sticker", sticker)):
        logits = model(picture.detach().clone().requires_grad_(True))
        logits[0, target].backward()
        A, G = to_map(name, seen["act"]), to_map(name, seen["grad"])
        cam = F.relu((G.mean(dim=(2, 3), keepdim=True) * A).sum(dim=1, keepdim=True))
        low, high = cam.min(), cam.max()
        cam = (cam - low) / (high - low) if high > low else cam * 0
        size = x.shape[-2:]
        cam = F.interpolate(cam, size=size, mode="bilinear", align_corners=False)
        cam = cam[0, 0].clamp(min=0)
        # en: the centre of mass of the heat: each row's (column's) share of it
        # zh: 热力的质心：每一行（列）占热力的份额
        h, w = cam.shape
        total = cam.sum().clamp(min=1e-12)
        row = (cam.sum(dim=1) * (torch.arange(h) + 0.5) / h).sum() / total
        col = (cam.sum(dim=0) * (torch.arange(w) + 0.5) / w).sum() / total
        top = int(logits.argmax())
        centre = f"{row.item():.3f} {col.item():.3f}"
        print(label, "top", top, "heat centre", centre)
finally:
    handle.remove()
