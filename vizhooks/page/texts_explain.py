"""The Explain view's sentences (methods side by side, their faithfulness scores, the sanity check),
English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "view_explain": "Which map to trust",
    "ex_intro": (
        "**One class, many explanations.** Each method below says which pixels the prediction rests on, "
        "each by its own definition. They rarely agree. Two tests tell them apart: the **scores** change "
        "the photo in the order a map ranks its pixels and watch the class probability; the **sanity "
        "check** scrambles the network's weights and watches whether the map changes with it."
    ),
    "ex_methods": "Methods",
    "ex_methods_help": (
        "CAM methods weigh a layer's feature maps; input methods (Saliency to Guided Grad-CAM) give every "
        "pixel of the photo its own value. Score-CAM and Occlusion run hundreds of forward passes."
    ),
    "ex_method_gradcam": "Grad-CAM",
    "ex_method_gradcampp": "Grad-CAM++",
    "ex_method_xgradcam": "XGrad-CAM",
    "ex_method_layercam": "LayerCAM",
    "ex_method_scorecam": "Score-CAM",
    "ex_method_eigencam": "Eigen-CAM",
    "ex_method_saliency": "Saliency",
    "ex_method_smoothgrad": "SmoothGrad",
    "ex_method_ig": "Integrated Gradients",
    "ex_method_occlusion": "Occlusion",
    "ex_method_guidedbackprop": "Guided Backprop",
    "ex_method_guidedgradcam": "Guided Grad-CAM",
    "ex_ref_random": "random map (reference)",
    "ex_ref_gaussian": "centred Gaussian (reference)",
    "ex_layers": "CAM layer(s)",
    "ex_layers_help": (
        "The layer whose feature maps a CAM weighs; several give the mean of their maps. Empty: the "
        "network's last block ({default})."
    ),
    "ex_settings": "Settings",
    "ex_batch": "Pictures per forward pass",
    "ex_batch_help": "Score-CAM's masked photos, Integrated Gradients' steps, Occlusion's windows per batch.",
    "ex_ig_steps": "Integrated Gradients: steps",
    "ex_ig_baseline": "Integrated Gradients: baseline",
    "ex_ig_baseline_black": "black picture",
    "ex_ig_baseline_blur": "blurred photo",
    "ex_alpha": "Overlay opacity",
    "ex_compute": "Compute maps",
    "ex_compute_hint": "Press the button: some methods take seconds, Score-CAM and Occlusion much longer.",
    "ex_no_methods": "Choose at least one method.",
    "ex_class": "Every map explains **{label}** (class {index}), the class chosen above.",
    "ex_running_method": "{method} ({i} of {n})…",
    "ex_running": "{method} ({i} of {n}): batch {done} of {total}",
    "ex_caption": "{method} · {label}",
    "ex_signed": "Signed, scaled from its lowest value (blue: against the class) to its highest (red: for it).",
    "ex_download": "Download PNG",
    "ex_scores_header": "How faithful is each map?",
    "ex_scores_intro": (
        "**Deletion**: the pixels the map ranks highest are replaced by the baseline first, in {steps} "
        "steps; a faithful map makes the probability fall fast (a low area under the curve). **Insertion**: "
        "from the baseline, the photo's pixels come back in the same order; the probability should rise fast "
        "(a high area). A random map and a centred Gaussian are scored beside them: a method should beat both."
    ),
    "ex_steps": "Steps",
    "ex_baseline": "Removed pixels become",
    "ex_baseline_blur": "the blurred photo",
    "ex_baseline_zeros": "the mean colour",
    "ex_score": "Score faithfulness",
    "ex_scoring": "Scoring {method} ({i} of {n}): {done} of {total} pictures",
    "ex_curve_deletion": "Deletion (lower area is better)",
    "ex_curve_insertion": "Insertion (higher area is better)",
    "ex_curve_x_deletion": "fraction of pixels removed",
    "ex_curve_x_insertion": "fraction of pixels added",
    "ex_curve_y": "probability of {label}",
    "ex_curves_caption": "Solid: the methods; dashed: the random and the centred Gaussian maps.",
    "ex_col_method": "Map",
    "ex_col_deletion": "Deletion AUC ↓",
    "ex_col_insertion": "Insertion AUC ↑",
    "ex_col_drop": "Average Drop % ↓",
    "ex_col_increase": "Increase in Confidence % ↑",
    "ex_col_infidelity": "Infidelity ↓",
    "ex_table_caption": (
        "↓ lower is better, ↑ higher is better. Average Drop: how much of the probability is lost when the photo "
        "is multiplied by the map; Increase in Confidence: 100 when that masked photo is more confident, else 0."
    ),
    "ex_infidelity": "Infidelity (Captum)",
    "ex_infidelity_running": "Infidelity of {method} ({i} of {n})…",
    "ex_infidelity_caption": (
        "Infidelity: how badly the map predicts the change of the class score when the photo is shaken by "
        "small noise ({n} draws, seed 0), each pixel's value counted for its three colours; lower is better."
    ),
    "ex_col_verdict": "Beats both references?",
    "ex_verdict_yes": "yes, on both curves",
    "ex_verdict_no": "no: {where}",
    "ex_verdict_deletion": "{ref} does as well on deletion",
    "ex_verdict_insertion": "{ref} does as well on insertion",
    "ex_verdict_reference": "(a reference)",
    "ex_verdict_caption": (
        "A map earns its place only by beating both references: a lower deletion area and a higher insertion "
        "area than the random map and the centred Gaussian. One that does not explains this photo no better "
        "than chance, or than \"the middle of the picture\"."
    ),
    "ex_sanity_undefined": (
        "An empty cell: the map is constant (one value everywhere, e.g. a CAM that ReLU made all zero), so it "
        "has no order to compare and its rank correlation is undefined. The flag counts it as 0."
    ),
    "ex_sanity_header": "Does the explanation depend on the model?",
    "ex_sanity_intro": (
        "The sanity check of Adebayo et al. (2018): on a copy of the network, the layers are re-initialised "
        "from the top (the head) down, one stage at a time, until every weight is random. A map that "
        "explains the model must change; a map that stays alike describes the photo (its edges), not the model."
    ),
    "ex_sanity_methods": "Methods to check",
    "ex_sanity_run": "Run the sanity check",
    "ex_sanity_running": "Step {done} of {total}: {stage} re-initialised",
    "ex_sanity_starting": "The original maps…",
    "ex_sanity_original": "original",
    "ex_sanity_caption": (
        "Each row: one method's map before and after each step (left to right, more of the network random "
        "at each step); each map scaled to its own range."
    ),
    "ex_sanity_flag": (
        "**{method}**: its maps stay alike while the model is destroyed (Spearman {r:.2f} with the original "
        "after the last step): it describes the picture, not the model."
    ),
    "ex_sanity_passed": "**{method}** passes: its map changes as the model is destroyed (Spearman {r:.2f} at the end).",
    "ex_col_step": "Step",
    "ex_col_stage": "Re-initialised",
    "ex_col_spearman": "Spearman · {method}",
    "ex_col_ssim": "SSIM · {method}",
    "ex_sanity_table_caption": (
        "Likeness of each step's map to the original: Spearman rank correlation of the pixels and SSIM "
        "(structure); 1 is the same map. A method is flagged when its Spearman is still {flag} or more at the end."
    ),
}

ZH: dict[str, str] = {
    "view_explain": "该相信哪张图",
    "ex_intro": (
        "**同一个类别，多种解释。** 下面每种方法都按各自的定义，指出预测依据的是照片中的哪些像素；它们很少一致。"
        "有两种检验可以把它们区分开：**评分**按解释图给像素的排序依次修改照片，观察类别概率的变化；"
        "**合理性检验**打乱网络的权重，观察解释图是否随之改变。"
    ),
    "ex_methods": "方法",
    "ex_methods_help": (
        "CAM 类方法给某一层的特征图加权；输入类方法（从显著图到引导 Grad-CAM）为照片的每个像素各给出一个值。"
        "Score-CAM 和遮挡法要做几百次前向传播。"
    ),
    "ex_method_gradcam": "Grad-CAM",
    "ex_method_gradcampp": "Grad-CAM++",
    "ex_method_xgradcam": "XGrad-CAM",
    "ex_method_layercam": "LayerCAM",
    "ex_method_scorecam": "Score-CAM",
    "ex_method_eigencam": "Eigen-CAM",
    "ex_method_saliency": "显著图",
    "ex_method_smoothgrad": "SmoothGrad",
    "ex_method_ig": "积分梯度",
    "ex_method_occlusion": "遮挡法",
    "ex_method_guidedbackprop": "引导反向传播",
    "ex_method_guidedgradcam": "引导 Grad-CAM",
    "ex_ref_random": "随机图（对照）",
    "ex_ref_gaussian": "中心高斯图（对照）",
    "ex_layers": "CAM 所用的层",
    "ex_layers_help": "CAM 给这一层的特征图加权；选多层时取各层结果的平均。留空则用网络的最后一个块（{default}）。",
    "ex_settings": "设置",
    "ex_batch": "每次前向传播的图片数",
    "ex_batch_help": "每批处理的 Score-CAM 遮罩照片数、积分梯度步数或遮挡法窗口数。",
    "ex_ig_steps": "积分梯度：步数",
    "ex_ig_baseline": "积分梯度：基线",
    "ex_ig_baseline_black": "全黑图片",
    "ex_ig_baseline_blur": "模糊后的照片",
    "ex_alpha": "叠加不透明度",
    "ex_compute": "计算解释图",
    "ex_compute_hint": "按下按钮开始计算：有些方法需要几秒钟，Score-CAM 和遮挡法要久得多。",
    "ex_no_methods": "请至少选择一种方法。",
    "ex_class": "每张图解释的都是 **{label}**（类别 {index}），即上面选中的类别。",
    "ex_running_method": "{method}（第 {i}/{n} 种）…",
    "ex_running": "{method}（第 {i}/{n} 种）：第 {done}/{total} 批",
    "ex_caption": "{method} · {label}",
    "ex_signed": "有正有负：从最小值（蓝色，不利于该类别）到最大值（红色，支持该类别）缩放。",
    "ex_download": "下载 PNG",
    "ex_scores_header": "每张解释图有多可信？",
    "ex_scores_intro": (
        "**删除**：按解释图给出的排序，分 {steps} 步把像素换成基线，排名最高的先换；可信的解释图会让概率迅速下降"
        "（曲线下面积小）。**插入**：从基线出发，按同样的顺序把照片的像素放回去；概率应当迅速上升（面积大）。"
        "随机图和中心高斯图也在旁边一起评分：好的方法应当胜过这两者。"
    ),
    "ex_steps": "步数",
    "ex_baseline": "被删除的像素换成",
    "ex_baseline_blur": "模糊后的照片",
    "ex_baseline_zeros": "平均颜色",
    "ex_score": "评估可信度",
    "ex_scoring": "正在为 {method} 评分（第 {i}/{n} 张解释图）：已处理 {done}/{total} 张图片",
    "ex_curve_deletion": "删除（面积越小越好）",
    "ex_curve_insertion": "插入（面积越大越好）",
    "ex_curve_x_deletion": "已删除像素的比例",
    "ex_curve_x_insertion": "已插入像素的比例",
    "ex_curve_y": "{label} 的概率",
    "ex_curves_caption": "实线：各方法；虚线：随机图和中心高斯图。",
    "ex_col_method": "解释图",
    "ex_col_deletion": "删除 AUC ↓",
    "ex_col_insertion": "插入 AUC ↑",
    "ex_col_drop": "平均下降 % ↓",
    "ex_col_increase": "置信度提升 % ↑",
    "ex_col_infidelity": "不忠实度 ↓",
    "ex_table_caption": (
        "↓ 越小越好，↑ 越大越好。平均下降：照片乘以解释图后，概率损失了多少；"
        "置信度提升：模型对乘以解释图后的照片更有把握时为 100，否则为 0。"
    ),
    "ex_infidelity": "不忠实度（Captum）",
    "ex_infidelity_running": "正在计算 {method} 的不忠实度（第 {i}/{n} 张解释图）…",
    "ex_infidelity_caption": (
        "不忠实度：用微小的噪声扰动照片（抽样 {n} 次，随机种子 0），解释图对类别得分变化的预测偏差有多大；"
        "解释图中每个像素的值同时计入该像素的三个颜色通道。越小越好。"
    ),
    "ex_col_verdict": "是否胜过两种对照？",
    "ex_verdict_yes": "是，两条曲线都胜过",
    "ex_verdict_no": "否：{where}",
    "ex_verdict_deletion": "{ref}在删除曲线上不比它差",
    "ex_verdict_insertion": "{ref}在插入曲线上不比它差",
    "ex_verdict_reference": "（对照）",
    "ex_verdict_caption": (
        "一张解释图只有同时胜过两种对照，才算有用：删除 AUC 比随机图和中心高斯图都小，插入 AUC 比它们都大。"
        "做不到的图，对这张照片的解释并不比随机猜测或“照片的中间”更好。"
    ),
    "ex_sanity_undefined": (
        "空白单元格表示该解释图是常数（处处同一个值，例如被 ReLU 变成全零的 CAM），没有大小顺序可比，"
        "因此秩相关系数没有定义。标记规则按 0 计算。"
    ),
    "ex_sanity_header": "解释取决于模型吗？",
    "ex_sanity_intro": (
        "Adebayo 等人（2018）提出的合理性检验：在网络的副本上，从输出端（head）往下逐段重新初始化各层，"
        "直到所有权重都是随机的。真正解释模型的图必然随之改变；始终相似的图描述的是照片（它的边缘），而不是模型。"
    ),
    "ex_sanity_methods": "要检验的方法",
    "ex_sanity_run": "运行合理性检验",
    "ex_sanity_running": "第 {done}/{total} 步：已重新初始化 {stage}",
    "ex_sanity_starting": "正在计算原始模型的解释图…",
    "ex_sanity_original": "原始模型",
    "ex_sanity_caption": (
        "每一行是一种方法在每一步之前和之后的解释图（从左到右，每一步网络中随机的部分都更多）；"
        "每张图按各自的取值范围缩放。"
    ),
    "ex_sanity_flag": (
        "**{method}**：模型被破坏了，它的图却仍然相似（最后一步之后，与原始解释图的 Spearman 相关系数为 {r:.2f}）："
        "它描述的是照片，而不是模型。"
    ),
    "ex_sanity_passed": (
        "**{method}** 通过检验：模型被破坏时，它的图随之改变（最后一步的 Spearman 相关系数为 {r:.2f}）。"
    ),
    "ex_col_step": "步骤",
    "ex_col_stage": "重新初始化的部分",
    "ex_col_spearman": "Spearman · {method}",
    "ex_col_ssim": "SSIM · {method}",
    "ex_sanity_table_caption": (
        "每一步的解释图与原始解释图的相似度：像素的 Spearman 秩相关系数，以及 SSIM（结构相似度）；1 表示两张图相同。"
        "若最后一步的 Spearman 相关系数仍不低于 {flag}，该方法会被标记。"
    ),
}
