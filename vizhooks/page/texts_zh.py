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
    "weights_from_env": "权重来自 VIZHOOKS_WEIGHTS 指定的文件。",
    "weights_from_cache": "预训练权重，来自本机的缓存。",
    "weights_from_download": "预训练权重，已下载一次并缓存。",
    "weights_from_file": "权重来自本服务器自己的检查点文件。",
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
    "order_mean": "最活跃的在前（均值）",
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
    "top5_random": "权重是随机的，所以这些猜测没有意义。",
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
    "cam_caption": "{layer} → {label}",
    "backward_intro": (
        "在模型的每个顶层子模块上调用 `register_full_backward_hook`，然后从 **{label}** 的得分出发"
        "做一次反向传播。表中各行按反向传播到达它们的先后顺序排列。"
    ),
    "col_step": "步骤",
    "col_module": "模块",
    "col_type": "类型",
    "col_grad_output": "grad_output（传入）",
    "col_grad_input": "grad_input（传出）",
    "col_note": "备注",
    "backward_reading": (
        "**如何阅读这张表。** 反向传播沿相反方向遍历网络：从最后一层开始，一路回到第一层。"
        "每个模块接收 `grad_output`，即得分对该模块输出的梯度；并传出 `grad_input`，即得分对该模块"
        "输入的梯度：某一行的 `grad_input` 就是它下一行的 `grad_output`。带备注的行没有挂完整反向钩子："
        "它的输出随后被原地覆盖（ResNet 的 `bn1`，后面紧跟 `relu(inplace=True)`），或者它本身就是原地运算，"
        "而完整反向钩子不允许这种情况。“梯度”视图用张量钩子绕开了这个问题。"
    ),
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
    "running_table": "正在为每个模块计时…",
    "total_params": "参数量",
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
        "- **`tensor.register_hook(fn)`**，`fn(grad) -> grad or None`。在反向传播中、这个张量的梯度算出之后运行。"
        "可以读取梯度，也可以返回修改后的梯度（例如梯度裁剪）。有了它，就不必为每个中间张量调用 `retain_grad()`："
        "中间张量不是叶子张量（叶子节点），PyTorch 默认不保留它们的 `.grad`。\n"
        "- **`module.register_forward_pre_hook(fn)`**，`fn(module, inputs) -> new inputs or None`。"
        "在 `forward()` 之前运行；`inputs` 是一个元组。本工具用它捕获“输入”，并在层信息表中记录开始时间。\n"
        "- **`module.register_forward_hook(fn)`**，`fn(module, inputs, output) -> new output or None`。"
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
    "clamp_intro": (
        "在某一层上使用 `output.register_hook(lambda grad: grad.clamp(-limit, limit))`，"
        "会裁剪反向流经这一层的梯度。反向传播从得分出发朝输入进行，所以改变的是它**之前**的每一层"
        "（上游，即前向传播中更早的层）：它们收到裁剪后的梯度，Grad-CAM 图也随之改变。它之后的层不变。"
    ),
    "clamp_at": "在此层裁剪梯度",
    "clamp_limit": "阈值：该层非零 |梯度| 值的百分位数（基于这张照片）",
    "clamp_percentile": "第 {p} 百分位数",
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
    "lesson_step": "第 {n}/{total} 步：{title}",
    "lesson_back": "← 上一步",
    "lesson_next": "下一步 →",
    "lesson_link": "本步骤的链接",
    "lesson_question": "课堂提问：",
    "lesson_answer": "答案",
    "lesson_code": (
        "这一步的钩子，用纯 PyTorch 写成。它们在下方的准备代码之后运行；"
        "完整文件与照片放在同一目录即可直接运行："
    ),
    "lesson_code_setup": "准备：模型、照片、预处理（每一步都相同；先运行）",
    "lesson_code_download": "下载完整文件",
    "lesson_hello_caption": "一次前向传播中钩子打印的内容：",
    "lesson_col_layer": "层",
    "lesson_col_module": "模块",
    "lesson_col_shape": "输出形状",
    "lesson_prepost_input": "{layer} 的输入（前向预钩子）",
    "lesson_prepost_output": "{layer} 的输出（前向钩子）",
    "lesson_remove_forgot": "从不移除句柄时，每次前向传播的钩子调用次数：{calls}",
    "lesson_remove_removed": "每次前向传播后都移除句柄时，每次前向传播的钩子调用次数：{calls}",
    "lesson_what_title": "钩子是什么，为什么要用它",
    "lesson_what_text": (
        "**钩子（hook）函数**是你交给 PyTorch、由它在固定时刻调用的函数："
        "模块运行之前、运行之后，或者某个梯度算出之后。"
        "这样你**无需改动网络的任何一行代码**，就能查看训练好的网络内部：注册钩子，照常运行模型，再移除钩子。"
        "这里在每个所选的层上挂了一个前向钩子，它只打印自己看到的内容。"
    ),
    "lesson_what_q": "为什么不直接在模型的 forward() 里加一个 print()？",
    "lesson_what_a": (
        "模型的代码属于 torchvision，而不是你自己的：修改它会影响所有人，也会影响之后的每一次运行。"
        "钩子是从外部挂到某一个对象上的，只在你需要的时候存在，用完再移除；而且同一个钩子适用于任何模型。"
    ),
    "lesson_forward_title": "前向钩子与特征图网格",
    "lesson_forward_text": (
        "`register_forward_hook(fn)` 会在模块的 `forward()` 执行完后立即调用 `fn(module, inputs, output)`。"
        "保存一份 `output` 的副本，就得到这一层的**特征图**：每个通道一张二维图，这里把它们排成网格。"
        "越亮表示该通道在该位置的响应越强。"
    ),
    "lesson_forward_q": "为什么钩子保存的是 output.clone()，而不是 output 本身？",
    "lesson_forward_a": (
        "后面的原地（in-place）操作（例如 ResNet 的 `ReLU(inplace=True)`、`out += identity`）"
        "可能会在钩子看过之后覆盖同一个张量。保存副本，才能留下这一层真正的输出。"
    ),
    "lesson_prehook_title": "前向预钩子：一层的输入和输出",
    "lesson_prehook_text": (
        "`register_forward_pre_hook(fn)` 会在 `forward()` **之前**调用 `fn(module, inputs)`；"
        "`inputs` 是一个元组。在同一层上同时挂前向预钩子和前向钩子，就能看到进去的是什么、出来的是什么："
        "卷积层的输入就是前一层的输出。"
    ),
    "lesson_prehook_q": "前向预钩子可以返回一个值。这时会发生什么？",
    "lesson_prehook_a": "返回值会替换模块的输入：模块随后就用你给的值来运行。返回 None 则保持输入不变。",
    "lesson_shapes_title": "形状在网络中的变化",
    "lesson_shapes_text": (
        "在**每个**模块上都挂一个前向预钩子和一个前向钩子，只需一次前向传播，就能记录每个模块的输入形状、"
        "输出形状和耗时。各种模型摘要工具就是这样生成层信息表的。注意观察：通道数在增加，而高度和宽度在缩小。"
    ),
    "lesson_shapes_q": "为什么表中除了单个的层，还会出现容器模块（阶段、块）？",
    "lesson_shapes_a": (
        "容器本身也是模块，也会运行自己的 forward()，所以它们的钩子也会触发："
        "它们的耗时包含其子模块的耗时，它们的输出就是最后一个子模块的输出。"
    ),
    "lesson_conv_title": "一次卷积算了什么",
    "lesson_conv_text": (
        "卷积层特征图中的每个值都只是一个小小的加权和。卷积核覆盖输入上的一个窗口（在它看到的每个输入通道上位置都相同），"
        "窗口中的每个输入值乘以对应位置的权重，乘积相加，再加上偏置。**前向预钩子**交给你窗口里的数，"
        "**前向钩子**交给你结果：下面就用这张照片把两者逐项拆开。改变位置（行、列），窗口就按步幅移动；"
        "之后 BatchNorm 和 ReLU 还会对这个值做缩放、平移和截断，下一层看到的是处理后的值。"
    ),
    "lesson_conv_q": (
        "一个 Conv2d 的卷积核为 3×3，有 64 个输入通道，带偏置。算出一个输出值要做多少次乘法？这个值取决于多少个输入数？"
        "换成 3×3 的逐通道卷积（depthwise，groups = 64）呢？"
    ),
    "lesson_conv_a": (
        "3 × 3 × 64 = 576 次乘法，再把这 576 个乘积相加、加上偏置；这个值取决于这 576 个输入数，"
        "即 64 个通道中各自的一个 3×3 窗口。在逐通道卷积中，每个输出通道只看与它对应的那一个输入通道："
        "9 次乘法，9 个输入数。"
    ),
    "lesson_tensor_title": "张量钩子：一层输出的梯度",
    "lesson_tensor_text": (
        "调用 `backward()` 之后，PyTorch 只为**叶子张量（叶子节点）**，即输入和参数，保留 `.grad`。"
        "一层的输出不是叶子张量，所以它的 `.grad` 是 `None`。`output.register_hook(fn)` "
        "会在反向传播中以这个梯度为参数调用 `fn(grad)`：它表示如果特征图中的某个值增大，"
        "类别得分会改变多少（红色表示升高，蓝色表示降低）。"
    ),
    "lesson_tensor_q": "除了张量钩子，还能用什么办法？代价是什么？",
    "lesson_tensor_a": (
        "在反向传播之前调用 `output.retain_grad()` 也能保留梯度，但每个调用过它的张量都会保留梯度，"
        "而且只要张量还在就一直保留；钩子则只把梯度交给你一次，由你决定保留什么。"
    ),
    "lesson_clamp_title": "在钩子中修改梯度",
    "lesson_clamp_text": (
        "**返回**一个张量的张量钩子会替换梯度。把梯度截断到一个范围内（`grad.clamp(-limit, limit)`），"
        "正是梯度裁剪的思路。这里的阈值取自被裁剪层自身梯度大小的百分位数，所以总会裁剪掉一部分，"
        "比例就写在下方。反向传播随后把裁剪后的梯度继续传给被裁剪层**之前**的各层（前向顺序中的上游）："
        "对比它们的梯度和 Grad-CAM 图。"
    ),
    "lesson_clamp_q": "为什么被裁剪的层之后的那些层不受影响？",
    "lesson_clamp_a": (
        "反向传播从得分出发，朝输入的方向进行：梯度先到达靠后的层，那时还没有发生裁剪。"
        "只有继续穿过被裁剪层、传到它之前各层的梯度才会改变。"
    ),
    "lesson_backward_title": "完整反向钩子：grad_input 与 grad_output",
    "lesson_backward_text": (
        "`register_full_backward_hook(fn)` 会在反向传播中调用 `fn(module, grad_input, grad_output)`："
        "参数是到达模块输出的梯度，以及模块传回给输入的梯度。两者都是元组；只有没有梯度流过的位置才是 `None`。"
        "当输入不需要梯度时，第一个卷积层的 `grad_input` 是 `None`；这里页面（以及下面的代码）调用了 "
        "`x.requires_grad_(True)`，所以它是对照片的梯度，如表格最后一行所示。被原地修改的模块不能挂这种钩子。"
    ),
    "lesson_backward_q": "为什么反向传播列出模块的顺序与前向传播相反？",
    "lesson_backward_a": "链式法则从得分出发，一步步往回推：每个模块必须先得到其输出的梯度，才能算出其输入的梯度。",
    "lesson_gradcam_title": "Grad-CAM：证据在哪里",
    "lesson_gradcam_text": (
        "把两者结合起来：前向钩子保存一层的特征图，张量钩子保存它的梯度。每个通道按其平均梯度加权，"
        "再把加权后的通道相加，只保留正的部分，然后拉伸并叠加到照片上：这就是 **Grad-CAM**，"
        "一张热力图，标出这一层在哪里找到了该类别的证据。"
    ),
    "lesson_gradcam_q": "为什么深层的图粗糙，而浅层的图噪声多？",
    "lesson_gradcam_a": (
        "深层的特征图只有少量较大的单元格（输入为 224 像素时是 7 × 7），每个单元格的感受野大到能覆盖整个物体；"
        "浅层有许多小单元格，感受野小，只能响应边缘和纹理，还分辨不出类别。"
    ),
    "lesson_sanity_title": "解释取决于模型吗？",
    "lesson_sanity_text": (
        "真正解释**模型**的热力图，在模型改变时必然随之改变。Adebayo 等人（2018）提出的合理性检验检查的正是这一点："
        "把网络复制一份，从输出端往下逐段重新初始化它的权重，每一步之后对同一张照片、同一个类别重新画 Grad-CAM。"
        "每张图旁边的数字是它与原始热力图的 Spearman 秩相关系数：1 表示各像素的排序完全相同，0 表示两者毫无关联。"
        "用到的钩子就是上一步 Grad-CAM 的那些钩子，只是挂在副本上。"
    ),
    "lesson_sanity_q": (
        "所有层都随机化之后，一种方法的热力图与原始热力图的相关系数仍有 0.9，另一种只有 0.1。"
        "哪一种能告诉你训练好的模型在看哪里？为什么？"
    ),
    "lesson_sanity_a": (
        "相关系数为 0.1 的那种：模型被破坏后，它的图随之改变，说明它依赖于权重。在随机网络上也保持不变的图，"
        "是由图片本身（边缘和颜色）决定的，而不是由模型学到的东西决定的；引导反向传播（Guided Backprop）"
        "常在这项检验中失败，Grad-CAM 则能通过。"
    ),
    "lesson_sanity_caption": "{layer} 对“{label}”的 Grad-CAM：先是原始模型的图，然后依次是每一段重新初始化之后的图",
    "lesson_sanity_after": "{stage} 已随机化 · ρ = {rho:.2f}",
    "lesson_sanity_original": "原始模型",
    "lesson_sanity_none": "这个模型的 {layer} 层没有 Grad-CAM 所需的空间特征图；请选择一个卷积层。",
    "lesson_remove_title": "移除钩子，以及忘记移除的后果",
    "lesson_remove_text": (
        "每次调用 `register_*` 都会返回一个**句柄**；`handle.remove()` 会把钩子重新取下。"
        "如果忘了这一步，钩子就会一直留在模型上："
        "在循环中注册钩子，每做一次前向传播就多一个钩子，调用次数越积越多（它们占用的内存也一样）。"
        "把 `remove()` 放在 `finally:` 中，这样即使出错也会执行。"
    ),
    "lesson_remove_q": "页面上的模型由全班共用。一个忘记移除的钩子会造成什么后果？",
    "lesson_remove_a": (
        "它会在每个人的前向传播里都运行一遍，拖慢所有人的速度，还可能把一个学生保存的副本混进另一个学生的结果里。"
        "所以 vizhooks 每次返回之前都会移除全部钩子，出错时也不例外。"
    ),
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
