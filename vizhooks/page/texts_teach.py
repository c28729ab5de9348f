"""The Teach view's sentences, English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "view_teach": "Teach",
    "model_taught_option": "{name} + my classes: {classes}",
    "teach_intro": (
        "**Teach the network your own classes.** Give each class a name and a few photos (the camera, "
        "uploads or a sample). **Train** keeps {model}'s layers as they are and fits only a new last layer "
        "on what the network sees in each photo, in a few seconds. Then every view explains *your* "
        "classifier: the top 5 names your classes, Grad-CAM shows where it looks for them."
    ),
    "teach_classes": "Classes",
    "teach_classes_help": "How many classes to teach: {least} to {most}.",
    "teach_in_other": "{file} is already a photo of {name}, so it was not added here too: one photo, one class.",
    "teach_name": "Name of class {n}",
    "teach_name_placeholder": "e.g. mug",
    "teach_count": "{n} photo(s)",
    "teach_add_to": "Add photos to",
    "teach_unnamed": "class {n}",
    "teach_snapshot": "Snapshot: each press adds one photo",
    "teach_upload": "Upload photos (several at once)",
    "teach_sample": "A sample photo",
    "teach_add_sample": "Add the sample",
    "teach_remove": "Remove",
    "teach_clear": "Clear this class",
    "teach_more": "… and {n} more",
    "teach_added": "Added {n} photo(s) to {name}.",
    "teach_again": "{n} photo(s) were already in {name}, so they were not added again.",
    "teach_not_image": "{file} was not added: {reason}",
    "teach_full_class": "{name} already has {most} photos, the most a class can have; remove some first.",
    "teach_full_session": (
        "This session holds {mb} MB of photos, the most it can keep ({most} MB): remove some first."
    ),
    "teach_train": "Train",
    "teach_features": "Looking at {done} of {total} photo(s)…",
    "teach_fitting": "Fitting the new last layer ({done} of {total})…",
    "teach_done": (
        "Done: **{model}** is now this session's model, on every view. The menu at the top of the sidebar "
        "switches back to {backbone}."
    ),
    "teach_accuracy": "Cross-validated accuracy",
    "teach_accuracy_help": (
        "Photos the network did not learn from, guessed right. ± is how much the figure moved between the "
        "parts the photos were split into."
    ),
    "teach_method_kfold": (
        "{k}-fold cross-validation: the photos were dealt into {k} parts, each class evenly; each part was "
        "guessed by a layer trained on the other {rest}, so every one of the {n} photos was held out once."
    ),
    "teach_below_chance": (
        "Below chance ({chance:.0%}): with few photos of classes that look alike, each held-out photo is "
        "guessed by a layer that saw one photo fewer of its own class, so it leans to the other class. Add "
        "more photos, and make the classes differ more."
    ),
    "teach_method_loo": (
        "A class has fewer than 10 photos, so each photo was held out once in turn (leave-one-out): the "
        "layer was trained on all the others and then guessed it ({n} guesses)."
    ),
    "teach_per_class": "{name}: {acc:.0%} right",
    "teach_confusion": "Right and wrong guesses",
    "teach_truth": "true class",
    "teach_guess": "guessed class",
    "teach_chance": (
        "Chance would be {chance:.0%}. Fewer than 10 photos per class, or photos that look alike across "
        "classes, make the result uncertain: add photos with different backgrounds and angles."
    ),
    "teach_stale": "The photos changed since the last training: press **Train** again to include them.",
    "teach_keep": "Keep it",
    "teach_download": "Download the model (.pth)",
    "teach_download_labels": "Download the class names (.txt)",
    "teach_keep_help": (
        "`vizhooks.load_model(\"{backbone}\", weights=\"{file}\", labels=\"{labels}\")` loads it again in Python "
        "with the same predictions; the upload below brings it back to this page."
    ),
    "teach_upload_model": "Upload a model taught before (.pth and its .txt)",
    "teach_upload_go": "Use the uploaded model",
    "teach_upload_needs_both": "Choose both files: the .pth checkpoint and its .txt class names.",
    "teach_upload_other": (
        "This checkpoint was not taught on {backbone} as this server has it (its other weights differ): "
        "choose that model first, or ask the operator to add the checkpoint as a model of its own."
    ),
    "teach_uploaded": "Loaded: **{model}**, on every view now.",
    "teach_back": "Back to {backbone}",
    "teach_class_follows": (
        "You lead a class: your students' pages follow your model as they follow your other choices, so "
        "they use {model} too (their servers get its new layer through the class)."
    ),
    "err_teach_few_classes": "Teaching needs at least 2 classes; this has {n}.",
    "err_teach_few_photos": "Class “{name}” has {n} photo(s); each class needs at least {least}.",
    "err_teach_empty_name": "Every class needs a name; one is empty.",
    "err_teach_same_name": "Two classes are both called “{name}”; give each class its own name.",
    "err_teach_too_many": "Class “{name}” has {n} photos; at most {most} per class are taught.",
    "err_teach_head": (
        "This model's last layer ({layer}) is a {kind}, not a Linear, so it cannot be taught new classes; "
        "choose a model that ends in a Linear layer (ResNet, VGG, MobileNet, ViT…)."
    ),
    "err_teach_not_checkpoint": "The .pth file is not a PyTorch checkpoint of a model (a state_dict).",
    "err_teach_labels_text": "The class names file is not UTF-8 text.",
    "err_labels_json": "The class names file {source} is not a JSON list of names (line {line}).",
    "err_labels_empty": "The class names file {source} holds no names.",
    "err_labels_count": "The class names file {source} has {n} names but the model has {classes} classes.",
    "err_teach_no_head": "No layer of this model has one output per class ({classes}); it cannot be taught.",
    "err_taught_gone": (
        "This taught model is not on this server any more (it restarted, or the link comes from another one): "
        "teach it again, or upload its checkpoint in the Teach view."
    ),
}

ZH: dict[str, str] = {
    "view_teach": "教新类别",
    "model_taught_option": "{name} + 我的类别：{classes}",
    "teach_intro": (
        "**教网络认识你自己的类别。** 给每个类别起个名字，再配上几张照片（用摄像头拍、上传，或用示例照片）。"
        "点 **训练** 后，{model} 原有的各层保持不变，只根据网络在每张照片中看到的特征，训练一个新的最后一层，"
        "几秒钟就能完成。之后，每个视图讲解的都是*你的*分类器：Top-5 里是你的类别，"
        "Grad-CAM 显示它在照片的哪些位置寻找这些类别。"
    ),
    "teach_classes": "类别数",
    "teach_classes_help": "要教的类别数：{least} 到 {most} 个。",
    "teach_in_other": "{file} 已经是“{name}”的照片了，所以没有再加到这里：一张照片只能属于一个类别。",
    "teach_name": "类别 {n} 的名称",
    "teach_name_placeholder": "例如：杯子",
    "teach_count": "{n} 张照片",
    "teach_add_to": "把照片加到哪个类别",
    "teach_unnamed": "类别 {n}",
    "teach_snapshot": "拍照：每按一次加入一张",
    "teach_upload": "上传照片（可一次选多张）",
    "teach_sample": "示例照片",
    "teach_add_sample": "加入这张示例照片",
    "teach_remove": "移除",
    "teach_clear": "清空这个类别",
    "teach_more": "……还有 {n} 张",
    "teach_added": "已把 {n} 张照片加入“{name}”。",
    "teach_again": "有 {n} 张照片已经在“{name}”里了，没有重复加入。",
    "teach_not_image": "{file} 未能加入：{reason}",
    "teach_full_class": "“{name}”已有 {most} 张照片，达到每个类别的上限：请先移除一些。",
    "teach_full_session": "本次会话保存的照片已有 {mb} MB，达到上限（{most} MB）：请先移除一些。",
    "teach_train": "训练",
    "teach_features": "正在查看照片（{done}/{total} 张）…",
    "teach_fitting": "正在训练新的最后一层（{done}/{total}）…",
    "teach_done": (
        "训练完成：本会话的所有视图现在都使用 **{model}**。用侧边栏顶部的“模型”菜单可以换回 {backbone}。"
    ),
    "teach_accuracy": "交叉验证准确率",
    "teach_accuracy_help": "在网络没有学过的照片中，猜对的比例。± 表示这个数字在各份照片之间的波动。",
    "teach_method_kfold": (
        "{k} 折交叉验证：把照片分成 {k} 份（每个类别均匀分配），每一份都由用其余 {rest} 份训练的最后一层来猜，"
        "所以 {n} 张照片每张都恰好被留出一次。"
    ),
    "teach_below_chance": (
        "低于随机猜测（{chance:.0%}）：类别彼此相像、照片又少时，每张留出的照片都由一个少见了一张同类照片的最后一层来猜，"
        "所以它会偏向另一个类别。请多拍一些照片，并让各个类别的差别更明显。"
    ),
    "teach_method_loo": (
        "有的类别不到 10 张照片，所以用留一法：每次留出一张照片，用其余所有照片训练这一层，再让它猜留出的那张；"
        "每张照片轮流留出一次，共猜 {n} 次。"
    ),
    "teach_per_class": "{name}：猜对 {acc:.0%}",
    "teach_confusion": "猜对和猜错的情况（混淆矩阵）",
    "teach_truth": "真实类别",
    "teach_guess": "猜测类别",
    "teach_chance": (
        "随便猜的准确率是 {chance:.0%}。每个类别少于 10 张照片，或者不同类别的照片看起来很像，结果都不太可靠："
        "请多加一些背景和角度不同的照片。"
    ),
    "teach_stale": "上次训练后照片有改动：请再点一次 **训练**，让改动生效。",
    "teach_keep": "保存模型",
    "teach_download": "下载模型（.pth）",
    "teach_download_labels": "下载类别名称（.txt）",
    "teach_keep_help": (
        "在 Python 中，用 `vizhooks.load_model(\"{backbone}\", weights=\"{file}\", labels=\"{labels}\")` "
        "就能重新加载这个模型，预测结果完全一样；也可以在下面上传这两个文件，把它带回这个页面。"
    ),
    "teach_upload_model": "上传以前教过的模型（.pth 和对应的 .txt）",
    "teach_upload_go": "使用上传的模型",
    "teach_upload_needs_both": "请同时选择两个文件：.pth 检查点和对应的 .txt 类别名称文件。",
    "teach_upload_other": (
        "这个检查点不是用这台服务器上的 {backbone} 教出来的（除最后一层外，其余权重对不上）："
        "请先选择教它时用的那个模型，或者请管理员把这个检查点单独添加为一个模型。"
    ),
    "teach_uploaded": "已加载 **{model}**，所有视图现在都使用它。",
    "teach_back": "换回 {backbone}",
    "teach_class_follows": (
        "你正在主持课堂：学生的页面会跟随你选的模型，就像跟随你的其他选择一样，所以他们也在使用 {model}"
        "（他们的服务器会通过课堂拿到这个新的最后一层）。"
    ),
    "err_teach_few_classes": "教网络至少需要 2 个类别，现在只有 {n} 个。",
    "err_teach_few_photos": "类别“{name}”只有 {n} 张照片，每个类别至少需要 {least} 张。",
    "err_teach_empty_name": "每个类别都要有名称，现在有一个类别的名称是空的。",
    "err_teach_same_name": "有两个类别都叫“{name}”，请给每个类别起不同的名称。",
    "err_teach_too_many": "类别“{name}”有 {n} 张照片，每个类别最多只能用 {most} 张。",
    "err_teach_head": (
        "这个模型的最后一层（{layer}）是 {kind}，不是 Linear（全连接层），所以无法教它新类别；"
        "请选择以 Linear 层结尾的模型（ResNet、VGG、MobileNet、ViT 等）。"
    ),
    "err_teach_not_checkpoint": "这个 .pth 文件不是 PyTorch 模型的检查点（state_dict）。",
    "err_teach_labels_text": "类别名称文件不是 UTF-8 编码的文本。",
    "err_labels_json": "类别名称文件 {source} 不是由名称组成的 JSON 列表（第 {line} 行有问题）。",
    "err_labels_empty": "类别名称文件 {source} 里没有任何名称。",
    "err_labels_count": "类别名称文件 {source} 有 {n} 个名称，但模型有 {classes} 个类别。",
    "err_teach_no_head": "这个模型中找不到每个类别各对应一个输出（共 {classes} 个）的层，无法教它新类别。",
    "err_taught_gone": (
        "这台服务器上已经没有这个教过的模型（服务器重启过，或者链接来自另一台服务器）："
        "请重新教一次，或者在“教新类别”视图中上传它的检查点。"
    ),
}
