"""The Grad-CAM view's code: the Gradients view's hooks, then each layer's channels weighted by their
mean gradient, summed, kept positive, scaled to [0, 1] and stretched over the photo."""

from vizhooks.lesson.snippets.gradients import activations, gradients, layers
from vizhooks.lesson.snippets.setup import to_map, x

# %%
# include: gradients

# en: Grad-CAM: weight each channel by its mean gradient, sum, ReLU, scale to [0, 1],
# en: upsample.
# zh: Grad-CAM：用平均梯度给每个通道加权，求和，ReLU，
# zh: 缩放到 [0, 1]，再上采样。
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
    mean = f"mean {cam.mean():.6g}"
    print(name, "Grad-CAM", tuple(cam.shape), mean, "peak at", (row, col))
