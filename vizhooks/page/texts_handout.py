"""Sentences of the lesson to take home (vizhooks/page/handout.py): the notebook, the HTML handout and
the Lesson view's download."""

from __future__ import annotations

EN: dict[str, str] = {
    "handout_title": "vizhooks lesson: {model} on {photo}",
    "handout_intro": (
        "The page's nine-step lesson on PyTorch hooks, on this photo and this model: each step's "
        "explanation, its plain-PyTorch code (no vizhooks), a question for the class and its answer."
    ),
    "handout_made": "Made by vizhooks {version}: {model}, shorter side {size} px, layers {layers}. {weights}",
    "handout_photo": "The photo the model saw ({width} × {height} pixels) and its top-5 classes:",
    "handout_photo_cell": (
        "The photo of this lesson is kept inside the notebook: the next cell writes it next to the "
        "notebook as `{photo}` (unless a file of that name is already there) and shows it."
    ),
    "handout_setup": (
        "**Set-up**: model, photo, preprocessing, the same for every step. Run it first; each step "
        "below runs after it, in order."
    ),
    "handout_code_setup": "Set-up (model, photo, preprocessing; runs before every step):",
    "handout_run": "Run the cells from the top (Run All): it works offline, with nothing but PyTorch, "
                   "torchvision and Pillow.",
    "handout_download": "Download the lesson",
    "handout_download_help": (
        "All nine steps on this photo and model, to take home: the notebook runs the code (offline "
        "too), the handout holds the text, the code and the pictures and prints on A4."
    ),
    "handout_download_ipynb": "Notebook (.ipynb)",
    "handout_download_html": "Handout (.html)",
}

ZH: dict[str, str] = {
    "handout_title": "vizhooks 课程：{model} 看 {photo}",
    "handout_intro": (
        "页面上关于 PyTorch 钩子的九步课程，用的是这张照片和这个模型：每一步的讲解、"
        "纯 PyTorch 代码（不用 vizhooks）、给全班的问题和答案。"
    ),
    "handout_made": "由 vizhooks {version} 生成：{model}，短边 {size} 像素，层 {layers}。{weights}",
    "handout_photo": "模型看到的照片（{width} × {height} 像素）和它的前 5 个类别：",
    "handout_photo_cell": (
        "这节课的照片就保存在笔记本里：下一个单元格把它写到笔记本旁边，文件名为 `{photo}`"
        "（如果那里已经有同名文件，就直接使用），并显示出来。"
    ),
    "handout_setup": "**准备**：模型、照片、预处理，每一步都相同。请先运行它；下面的每一步都按顺序在它之后运行。",
    "handout_code_setup": "准备（模型、照片、预处理；在每一步之前运行）：",
    "handout_run": "从头开始运行所有单元格（Run All）：离线也能运行，只需要 PyTorch、torchvision 和 Pillow。",
    "handout_download": "下载本课",
    "handout_download_help": (
        "这张照片和这个模型上的全部九步，带回家：笔记本可以运行代码（离线也可以），"
        "讲义包含讲解、代码和图片，可以用 A4 纸打印。"
    ),
    "handout_download_ipynb": "笔记本（.ipynb）",
    "handout_download_html": "讲义（.html）",
}
