"""The set-up every snippet runs after: imports, the model (the builder writes its constructor: code.py's
``_constructor``), the photo prepared the page's way, and ``to_map`` with only the branches the chosen
layers need. Parts are put together by code.py's ``setup_code``; ``fallback_*`` wraps a pretrained model for
a notebook run offline."""

# %% imports
import torch
from PIL import Image
from torchvision import models
from torchvision.transforms import functional as TF

# %% _
from vizhooks.lesson.snippets import fill

model = models.resnet18(weights=None).eval()  # the builder writes the model's own constructor here
# %% hf_model
from transformers import AutoConfig, AutoModelForImageClassification


# en: A Hugging Face model returns an object; like the page's model, this one returns the logits,
# en: and its layers keep their Hugging Face names under "hf." (e.g. hf.vit.layers.0).
# zh: Hugging Face 模型返回的是一个对象；与页面的模型一样，这里只返回 logits，
# zh: 各层保留 Hugging Face 的名字，前面加 "hf."（如 hf.vit.layers.0）。
# en: flip=True: the model reads its colours as BGR (MobileViT); the picture stays RGB.
# zh: flip=True：模型按 BGR 顺序读颜色（MobileViT）；图片本身仍是 RGB。
class HFLogits(torch.nn.Module):
    def __init__(self, hf, flip=False):
        super().__init__()
        self.hf, self.flip = hf, flip

    def forward(self, x):
        return self.hf(pixel_values=x.flip(1) if self.flip else x).logits


# %% _
hf_config = AutoConfig.from_pretrained("folder")  # the builder writes the model's constructor
model = HFLogits(AutoModelForImageClassification.from_config(hf_config)).eval()
# %% free_size

# en: The page's preprocessing: shorter side -> {fill.size} px, aspect kept
# en: (longer side at most {fill.cap}), no crop, the model's own interpolation, mean and std.
# zh: 与页面相同的预处理：短边缩放到 {fill.size} 像素，保持宽高比
# zh: （长边最多 {fill.cap}），不裁剪；使用模型自己的插值方式、均值和标准差。
image = Image.open(fill.image).convert("RGB")
w, h = image.size
short, long = min(w, h), max(w, h)
new_long = min(round(fill.size * long / short), fill.cap)
size = (new_long, fill.size) if w >= h else (fill.size, new_long)
image = image.resize(size, fill.resample, reducing_gap=3.0)
# %% fixed_size

# en: The page's preprocessing: this model needs {fill.side} x {fill.side} pixels, so the shorter side
# en: goes to {fill.resize} and the centre is cropped to a square; the model's own interpolation,
# en: mean and std.
# zh: 与页面相同的预处理：该模型需要 {fill.side} x {fill.side} 像素的输入，
# zh: 所以先把短边缩放到 {fill.resize}，再从中心裁剪出正方形；
# zh: 使用模型自己的插值方式、均值和标准差。
image = Image.open(fill.image).convert("RGB")
w, h = image.size
scale = fill.resize / min(w, h)
new_w, new_h = max(fill.resize, round(w * scale)), max(fill.resize, round(h * scale))
image = image.resize((new_w, new_h), fill.resample, reducing_gap=3.0)
left, top = (new_w - fill.side) // 2, (new_h - fill.side) // 2
image = image.crop((left, top, left + fill.side, top + fill.side))
# %% processor_size

# en: The model's image processor (preprocessor_config.json), resizing as transformers
# en: does: shorter side -> {fill.resize} px (the longer side rounded down, one resampling
# en: step), then the centre cropped to {fill.side} x {fill.side}; the processor's
# en: interpolation, mean and std.
# zh: 按模型自己的图像处理器（preprocessor_config.json）处理，
# zh: 缩放方式与 transformers 相同：短边缩放到 {fill.resize} 像素（长边向下取整，
# zh: 一步重采样），再从中心裁剪出 {fill.side} x {fill.side}；
# zh: 使用处理器的插值方式、均值和标准差。
image = Image.open(fill.image).convert("RGB")
w, h = image.size
if w <= h:
    new_w, new_h = fill.resize, int(fill.resize * h / w)
else:
    new_w, new_h = int(fill.resize * w / h), fill.resize
image = image.resize((new_w, new_h), fill.resample)
left, top = (new_w - fill.side) // 2, (new_h - fill.side) // 2
image = image.crop((left, top, left + fill.side, top + fill.side))
# %% squash_size

# en: The model's image processor (preprocessor_config.json), resizing as transformers
# en: does: the photo squeezed to {fill.resize} x {fill.resize} px (aspect ratio not kept),
# en: then the centre cropped to {fill.side} x {fill.side}; the processor's interpolation,
# en: mean and std.
# zh: 按模型自己的图像处理器（preprocessor_config.json）处理，
# zh: 缩放方式与 transformers 相同：整张照片压缩成 {fill.resize} x {fill.resize} 像素
# zh: （不保持宽高比），再从中心裁剪出 {fill.side} x {fill.side}；
# zh: 使用处理器的插值方式、均值和标准差。
image = Image.open(fill.image).convert("RGB")
image = image.resize((fill.resize, fill.resize), fill.resample)
left = top = (fill.resize - fill.side) // 2
image = image.crop((left, top, left + fill.side, top + fill.side))
# %% normalise
mean = fill.mean
std = fill.std
x = TF.normalize(TF.to_tensor(image), mean, std).unsqueeze(0)
modules = dict(model.named_modules())
# %% channels_last_list

# en: modules whose output is (1, H, W, C) (Swin)
# zh: 输出为 (1, H, W, C) 的模块（Swin）
CHANNELS_LAST = fill.channels_last
# %% to_map


def to_map(name, t):
    # en: any captured tensor as (1, C, H, W) feature maps, as the page shows it
    # zh: 把捕获的任意张量变成 (1, C, H, W) 特征图，与页面显示的一致
# %% tokens
    if t.ndim == 3:
        # en: transformer tokens (1, 1 + h*w, D): drop the class token, lay out the grid
        # zh: Transformer 的词元（token）(1, 1 + h*w, D)：去掉类别词元，排成网格
        side = int((t.shape[1] - 1) ** 0.5)
        return t[:, 1:, :].transpose(1, 2).reshape(1, t.shape[2], side, side)
# %% channels_last
    if name in CHANNELS_LAST:
        return t.permute(0, 3, 1, 2)
# %% to_map_end
    return t
# %% fallback_try
try:
# %% _
    model = models.resnet18(weights=models.ResNet18_Weights.DEFAULT).eval()  # the pretrained constructor
# %% fallback_except
except Exception as exc:
    # en: no cached checkpoint and no internet: the page's seeded random weights instead
    # zh: 没有缓存的权重文件，也连不上网：改用与页面相同的带种子随机权重
    print(f"Random weights: pretrained weights for {fill.model} could not be loaded ({exc}). "
          "Feature maps show an untrained network and predictions are meaningless.")
# %% _
    torch.manual_seed(0)  # the random constructor
    model = models.resnet18(weights=None).eval()
