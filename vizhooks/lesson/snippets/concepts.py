"""The lesson's concepts step: what has a layer learned across many crops of the photos? CRAFT's
recipe in plain PyTorch and scikit-learn: random square crops, one forward hook that keeps each
crop's positive activations averaged over the map (a row of A), then NMF, A ~ U W."""

import torch
from torchvision.transforms import functional as TF

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import image, model, modules, to_map

# %%

# en: Concepts (CRAFT): cut the photos into random square crops, keep each crop's
# en: activations of the layer with a forward hook (the positive part, averaged
# en: over the map: one row of A per crop), then factorise A ~ U W with scikit-learn's
# en: NMF. Each row of W is a concept, a mix of channels; U says how much of each
# en: concept every crop holds. The Concepts view does this over a folder of photos.
# zh: 概念（CRAFT）：把照片随机裁成许多正方形的裁剪块，用前向钩子保存每个裁剪块在
# zh: 这一层的激活值（取正的部分，在整张特征图上求平均：每块是 A 的一行），
# zh: 再用 scikit-learn 的 NMF（非负矩阵分解）把 A 分解成 U W。W 的每一行是一个概念，
# zh: 也就是几个通道的组合；U 说明每个裁剪块里各个概念有多少。
# zh: “概念”视图对一整个文件夹的照片做同样的事。
import warnings

import numpy as np
from sklearn.decomposition import NMF  # type: ignore[import-untyped]

name = fill.layer
photos = [image]  # en: add more photos (PIL images): concepts are what they share
# zh: 可以加入更多照片（PIL 图像）：概念就是它们共有的东西
k, per_photo = fill.k, fill.crops
# en: the model's own mean and std (an earlier step may reuse the name "mean")
# zh: 模型自己的均值和标准差（前面的步骤可能改用了 "mean" 这个名字）
mean_std = fill.mean, fill.std
rng = np.random.default_rng(0)
pieces, boxes = [], []
for photo in photos:
    w, h = photo.size
    side = round(0.5 * min(w, h))  # en: each crop: half the shorter side
    # zh: 每个裁剪块的边长：短边的一半
    lefts = rng.integers(0, w - side + 1, size=per_photo).tolist()
    tops = rng.integers(0, h - side + 1, size=per_photo).tolist()
    for left, top in zip(lefts, tops, strict=True):
        boxes.append((left, top, left + side, top + side))
        piece = photo.crop(boxes[-1])
        piece = piece.resize((fill.side, fill.side), fill.resample, reducing_gap=3.0)
        pieces.append(TF.normalize(TF.to_tensor(piece), *mean_std))
rows = []


def keep_rows(module, inputs, output):
    for one in output.split(1):  # en: one crop at a time, as (1, C, H, W)
        # zh: 一次一个裁剪块，变成 (1, C, H, W)
        rows.append(to_map(name, one).clamp(min=0).mean(dim=(2, 3)))


handle = modules[name].register_forward_hook(keep_rows)
try:
    with torch.no_grad():
        model(torch.stack(pieces))
finally:
    handle.remove()
A = torch.cat(rows).numpy()  # en: (crops, channels), never negative
# zh: (裁剪块数, 通道数)，没有负数
nmf = NMF(n_components=k, init="nndsvda", max_iter=500, random_state=0)
with warnings.catch_warnings(action="ignore"):  # en: "not converged" after 500 steps
    # zh: 500 步后“尚未收敛”的警告
    U = nmf.fit_transform(A)  # en: (crops, k): how much of each concept
    # zh: (裁剪块数, k)：各个概念有多少
W = nmf.components_
error = np.linalg.norm(A - U @ W) / np.linalg.norm(A)
print(f"A {A.shape[0]}x{A.shape[1]} ~ U W, off by {error:.4f}")
for i in range(k):
    channels = np.argsort(-W[i], kind="stable")[:3].tolist()
    print(f"concept {i} strongest channels {channels}")
    for row in np.argsort(-U[:, i], kind="stable")[:3].tolist():
        print(f"  crop {boxes[row]} amount {U[row, i]:.4f}")
