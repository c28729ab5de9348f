"""The Overview view's sentences, English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "view_overview": "Overview",
    "ov_intro": (
        "**The whole network at a glance.** Every convolution (every block, for attention models) in the "
        "order the photo flows through them, each with its strongest channels (largest mean), from one "
        "forward pass with a hook on every layer. A line with the map size marks each new resolution: a new "
        "stage, where the maps get smaller and the channels more numerous. Follow the rows down from edges "
        "and colours to parts and, at the end, the classes."
    ),
    "ov_k": "Channels per layer",
    "ov_k_help": "The k channels with the largest mean activation of each layer, strongest first.",
    "ov_running": "One pass through {model} with a hook on every layer…",
    "ov_caption": "{layers} layers in {stages} stages, {k} strongest channels each; #n is the channel's number.",
    "ov_caption_one_stage": "{layers} layers in one stage, {k} strongest channels each; #n is the channel's number.",
    "ov_stage": "Stage {n}: {h}×{w}, {layers} layer(s)",
    "ov_stage_pick": "Stage",
    "ov_paged": (
        "This network has {total} layers in {stages} stages, too many for one readable picture (more than "
        "{most}): one stage at a time."
    ),
    "ov_open_header": "Look closer",
    "ov_layer": "Layer",
    "ov_channel": "Channel",
    "ov_open": "Open in the Channel inspector",
}

ZH: dict[str, str] = {
    "view_overview": "全局概览",
    "ov_intro": (
        "**一眼看完整个网络。** 按照片流经的顺序列出每个卷积层（注意力模型则是每个块），每层显示最强的几个通道"
        "（平均激活最大），只需一次在每一层都挂了钩子的前向传播。每当分辨率变化，就有一条标着特征图尺寸的横线：这是一个新的阶段，"
        "特征图变小，通道变多。从上往下看，从边缘和颜色，到局部部件，最后到类别。"
    ),
    "ov_k": "每层通道数",
    "ov_k_help": "每一层平均激活最大的 k 个通道，最强的在前。",
    "ov_running": "正在让 {model} 做一次前向传播，每一层都挂了钩子…",
    "ov_caption": "共 {layers} 层、{stages} 个阶段，每层显示最强的 {k} 个通道；#n 是通道编号。",
    "ov_caption_one_stage": "共 {layers} 层、1 个阶段，每层显示最强的 {k} 个通道；#n 是通道编号。",
    "ov_stage": "第 {n} 阶段：{h}×{w}，{layers} 层",
    "ov_stage_pick": "阶段",
    "ov_paged": "这个网络有 {total} 层、{stages} 个阶段，一张图放不下（超过 {most} 层就看不清）：每次显示一个阶段。",
    "ov_open_header": "放大细看",
    "ov_layer": "层",
    "ov_channel": "通道",
    "ov_open": "在通道查看器中打开",
}
