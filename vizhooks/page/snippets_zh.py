"""简体中文 comments for the code the page shows: keys are the English comment texts of the
templates in snippets.py (placeholders included), values their translation. The code is the same
in both languages; only comments change. A Chinese character is two columns wide in a code box,
so a translated line keeps to about 40 of them (tests/test_snippets.py measures every line)."""

from __future__ import annotations

COMMENTS_ZH: dict[str, str] = {
    "Does the map depend on the model? Grad-CAM of the photo, then again after each stage":
        "解释图取决于模型吗？先算这张照片的 Grad-CAM，然后",
    "of a copy of the network is re-initialised, from the head down (Adebayo et al. 2018).":
        "从输出端往下逐段重新初始化网络副本，每段之后重算（Adebayo 等，2018）。",
    "the page's size: the map stretched over the photo": "与页面相同的尺寸：把热力图拉伸到照片大小",
    "tied values share the mean of their places": "并列的值取其名次的平均值",
    "PyTorch's own initialisation, drawn anew": "按 PyTorch 自带的初始化方式重新抽取参数",
    "One output value of a convolution, by hand. A pre-hook keeps the conv's input, a hook":
        "手工算出卷积的一个输出值。前向预钩子保存卷积层的输入，",
    "its output; the window under the kernel times the weights, summed, plus the bias, is":
        "前向钩子保存它的输出；卷积核覆盖的窗口与权重逐元素相乘、求和、",
    "the value the hook saw.": "再加上偏置，就是钩子看到的那个值。",
    "the input channels this output channel sees: all of them, or its group's":
        "这个输出通道看到的输入通道：全部，或只是它所在组的那些",
    "every window as one column: (1, per_group * kh * kw, places), zeros where padded":
        "每个窗口展开成一列：(1, per_group * kh * kw, 位置数)，填充处为 0",
    "the centre": "中心",
    "The page's preprocessing: shorter side -> {size} px, aspect kept":
        "与页面相同的预处理：短边缩放到 {size} 像素，保持宽高比",
    "(longer side at most {cap}), no crop, the model's own interpolation, mean and std.":
        "（长边最多 {cap}），不裁剪；使用模型自己的插值方式、均值和标准差。",
    "The page's preprocessing: this model needs {side} x {side} pixels, so the shorter side":
        "与页面相同的预处理：该模型需要 {side} x {side} 像素的输入，",
    "goes to {side} and the centre is cropped to a square; the model's own interpolation,":
        "所以先把短边缩放到 {side}，再从中心裁剪出正方形；",
    "mean and std.": "使用模型自己的插值方式、均值和标准差。",
    "modules whose output is (1, H, W, C) (Swin)": "输出为 (1, H, W, C) 的模块（Swin）",
    "transformer tokens (1, 1 + h*w, D): drop the class token, lay out the grid":
        "Transformer 的 token (1, 1 + h*w, D)：去掉类别 token，排成网格",
    "Forward hooks: called right after each module's forward(), with its output.":
        "前向钩子：在每个模块的 forward() 之后立即调用，参数中有它的输出。",
    "clone: a later in-place ReLU may change it": "clone：后面的原地 ReLU 可能会改写它",
    "Forward pre-hooks: called right before each module's forward(), with its inputs":
        "前向预钩子：在每个模块的 forward() 之前立即调用，",
    "(a tuple).": "参数中有它的输入（一个元组）。",
    "Tensor hooks: a forward hook registers output.register_hook(...), which PyTorch calls":
        "张量钩子：前向钩子里调用 output.register_hook(...)，",
    "during backward with d(logit) / d(output). No retain_grad() needed.":
        "PyTorch 会在反向传播时把 d(logit) / d(output) 传给它。不需要 retain_grad()。",
    "we only want gradients of activations": "我们只需要激活值的梯度",
    "no cached checkpoint and no internet: the page's seeded random weights instead":
        "没有缓存的权重文件，也连不上网：改用与页面相同的带种子随机权重",
    "Grad-CAM: weight each channel by its mean gradient, sum, ReLU, scale to [0, 1],":
        "Grad-CAM：用平均梯度给每个通道加权，求和，ReLU，",
    "upsample.": "缩放到 [0, 1]，再上采样。",
    "Full backward hooks: called during backward with the gradients of a module's inputs":
        "完整反向钩子：在反向传播时调用，参数中有模块输入和输出的梯度。",
    "and outputs. They cannot wrap a module whose output is changed in place later":
        "它不能挂在输出随后被原地修改的模块上",
    "(ResNet's bn1, followed by ReLU(inplace=True)) or an in-place module itself (its":
        "（ResNet 的 bn1，后面紧跟 ReLU(inplace=True)），",
    "relu), so those are left out here.": "也不能挂在原地运算的模块本身上（它的 relu），所以这里跳过它们。",
    "A layer table from forward pre-hooks (input shape, start time) and forward hooks":
        "用前向预钩子（输入形状、开始时间）和前向钩子（输出形状、结束时间）",
    "(output shape, end time), on every module, in one pass.":
        "在一次前向传播中为每个模块生成一张层信息表。",
    "A hook is a function PyTorch calls for you at a fixed moment. Nothing in the model's":
        "钩子是 PyTorch 在固定时刻替你调用的函数。",
    "code changes: register it, run the model, remove it.":
        "模型的代码一行都不用改：注册钩子，运行模型，移除钩子。",
    "The same layer seen twice: a forward pre-hook gets what goes in, a forward hook what":
        "同一层看两次：前向预钩子拿到进去的输入，",
    "comes out.": "前向钩子拿到出来的输出。",
    ".grad is only kept for leaf tensors (inputs, parameters). A layer's output is not a":
        ".grad 只为叶子张量（输入、参数）保留。层的输出不是叶子张量，",
    "leaf, so after backward its .grad is None; a tensor hook is how you see its gradient.":
        "所以反向传播后它的 .grad 是 None；要看它的梯度，就用张量钩子。",
    "A tensor hook may return a new gradient: here the gradient at clamp_at is clipped to":
        "张量钩子可以返回新的梯度：这里把 clamp_at 处的梯度",
    "[-limit, limit], and every layer before it receives the changed gradient.":
        "裁剪到 [-limit, limit]，它之前的每一层收到的都是改变后的梯度。",
    "the returned tensor replaces the gradient": "返回的张量会替换原来的梯度",
    "Forgetting handle.remove(): a hook registered in a loop stays on the model, so every":
        "忘记 handle.remove()：在循环里注册的钩子会一直留在模型上，",
    "pass adds one more and the calls pile up. Removing it after each pass keeps one call":
        "所以每次前向传播都多一个钩子，调用次数越积越多。",
    "per pass.": "每次传播后移除它，每次就只调用一次。",
    "clean up, in both cases": "两种情况最后都要清理",
    "top-1 class": "Top-1 类别",
    "any captured tensor as (1, C, H, W) feature maps, as the page shows it":
        "把捕获的任意张量变成 (1, C, H, W) 特征图，与页面显示的一致",
}
