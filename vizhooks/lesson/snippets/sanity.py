"""The lesson's sanity step: Grad-CAM after each stage of a copy of the model is re-initialised."""

import torch

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, to_map, x

# %%

# en: Does the map depend on the model? Grad-CAM of the photo, then again after each stage
# en: of a copy of the network is re-initialised, from the head down (Adebayo et al. 2018).
# zh: 解释图取决于模型吗？先算这张照片的 Grad-CAM，然后
# zh: 从输出端往下逐段重新初始化网络副本，每段之后重算（Adebayo 等，2018）。
import copy

name = fill.layer
target = fill.target
stages = fill.stages


def grad_cam(net):
    kept = {}

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
    # en: the page's size: the map stretched over the photo
    # zh: 与页面相同的尺寸：把热力图拉伸到照片大小
    return torch.nn.functional.interpolate(cam, size=x.shape[-2:], mode="bilinear",
                                           align_corners=False)[0, 0]


def ranks(t):
    # en: tied values share the mean of their places
    # zh: 并列的值取其名次的平均值
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
    torch.manual_seed(step)  # en: PyTorch's own initialisation, drawn anew
    # zh: 按 PyTorch 自带的初始化方式重新抽取参数
    for module in parts[stage].modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    rho = spearman(original, grad_cam(scrambled))
    print(f"{stage:>10} re-initialised: Spearman {rho:.3f}")
