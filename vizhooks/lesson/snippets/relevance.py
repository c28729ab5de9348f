"""The lesson's relevance step: which channels of a layer decided? Activation times gradient (Taylor),
summed over the map, one number per channel."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.setup import model, modules, to_map, x

# %%

# en: Which channels decided? A forward hook keeps the layer's output and puts a tensor
# en: hook on it for its gradient; activation x gradient, summed over the map, scores each
# en: channel (a first-order Taylor estimate of what the class score would lose without it).
# zh: 哪些通道做出了决定？前向钩子保存这一层的输出，并在它上面挂一个张量钩子取梯度；
# zh: 激活值 x 梯度，在整张特征图上求和，就是每个通道的得分
# zh: （一阶泰勒近似：去掉这个通道，类别分数大约会损失多少）。
name = fill.layer
target = fill.target
kept = {}


def hook(module, inputs, output):
    kept["act"] = output.detach().clone()
    output.register_hook(lambda grad: kept.update(grad=grad.detach()))


for p in model.parameters():
    p.requires_grad_(False)
handle = modules[name].register_forward_hook(hook)
try:
    logits = model(x.detach().clone().requires_grad_(True))
    logits[0, target].backward()
finally:
    handle.remove()
act, grad = to_map(name, kept["act"]), to_map(name, kept["grad"])
scores = (act * grad).sum(dim=(0, 2, 3))
top = scores.argsort(descending=True)[:5]
print("target", target)
for channel in top.tolist():
    print(f"{name} channel {channel} relevance {scores[channel].item():.6g}")
