"""Present mode's and the lesson entry's sentences, English and 简体中文; merged into texts.EN and
texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "present": "Present",
    "present_help": (
        "For a projector: larger type, the sidebar folded away (its arrow at the top left opens it), and in the "
        "lesson, Back / Next and the list of steps at the top; the arrow keys ← → move between steps."
    ),
    "start_lesson": "Start the lesson",
    "start_lesson_help": "A guided tour of PyTorch hooks in {n} steps, on this photo, with code you can run.",
    "lesson_steps": "Step",
}

ZH: dict[str, str] = {
    "present": "演示模式",
    "present_help": (
        "用于投影：字号更大，侧边栏收起（点左上角的箭头可以展开）；在课程中，“上一步 / 下一步”和步骤列表放在最上方，"
        "键盘的 ← → 键也可以切换步骤。"
    ),
    "start_lesson": "开始课程",
    "start_lesson_help": "用 {n} 个步骤带你认识 PyTorch 钩子，就用这张照片，每一步都有可以运行的代码。",
    "lesson_steps": "步骤",
}
