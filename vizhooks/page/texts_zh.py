"""简体中文 texts of the page; keys and {placeholders} exactly as in texts.EN."""

from __future__ import annotations

ZH: dict[str, str] = {
    # page
    "page_title": "vizhooks：图像网络内部一览",
    "title": "vizhooks：看看图像网络的内部",
    "subtitle": (
        "在所选的层上注册前向钩子（hook）函数，照片在网络中前向传播一次，每个通道的特征图就都捕获下来了。"
        "图块越亮，激活值越大。"
    ),
    "language": "语言",
    # layer labels: where a layer sits, for any model
    "where_conv": "第 {index}/{count} 个卷积层",
    "where_block": "第 {index}/{count} 个块",
    "label_conv": "{name} · {where} · {cin}→{cout}，卷积核 {k}，步幅 {s}",
    "label_other": "{name} · {where} · {type}{channels}",
    "label_channels": " · {n} 个通道",
    # sidebar: model
    "model": "模型",
    "model_help": (
        "torchvision 的全部图像分类模型（按系列分组），以及本服务器自带的模型。"
        "模型越大，加载和运行越慢；ViT、Swin 和 MaxViT 需要固定的输入尺寸。"
    ),
    "model_option": "{name} · {family} · 参数量 {params}{size}",
    "family_operator": "本服务器的模型",
    "model_fixed_size": " · 输入 {side}×{side}",
    "model_params_m": "{m:.1f} M",
    "operator_warning": "{warning}",
    "model_description": "{description}",
    "device": "运行设备：**{device}**。",
    "loading_model": "正在加载 {name}…",
    "weights_random": (
        "**随机权重**：无法加载预训练权重，因此预测结果没有意义，特征图显示的是未经训练的网络。"
        "解决方法：在这台服务器联网时运行一次 `{command}`，然后重启服务器。"
    ),
    "weights_details": "原因，以及权重文件应放在哪里",
    # sidebar: image
    "image_source": "图像",
    "source_sample": "示例",
    "source_upload": "上传",
    "source_camera": "摄像头",
    "sample": "示例照片",
    "upload": "你的照片",
    "upload_help": "支持 PNG、JPEG、WebP、BMP、GIF 或 TIFF，最大 20 MB、4000 万像素。",
    "camera": "拍照",
    "size": "输入尺寸（短边像素数）",
    "size_help": "照片会等比缩放，使短边为这个像素数；不做任何裁剪。",
    # sidebar: layers
    "layers_header": "层",
    "quick_pick": "快速选择",
    "quick_pick_placeholder": "选择一组层…",
    "pick_tour": "导览：第一层，以及每个新分辨率下的第一层",
    "pick_res_convs": "{hw} 分辨率下的所有卷积层",
    "pick_res_blocks": "{hw} 分辨率下的所有块",
    "pick_downsampling": "下采样卷积层（步幅 > 1）",
    "pick_convs": "所有 Conv2d 层",
    "pick_blocks": "所有块",
    "layers": "层（卷积层和块）",
    "layers_help": (
        "名称 · 第 i/n 个卷积层（或块），即共 n 个中的第 i 个 · "
        "输入为 {side}×{side} 时的输出分辨率 · 输入→输出通道数、卷积核大小、步幅"
    ),
    "what": "捕获",
    "what_output": "输出（前向钩子）",
    "what_input": "输入（前向预钩子）",
    # sidebar: display
    "display_header": "显示",
    "channels": "每层显示的通道数",
    "order": "通道顺序",
    "order_index": "按编号",
    "order_mean": "按平均激活从高到低",
    "order_max": "峰值最强的在前（最大值）",
    "cmap": "颜色映射",
    "norm": "亮度范围",
    "norm_channel": "按通道",
    "norm_layer": "按层（带颜色条）",
    "columns": "网格列数（0 = 自动）",
    "share_hint": "地址栏保存了这些设置：复制地址即可分享当前这个视图。",
    # main
    "url_notice": "链接中的以下内容已被忽略：{items}。",
    "no_upload": "请在侧边栏上传一张照片开始（或选择一张示例照片）。",
    "no_camera": "请用侧边栏的摄像头拍一张照片开始（或选择一张示例照片）。",
    "no_layers": "请在侧边栏至少选择一个层。",
    "bad_image": "无法使用此文件：{reason} 页面的其余部分仍可正常使用；请换一个文件试试。",
    "bad_input": "无法完成此操作：{reason}",
    "bad_model": "无法加载此模型：{reason} 请在侧边栏选择其他模型。",
    "failed": "运行模型时出错。请重试，或换用其他设置。",
    "out_of_memory": "服务器处理此请求时内存不足。请减少层数或通道数，或调小输入尺寸，然后重试。",
    "too_large": "{reason}",
    "still_computing": "另一位访问者的同一个请求仍在计算中。请稍等片刻，然后重试。",
    "running": "正在运行 {model}，已在 {n} 个层上挂钩子…",
    "rendering": "正在绘制第 {i} 层（共 {n} 层）：{name}",
    "model_saw": "模型看到的图像：{width} × {height} 像素",
    "input_fixed": (
        "{name} 需要 {side} × {side} 像素的输入：照片已缩放，并从中心裁剪为正方形；输入尺寸设置对它不起作用。"
    ),
    "input_min": "{name} 需要至少 {side} 像素，因此短边已设为该值。",
    "top5": "Top-5 类别",
    "tab_maps": "特征图",
    "tab_inspector": "通道查看器",
    "layer_caption": "{where} · {what} {shape} · 最小 {min:.3g} · 平均 {mean:.3g} · 最大 {max:.3g} · {shown}",
    "shown_some": "显示 {shown} / {total} 个通道",
    "shown_all": "全部 {total} 个通道",
    "download_png": "PNG",
    "download_npz": "下载全部激活值（.npz）",
    "download_npz_help": "每层一个 float32 数组 (C, H, W)，另加 `__input__`，格式与命令行工具的 `--npz` 选项相同。",
    # views
    "view": "视图",
    "view_group": "想对这张图做什么",
    "group_look": "观察",
    "group_explain": "解释",
    "group_change": "改动",
    "group_learn": "学习",
    "group_hood": "幕后",
    "view_maps": "特征图",
    "view_inspector": "通道查看器",
    "view_gradients": "梯度",
    "view_gradcam": "Grad-CAM",
    "view_backward": "反向钩子",
    "view_table": "层信息表",
    "view_code": "实现代码",
    # class for gradients
    "target": "要解释的类别",
    "target_out_of_range": (
        "这个模型只有 {n} 个类别（编号 0 到 {last}），没有类别 {target}，所以页面显示排名第一的类别。"
    ),
    "target_help": "梯度和 Grad-CAM 都针对这个类别的得分计算。输入文字可在全部 1000 个类别中搜索。",
    "target_top1": "Top-1 类别：{label} ({index})",
    "running_backward": "正在为“{label}”做前向和反向传播…",
    "gradients_intro": (
        "这里显示的是梯度：特征图上某个值稍微变大一点，**{label}**（{index}）的得分会变化多少。"
        "红色表示得分会升高，蓝色表示会降低，白色表示没有影响。"
        "梯度由张量钩子（`output.register_hook`）取得，这个张量钩子是在前向钩子里注册的。"
    ),
    "grad_caption": "梯度 {shape} · 最小 {min:.3g} · 最大 {max:.3g} · 每层一个以 0 为中心的颜色标尺",
    "gradcam_intro": (
        "**{label}**（{index}）的 Grad-CAM：用每个通道梯度的平均值作为这个通道的权重，把各通道加权相加，去掉负值，"
        "再把得到的图拉伸到照片大小、叠在照片上。红色的地方，就是这一层为这个类别找到证据的位置。"
        "深层给出的图粗糙，但有意义；浅层给出的图精细，但噪声多。"
    ),
    "cam_alpha": "热力图不透明度",
    "backward_intro": (
        "在模型的每个顶层子模块上调用 `register_full_backward_hook`，然后从 **{label}** 的得分出发"
        "做一次反向传播。表中各行按反向传播到达它们的先后顺序排列。"
    ),
    "backward_reading": (
        "**如何阅读这张表。** 反向传播沿相反方向遍历网络：从最后一层开始，一路回到第一层。"
        "每个模块先得到 `grad_output`，即得分对该模块输出的梯度；再算出 `grad_input`，即得分对该模块"
        "输入的梯度：某一行的 `grad_input` 就是它下一行的 `grad_output`。带备注的行没有挂完整反向钩子："
        "它的输出随后被原地覆盖（ResNet 的 `bn1`，后面紧跟 `relu(inplace=True)`），或者它本身就是原地运算，"
        "而完整反向钩子不允许这种情况。“梯度”视图用张量钩子绕开了这个问题。"
    ),
    "running_table": "正在为每个模块计时…",
    "total_outputs": "输出值数量（所有叶子模块）",
    "total_time": "前向耗时",
    "table_intro": (
        "这张表只需一次前向传播：前向预钩子记下每个模块的输入和开始时间，前向钩子记下它的输出和结束时间。"
        "容器模块（Sequential 阶段、块）的数值包含其中的子模块。点击列标题即可排序。"
    ),
    "code_view": "代码对应的视图",
    "code_intro": (
        "纯 PyTorch 代码，不依赖 vizhooks：把它粘贴到与照片放在同一目录的 Jupyter 笔记本中，"
        "就能得到相同的数值（使用相同权重时）。"
    ),
    "hooks_explained": (
        "#### 四种钩子\n\n"
        "- **`tensor.register_hook(fn)`**，`fn(grad)`，返回新的梯度或 `None`。"
        "在反向传播中、这个张量的梯度算出之后运行。"
        "可以读取梯度，也可以返回修改后的梯度（例如梯度裁剪）。有了它，就不必为每个中间张量调用 `retain_grad()`："
        "中间张量不是叶子张量（叶子节点），PyTorch 默认不保留它们的 `.grad`。\n"
        "- **`module.register_forward_pre_hook(fn)`**，`fn(module, inputs)`，返回新的输入或 `None`。"
        "在 `forward()` 之前运行；`inputs` 是一个元组。本工具用它捕获“输入”，并在层信息表中记录开始时间。\n"
        "- **`module.register_forward_hook(fn)`**，`fn(module, inputs, output)`，返回新的输出或 `None`。"
        "在 `forward()` 之后运行。特征图就是这样捕获的。要保存的张量请先克隆一份："
        "网络后面的原地（in-place）操作可能会覆盖它。\n"
        "- **`module.register_full_backward_hook(fn)`**，`fn(module, grad_input, grad_output)`。"
        "在反向传播中运行，参数是模块输入和输出的梯度（都是元组；没有梯度的位置为 `None`）。"
        "它取代了 `register_backward_hook`，后者对由多个运算组成的模块会给出错误的 `grad_input`。"
        "它不能用于输出被原地修改的模块。\n\n"
        "每次注册都会返回一个句柄；用完后调用 `handle.remove()`（放在 `finally:` 中），"
        "否则这个钩子在之后每一次前向传播或反向传播中都会继续运行。"
    ),
    # view: intervene
    "view_intervene": "干预",
    "intervene_intro": (
        "前向钩子可以**返回新的输出**，网络的其余部分随后就用这个新输出继续计算。"
        "关闭某一层的部分通道，或对它们进行缩放，看看下游会发生什么变化。"
        "这个钩子只在一次前向传播中存在，之后即被移除：模型本身始终不会被改变。"
    ),
    "iv_layer": "要修改的层",
    "iv_mode": "修改方式",
    "iv_mode_zero": "关闭通道（× 0）",
    "iv_mode_half": "通道减半（× 0.5）",
    "iv_mode_double": "通道加倍（× 2）",
    "iv_mode_top": "只保留最活跃的 k 个通道",
    "iv_channels": "通道",
    "iv_k": "k",
    "iv_no_channels": "请至少选择一个要修改的通道。",
    "iv_running": "做两次前向传播：一次保持原样，一次应用修改…",
    "iv_before": "修改前的 Top-5",
    "iv_after": "修改后的 Top-5",
    "iv_logit": "修改后“{label}”的 logit（得分）",
    "iv_later": "后面的层（已在上游应用修改）：",
    "iv_change": "与未修改的前向传播相比，平均变化 {change:.1%}",
    "iv_no_later": "所选的层中没有位于这一层之后的：在侧边栏添加一个更靠后的层，就能看到变化如何向后传递。",
    "clamp_header": "修改梯度的张量钩子",
    "clamp_at": "在此层裁剪梯度",
    "clamp_limit": "阈值：该层非零 |梯度| 值的百分位数（基于这张照片）",
    "clamp_percentile": "第 {p} 百分位数",
    # view: compare
    "view_compare": "对比",
    "compare_intro": (
        "两张照片在相同层上的特征图：每一对图在每层都用**同一个共享标尺**绘制，"
        "使两边的亮度含义相同；另外给出两者的差值（B − A：红色表示 B 更强的位置），"
        "以及整层特征图的余弦相似度。"
    ),
    "compare_source": "第二张照片",
    "compare_sample": "示例照片 B",
    "compare_none": "请选择、上传或拍摄第二张照片来进行对比。",
    "compare_first": "A：侧边栏中的照片",
    "compare_second": "B：第二张照片",
    "compare_difference": "B − A",
    "compare_caption": "余弦相似度 {similarity:.3f}（1 = 模式完全相同）",
    "compare_resized": "B 的形状不同，因此它的特征图已重采样到 A 的网格上。",
    # view: lesson
    "view_lesson": "课程",
    "insp_layer": "层",
    "insp_channel": "通道",
    "insp_alpha": "叠加不透明度",
    "insp_large": "{layer}，通道 {channel}，由 {h} × {w} 上采样而来",
    "insp_overlay": "以 {alpha:.0%} 的不透明度叠加在照片上",
    "insp_range": "该通道的取值：最小 {min:.4g}，平均 {mean:.4g}，最大 {max:.4g}。",
    "view_atlas": "通道图谱",
    "atlas_intro": (
        "一个通道到底对什么有反应？这里并排给出三个答案：它在这张照片上的特征图；"
        "一张经过优化、让它尽可能强烈激活的图像（特征可视化）；"
        "以及照片集中让它反应最强的位置，按这些位置的感受野裁下的图块（数据集样例）。"
    ),
    "atlas_none": (
        "{folder} 中还没有 {model} 的图谱。可以用一个照片文件夹生成："
        "`python -m vizhooks exemplars PHOTOS --model {model} --layers LAYER --out {folder}/{model}`。"
    ),
    "atlas_photo": "{layer} 的第 {channel} 个通道，叠加在这张照片上",
    "atlas_top": "反应最强的位置（按感受野裁剪）：照片集中的前 {n} 个",
    "atlas_source": "来自 {folder} 中的 {images} 张照片（{weights}）。",
    "atlas_exemplar": "{score:.3g} · {name}",
    "atlas_random": "随机权重：这些感受野图块只反映网络结构，不代表训练好的网络学到了什么",
    "fv_button": "这个通道对什么最敏感？",
    "fv_running": "正在为 {layer} 优化图像：第 {step}/{steps} 步",
    "fv_caption": "为激活 {layer} 的第 {channel} 个通道而优化的图像（{size} 像素，{steps} 步）",
    "fv_grid_button": "一次批量画出这一层的 {n} 个通道",
}
