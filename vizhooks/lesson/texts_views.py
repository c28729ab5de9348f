"""Sentences of the views that the lesson's handout draws too (vizhooks/lesson/handout.py): one
convolution taken apart, the clamp, backward's table, Grad-CAM's caption, where the weights came from.
The page's views say them the same way (vizhooks/page/texts.py merges these tables into its own)."""

from __future__ import annotations

EN: dict[str, str] = {
    "weights_from_env": "Weights from the file named by VIZHOOKS_WEIGHTS.",
    "weights_from_cache": "Pretrained weights, from this machine's cache.",
    "weights_from_download": "Pretrained weights, downloaded once and cached.",
    "weights_from_file": "Weights from this server's own checkpoint.",
    "top5_random": "The weights are random, so these guesses are meaningless.",
    "cam_caption": "{layer} → {label}",
    "col_step": "step",
    "col_module": "module",
    "col_type": "type",
    "col_grad_output": "grad_output (arrives)",
    "col_grad_input": "grad_input (leaves)",
    "col_note": "note",
    "backward_shapes": (
        "In this table `{deep}` receives a {deep_shape} gradient and `{shallow}` a {shallow_shape} one: "
        "the deeper layer has {deep_c} channels of {deep_hw} against {shallow_c} channels of {shallow_hw}."
    ),
    "backward_first": (
        "`{first}`'s `grad_input` is {shape}: the gradient with respect to the photo itself. It is not "
        "`None` because the page's input requires a gradient: `x.requires_grad_(True)`, with the weights "
        "frozen, is how backward reaches every layer without filling the weights' `.grad`. An input that "
        "does not require a gradient gets `None` there."
    ),
    "backward_first_none": (
        "`{first}`'s `grad_input` is `None`: its input does not require a gradient, so backward stops there."
    ),
    "total_params": "Parameters",
    "clamp_intro": (
        "`output.register_hook(lambda grad: grad.clamp(-limit, limit))` on one layer clips the "
        "gradient flowing back through it. Backward runs from the score towards the input, so what "
        "changes is every layer **before** it (upstream, earlier in the forward pass): they receive "
        "the clipped gradient, and their Grad-CAM maps change with it. The layers after it do not."
    ),
    "clamp_clipped": (
        "Limit **{limit:.3g}**, the {p}th percentile of the non-zero |gradient| values at `{layer}`: "
        "**{share:.1%}** of its {count:,} gradient values are clipped."
    ),
    "clamp_changed": "Its gradient changed by {change:.1%} on average (mean |clamped − as it is| / mean |as it is|).",
    "clamp_no_earlier": "No chosen layer comes before this one: choose a later layer to clamp at.",
    "clamp_before": "Gradient, as it is",
    "clamp_after": "Gradient, with the clamp at {layer} (a later layer)",
    "clamp_cam_before": "Grad-CAM, as it is",
    "clamp_cam_after": "Grad-CAM, with the clamp at {layer}",
    "cv_title_input": "input (mean of the {n} channel(s) seen)",
    "cv_title_close": "close-up: window, next step (dashed)",
    "cv_title_output": "output channel {channel}, ({row}, {col})",
    "cv_window_caption": (
        "Red: the window for this output value, its taps as squares. Dashed orange: the window for the next "
        "column, {sw} input column(s) further (the stride). Grey: zero padding outside the picture."
    ),
    "cv_head_window": "input window",
    "cv_head_weights": "× kernel",
    "cv_head_products": "= products",
    "cv_head_sum": "sum",
    "cv_in_channel": "in #{n}",
    "cv_equation": (
        "Sum of all {n} channel sums {sums:+.4f} + bias {bias:+.4f} = **{total:+.4f}**. The layer's own output "
        "at this place: **{own:+.4f}**."
    ),
}

ZH: dict[str, str] = {
    "weights_from_env": "权重来自 VIZHOOKS_WEIGHTS 指定的文件。",
    "weights_from_cache": "预训练权重，来自本机的缓存。",
    "weights_from_download": "预训练权重，已下载一次并缓存。",
    "weights_from_file": "权重来自本服务器自己的检查点文件。",
    "top5_random": "权重是随机的，所以这些猜测没有意义。",
    "cam_caption": "{layer} → {label}",
    "col_step": "步骤",
    "col_module": "模块",
    "col_type": "类型",
    "col_grad_output": "grad_output（对输出的梯度）",
    "col_grad_input": "grad_input（对输入的梯度）",
    "col_note": "备注",
    "backward_shapes": (
        "在这张表中，`{deep}` 收到的梯度是 {deep_shape}，`{shallow}` 收到的是 {shallow_shape}："
        "较深的层有 {deep_c} 个 {deep_hw} 的通道，而较浅的层有 {shallow_c} 个 {shallow_hw} 的通道。"
    ),
    "backward_first": (
        "`{first}` 的 `grad_input` 是 {shape}：即对照片本身的梯度。它不是 `None`，因为页面的输入需要梯度："
        "在冻结权重的同时调用 `x.requires_grad_(True)`，反向传播才能到达每一层，而不会填充权重的 `.grad`。"
        "如果输入不需要梯度，这里就是 `None`。"
    ),
    "backward_first_none": "`{first}` 的 `grad_input` 是 `None`：它的输入不需要梯度，所以反向传播到此为止。",
    "total_params": "参数量",
    "clamp_intro": (
        "在某一层上使用 `output.register_hook(lambda grad: grad.clamp(-limit, limit))`，"
        "会裁剪反向流经这一层的梯度。反向传播从得分出发朝输入进行，所以改变的是它**之前**的每一层"
        "（上游，即前向传播中更早的层）：它们收到裁剪后的梯度，Grad-CAM 图也随之改变。它之后的层不变。"
    ),
    "clamp_clipped": (
        "阈值 **{limit:.3g}**，即 `{layer}` 处非零 |梯度| 值的第 {p} 百分位数：它的 {count:,} 个梯度值中"
        "有 **{share:.1%}** 被裁剪。"
    ),
    "clamp_changed": "这一层的梯度平均变化了 {change:.1%}（平均 |裁剪后 − 原样| / 平均 |原样|）。",
    "clamp_no_earlier": "所选的层中没有位于这一层之前的：请选择一个更靠后的层来裁剪梯度。",
    "clamp_before": "梯度（原样）",
    "clamp_after": "梯度（在更靠后的 {layer} 处裁剪后）",
    "clamp_cam_before": "Grad-CAM（原样）",
    "clamp_cam_after": "Grad-CAM（在 {layer} 处裁剪后）",
    "cv_title_input": "输入（所看 {n} 个通道的平均）",
    "cv_title_close": "局部放大：窗口与下一步（虚线）",
    "cv_title_output": "输出通道 {channel}，({row}, {col})",
    "cv_window_caption": (
        "红色：这个输出值对应的窗口，方块是采样点。橙色虚线：下一列的窗口，向右移动 {sw} 个输入列（即步幅）。"
        "灰色：图片外的零填充。"
    ),
    "cv_head_window": "输入窗口",
    "cv_head_weights": "× 卷积核",
    "cv_head_products": "= 乘积",
    "cv_head_sum": "求和",
    "cv_in_channel": "输入 #{n}",
    "cv_equation": (
        "全部 {n} 个通道的和 {sums:+.4f} + 偏置 {bias:+.4f} = **{total:+.4f}**。这一层自己在此位置的输出："
        "**{own:+.4f}**。"
    ),
}
