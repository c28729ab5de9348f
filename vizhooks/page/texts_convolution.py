"""The Convolution view's sentences, English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "view_convolution": "What one convolution computes",
    "cv_intro": (
        "**One number of one feature map, taken apart.** Pick a convolution, one of its output channels and "
        "a place in its map. A forward pre-hook keeps what went into the layer; from it the window under the "
        "kernel is cut out, multiplied with the kernel's weights value by value, summed per input channel, "
        "and the bias is added. The result is exactly the value the layer computed, shown below the sum. "
        "Then what the network does next to that value alone: BatchNorm's scale and shift, the activation."
    ),
    "cv_layer": "Convolution",
    "cv_channel": "Output channel",
    "cv_row": "Row in the output map",
    "cv_col": "Column in the output map",
    "cv_one_place": "The output map has only {n} place(s) along this side: {what} 0.",
    "cv_running": "One pass through {model} with a pre-hook on {layer}…",
    "cv_no_conv": "This model has no convolution (Conv2d) to take apart.",
    "cv_settings": (
        "**{layer}**: kernel {kh}×{kw}, stride {sh}×{sw}, zero padding {ph}×{pw}, dilation {dh}×{dw}, "
        "{cin} input channels, {h_in}×{w_in} in → {h}×{w} out. Output ({row}, {col}) looks at input rows "
        "{r0} to {r1} and columns {c0} to {c1}."
    ),
    "cv_dilated": "Dilation {dh}×{dw}: the kernel's taps are {dh} rows and {dw} columns apart, with gaps between.",
    "cv_depthwise": (
        "**Depthwise** (groups = {groups}): each output channel sees one input channel only. Output channel "
        "{channel} sees input channel {first}."
    ),
    "cv_grouped": (
        "**Grouped** (groups = {groups}): output channel {channel} is in group {group} and sees input channels "
        "{first} to {last} only ({n} of {cin})."
    ),
    "cv_padding_here": "{n} of the kernel's {taps} taps lie in the zero padding here: they add nothing.",
    "cv_top": "Input channels shown",
    "cv_top_help": "The input channels whose sums are largest in size (|sum|), largest first.",
    "cv_rest": "…and {n} more input channel(s), whose sums add up to {s:+.4f}.",
    "cv_no_bias": "(This conv has no bias: 0.)",
    "cv_total": "Conv output at ({row}, {col})",
    "cv_next_header": "What happens next to this value",
    "cv_bn": (
        "**{layer}** (BatchNorm2d): {scale:.4f} × ({before:+.4f}) + ({shift:+.4f}) = **{after:+.4f}** "
        "(scale = weight / √(running variance + ε), shift = bias − running mean × scale)."
    ),
    "cv_act": "**{layer}** ({kind}): {kind}({before:+.4f}) = **{after:+.4f}**",
    "cv_no_next": (
        "Nothing elementwise follows this conv: the next step mixes places or channels (another layer, a "
        "residual sum, a reshape into tokens), so the value ends here."
    ),
    "cv_value": "Value after {layer}",
    "cv_part": "Take apart",
    "cv_part_conv": "a convolution",
    "cv_part_pool": "a pooling layer",
    "cv_pool": "Pooling layer",
    "cv_pool_settings": (
        "**{layer}** ({type}): window {kh}×{kw}, stride {sh}×{sw}, padding {ph}×{pw}, {c} channels, each pooled "
        "on its own: {h_in}×{w_in} in → {h}×{w} out. Output ({row}, {col}) looks at input rows {r0} to {r1} "
        "and columns {c0} to {c1} of the same channel."
    ),
    "cv_title_pool_input": "input channel {channel}",
    "cv_pool_max": (
        "The largest of the {n} values in the window: **{value:+.4f}** (input row {r}, column {c}). The layer's "
        "own output at this place: **{own:+.4f}**."
    ),
    "cv_pool_mean": (
        "Sum of the window {total:+.4f} ÷ {divisor} = **{value:+.4f}**. The layer's own output at this place: "
        "**{own:+.4f}**."
    ),
    "cv_pool_padding_max": "{n} of the window's {taps} places lie in the padding: a max leaves them out.",
    "cv_pool_padding_avg": "{n} of the window's {taps} places lie in the padding: the layer's rule decides whether "
                           "they count as zeros (the divisor above).",
    "cv_pool_total": "Pooling output at ({row}, {col})",
    "cv_slide_header": "Watch the window slide",
    "cv_slide_conv": (
        "{layer} slides its kernel over the photo itself. The animation moves the window (red) over the input, "
        "the padding in grey, and fills in output channel {channel} place by place with the values the layer "
        "computed: the first places one by one, then faster."
    ),
    "cv_slide_pool": (
        "{layer} slides its window over each channel. The animation moves it (red) over input channel "
        "{channel}, the padding in grey, and fills in the output channel place by place with the values the "
        "layer computed, on the same colour scale: the first places one by one, then faster."
    ),
    "cv_slide_build": "Build the animation",
    "cv_slide_running": "One pass up to {layer}, drawing the frames and encoding them…",
    "cv_slide_caption": "{frames} frames of the {places} places of the output map, in reading order.",
    "cv_slide_gif": "Download GIF",
    "cv_slide_mp4": "Download MP4",
    "cv_slide_no_mp4": "MP4 needs PyAV or OpenCV with an H.264 encoder; the GIF is there.",
}

ZH: dict[str, str] = {
    "view_convolution": "一次卷积算了什么",
    "cv_intro": (
        "**把一张特征图里的一个数拆开来看。** 选一个卷积层、它的一个输出通道和特征图里的一个位置。"
        "前向预钩子（pre-hook）保存了进入这一层的输入；从中取出卷积核覆盖的窗口，与卷积核的权重逐个相乘，"
        "按输入通道求和，再加上偏置。结果正是这一层算出的那个值，就显示在求和下方。"
        "接着是网络对这个值单独做的下一步：批归一化（BatchNorm）的缩放和平移，以及激活函数。"
    ),
    "cv_layer": "卷积层",
    "cv_channel": "输出通道",
    "cv_row": "输出特征图中的行",
    "cv_col": "输出特征图中的列",
    "cv_one_place": "输出特征图在这个方向上只有 {n} 个位置：{what} 0。",
    "cv_running": "在 {layer} 上挂前向预钩子，运行一次 {model}……",
    "cv_no_conv": "这个模型没有可以拆开的卷积层（Conv2d）。",
    "cv_settings": (
        "**{layer}**：卷积核 {kh}×{kw}，步幅 {sh}×{sw}，零填充 {ph}×{pw}，空洞 {dh}×{dw}，"
        "{cin} 个输入通道，输入 {h_in}×{w_in} → 输出 {h}×{w}。输出位置 ({row}, {col}) 看的是输入的第 "
        "{r0} 到 {r1} 行、第 {c0} 到 {c1} 列。"
    ),
    "cv_dilated": "空洞 {dh}×{dw}：卷积核的各个采样点相隔 {dh} 行、{dw} 列，中间留有空隙。",
    "cv_depthwise": (
        "**逐通道卷积**（groups = {groups}）：每个输出通道只看一个输入通道。输出通道 {channel} 只看输入通道 {first}。"
    ),
    "cv_grouped": (
        "**分组卷积**（groups = {groups}）：输出通道 {channel} 属于第 {group} 组，只看输入通道 {first} 到 {last}"
        "（共 {cin} 个中的 {n} 个）。"
    ),
    "cv_padding_here": "此处卷积核的 {taps} 个采样点中有 {n} 个落在零填充上：它们贡献为零。",
    "cv_top": "显示的输入通道数",
    "cv_top_help": "按求和结果的绝对值（|和|）从大到小排列的输入通道。",
    "cv_rest": "……另外还有 {n} 个输入通道，它们的和合计为 {s:+.4f}。",
    "cv_no_bias": "（这个卷积层没有偏置：记为 0。）",
    "cv_total": "卷积在 ({row}, {col}) 的输出",
    "cv_next_header": "这个值接下来经历了什么",
    "cv_bn": (
        "**{layer}**（BatchNorm2d）：{scale:.4f} × ({before:+.4f}) + ({shift:+.4f}) = **{after:+.4f}**"
        "（缩放 = 权重 / √(滑动方差 + ε)，平移 = 偏置 − 滑动均值 × 缩放）。"
    ),
    "cv_act": "**{layer}**（{kind}）：{kind}({before:+.4f}) = **{after:+.4f}**",
    "cv_no_next": (
        "这个卷积之后没有逐元素的操作：下一步会混合不同位置或通道（另一层、残差相加、重排成词元），所以这个值到此为止。"
    ),
    "cv_value": "经过 {layer} 之后的值",
    "cv_part": "拆开来看",
    "cv_part_conv": "卷积层",
    "cv_part_pool": "池化层",
    "cv_pool": "池化层",
    "cv_pool_settings": (
        "**{layer}**（{type}）：窗口 {kh}×{kw}，步幅 {sh}×{sw}，填充 {ph}×{pw}，{c} 个通道各自单独池化："
        "输入 {h_in}×{w_in} → 输出 {h}×{w}。输出位置 ({row}, {col}) 看的是输入同一通道的第 {r0} 到 {r1} 行、"
        "第 {c0} 到 {c1} 列。"
    ),
    "cv_title_pool_input": "输入通道 {channel}",
    "cv_pool_max": "窗口内 {n} 个值中最大的是 **{value:+.4f}**（输入第 {r} 行、第 {c} 列）。这一层自己在此位置的输出："
                   "**{own:+.4f}**。",
    "cv_pool_mean": (
        "窗口内的和 {total:+.4f} ÷ {divisor} = **{value:+.4f}**。这一层自己在此位置的输出：**{own:+.4f}**。"
    ),
    "cv_pool_padding_max": "窗口的 {taps} 个位置中有 {n} 个落在填充上：取最大值时不考虑它们。",
    "cv_pool_padding_avg": (
        "窗口的 {taps} 个位置中有 {n} 个落在填充上：是否把它们当作 0 计入，由这一层的规则决定（见上面的除数）。"
    ),
    "cv_pool_total": "池化在 ({row}, {col}) 的输出",
    "cv_slide_header": "看窗口滑动",
    "cv_slide_conv": (
        "{layer} 的卷积核直接在照片上滑动。动画中，红框（窗口）在输入上移动，灰色部分是填充；"
        "输出通道 {channel} 用这一层实际算出的值逐格填满：开头几个位置逐一展示，之后加快。"
    ),
    "cv_slide_pool": (
        "{layer} 在每个通道上各自滑动窗口。动画中，红框在输入通道 {channel} 上移动，灰色部分是填充；"
        "输出通道用这一层实际算出的值逐格填满，颜色刻度与输入相同：开头几个位置逐一展示，之后加快。"
    ),
    "cv_slide_build": "生成动画",
    "cv_slide_running": "运行一次前向传播，直到 {layer}；正在绘制并编码各帧……",
    "cv_slide_caption": "按阅读顺序，从输出特征图的 {places} 个位置中取 {frames} 帧。",
    "cv_slide_gif": "下载 GIF",
    "cv_slide_mp4": "下载 MP4",
    "cv_slide_no_mp4": "生成 MP4 需要 PyAV 或带 H.264 编码器的 OpenCV；GIF 仍可下载。",
}
