"""The class poll's sentences, English and 简体中文; merged into texts.EN and texts_zh.ZH.

Every lesson question (``lesson_<id>_q``) gets three or four short choices ``lesson_<id>_c1`` ..
``_c4``, read on a projector in seconds: exactly one agrees with ``lesson_<id>_a``, the others are
misconceptions students really hold. ``CORRECT`` gives the 0-based position of the right one.
"""

from __future__ import annotations

#: step id -> 0-based index of the correct choice (c1 is 0); varied so the position gives nothing away
CORRECT: dict[str, int] = {
    "what": 1,
    "forward": 2,
    "prehook": 0,
    "shapes": 1,
    "tensor": 3,
    "clamp": 1,
    "backward": 0,
    "gradcam": 2,
    "remove": 3,
    "conv": 0,
    "sanity": 2,
}

EN: dict[str, str] = {
    # the poll around the choices
    "poll_header": "Class poll",
    "poll_send": "Send my answer",
    "poll_sent": "Your answer is in; you may change it until the teacher reveals.",
    "poll_changed": "Answer changed: only your latest answer counts.",
    "poll_totals": "{n} answers",
    "poll_reveal": "Reveal the answer",
    "poll_revealed": "The answer: {choice}",
    "poll_csv": "Download the totals (CSV)",
    "poll_none_yet": "No answers yet.",
    "poll_your_answer": "Your answer",
    "poll_correct": "Your answer is right.",
    "poll_wrong": "Not this one: compare your answer with the one above and see where they differ.",
    # why not a print() in forward()?
    "lesson_what_c1": "`forward()` is compiled C++ code, so it cannot be edited.",
    "lesson_what_c2": "The model's code isn't yours; a hook attaches from outside and comes off again.",
    "lesson_what_c3": "A `print()` inside `forward()` would break the gradient computation.",
    "lesson_what_c4": "A hook runs faster than a `print()` would.",
    # why output.clone()?
    "lesson_forward_c1": "`clone()` cuts the copy from the graph, so no gradient is kept.",
    "lesson_forward_c2": "Without a copy, the tensor is freed as soon as the hook returns.",
    "lesson_forward_c3": "A later in-place op (e.g. `ReLU(inplace=True)`) may overwrite that same tensor.",
    "lesson_forward_c4": "`clone()` moves the tensor to the CPU so that it can be drawn.",
    # what does a pre-hook's return value do?
    "lesson_prehook_c1": "It replaces the module's inputs: the module then runs on the returned values.",
    "lesson_prehook_c2": "Nothing: a pre-hook can only look, and its return value is ignored.",
    "lesson_prehook_c3": "It becomes the module's output, and `forward()` is skipped.",
    "lesson_prehook_c4": "PyTorch raises an error: a pre-hook must return `None`.",
    # why containers in the table?
    "lesson_shapes_c1": "A layer's hook fires once more for every container around it.",
    "lesson_shapes_c2": "Containers are modules too: their `forward()` runs, so their own hooks fire.",
    "lesson_shapes_c3": "Summary tools add container rows by hand; PyTorch never calls hooks on them.",
    # instead of a tensor hook?
    "lesson_tensor_c1": "Read `output.grad` after `backward()`; that costs nothing extra.",
    "lesson_tensor_c2": "Set `output.requires_grad = True`; then `.grad` gets filled in.",
    "lesson_tensor_c3": "Run `backward()` twice; the second pass keeps the inner gradients.",
    "lesson_tensor_c4": "`output.retain_grad()`: it keeps that gradient for as long as the tensor lives.",
    # why do later layers not change?
    "lesson_clamp_c1": "Later layers have small gradients, already inside the clamp's limits.",
    "lesson_clamp_c2": "Backward reaches the later layers first, before the clamp happens.",
    "lesson_clamp_c3": "A tensor hook changes only its own tensor; no other layer ever sees it.",
    # why reverse order?
    "lesson_backward_c1": "The chain rule starts at the score: each module needs its output's gradient first.",
    "lesson_backward_c2": "Backward hooks are called in the reverse of the order they were registered.",
    "lesson_backward_c3": "Only the display is reversed; backward could visit the modules in any order.",
    # coarse deep maps, noisy early ones
    "lesson_gradcam_c1": "Deep layers have fewer channels, so each map holds less detail.",
    "lesson_gradcam_c2": "Early layers are trained less than deep ones, so their maps stay random.",
    "lesson_gradcam_c3": "Deep layers have few large cells (7 × 7) for whole objects; early ones see edges.",
    # one forgotten hook on the shared model
    "lesson_conv_c1": "576 multiplications on 576 input numbers; the depthwise conv: 9 and 9.",
    "lesson_conv_c2": "9 multiplications: the kernel has 3 × 3 weights, whatever the channels.",
    "lesson_conv_c3": "64 multiplications: one per input channel, each with the kernel's sum.",
    "lesson_conv_c4": "576 for the ordinary conv, and 576 for the depthwise one too.",
    "lesson_sanity_c1": "The one at 0.9: a map that stays stable is the one to trust.",
    "lesson_sanity_c2": "Either: scrambling the weights says nothing about an explanation.",
    "lesson_sanity_c3": "The one at 0.1: its map changed with the weights, so it depends on the model.",
    "lesson_remove_c1": "Nothing: a hook is removed when the function that made it returns.",
    "lesson_remove_c2": "Only the student who registered it would notice anything.",
    "lesson_remove_c3": "PyTorch refuses a second hook on the same layer, so the others get an error.",
    "lesson_remove_c4": "It runs in everyone's passes: slower, and one student's copies mixed into another's.",
}

ZH: dict[str, str] = {
    "poll_header": "课堂投票",
    "poll_send": "提交我的答案",
    "poll_sent": "已收到你的答案；老师公布答案之前，你还可以修改。",
    "poll_changed": "答案已修改：只算你最后一次提交的答案。",
    "poll_totals": "已收到 {n} 份答案",
    "poll_reveal": "公布答案",
    "poll_revealed": "正确答案：{choice}",
    "poll_csv": "下载统计结果（CSV）",
    "poll_none_yet": "还没有人作答。",
    "poll_your_answer": "你的答案",
    "poll_correct": "你答对了！",
    "poll_wrong": "这次没答对：对照上面的正确答案，看看差在哪里。",
    "lesson_what_c1": "`forward()` 是编译好的 C++ 代码，改不了。",
    "lesson_what_c2": "模型的代码不是你写的；钩子从外部挂上去，用完还能取下来。",
    "lesson_what_c3": "在 `forward()` 里加 `print()` 会破坏梯度的计算。",
    "lesson_what_c4": "钩子比 `print()` 运行得更快。",
    "lesson_forward_c1": "`clone()` 会让副本脱离计算图，这样就不会保留梯度。",
    "lesson_forward_c2": "不复制的话，钩子一返回，这个张量就被释放了。",
    "lesson_forward_c3": "后面的原地操作（如 `ReLU(inplace=True)`）可能会覆盖同一个张量。",
    "lesson_forward_c4": "`clone()` 会把张量搬到 CPU 上，方便画图。",
    "lesson_prehook_c1": "返回值会替换模块的输入，模块随后就用这些值来运行。",
    "lesson_prehook_c2": "什么也不会发生：前向预钩子只能查看，返回值会被忽略。",
    "lesson_prehook_c3": "返回值直接成为模块的输出，`forward()` 被跳过。",
    "lesson_prehook_c4": "PyTorch 会报错：前向预钩子只能返回 `None`。",
    "lesson_shapes_c1": "层上的钩子会为包在它外面的每个容器再触发一次。",
    "lesson_shapes_c2": "容器本身也是模块，会运行自己的 `forward()`，所以它的钩子也会触发。",
    "lesson_shapes_c3": "容器那几行是摘要工具自己加的，PyTorch 从不在容器上调用钩子。",
    "lesson_tensor_c1": "`backward()` 之后直接读 `output.grad`，没有任何额外开销。",
    "lesson_tensor_c2": "设置 `output.requires_grad = True`，`.grad` 就会被填上。",
    "lesson_tensor_c3": "调用两次 `backward()`，第二次就会保留中间层的梯度。",
    "lesson_tensor_c4": "用 `output.retain_grad()`：张量存在多久，这份梯度就保留多久。",
    "lesson_clamp_c1": "后面各层的梯度本来就小，已经在裁剪范围之内。",
    "lesson_clamp_c2": "反向传播先到达后面的层，那时还没有发生裁剪。",
    "lesson_clamp_c3": "张量钩子只改它自己的张量，别的层根本看不到。",
    "lesson_backward_c1": "链式法则从得分出发：每个模块都要先拿到其输出的梯度。",
    "lesson_backward_c2": "反向钩子按注册顺序倒过来调用。",
    "lesson_backward_c3": "只是显示顺序反了，反向传播其实可以按任意顺序经过各模块。",
    "lesson_gradcam_c1": "深层的通道更少，所以每张特征图的细节也更少。",
    "lesson_gradcam_c2": "浅层训练得不如深层充分，所以它们的图接近随机。",
    "lesson_gradcam_c3": "深层只有少量大单元格（7 × 7），对应整个物体；浅层响应的是边缘和纹理。",
    "lesson_conv_c1": "576 次乘法，依赖 576 个输入数；逐通道卷积只有 9 次乘法、9 个输入数。",
    "lesson_conv_c2": "9 次：卷积核只有 3 × 3 个权重，与通道数无关。",
    "lesson_conv_c3": "64 次：每个输入通道一次，乘的是卷积核权重之和。",
    "lesson_conv_c4": "普通卷积 576 次，逐通道卷积同样是 576 次。",
    "lesson_sanity_c1": "0.9 的那种：稳定不变的热力图才可信。",
    "lesson_sanity_c2": "两种都行：打乱权重说明不了解释的好坏。",
    "lesson_sanity_c3": "0.1 的那种：权重变了，它的图也跟着变，说明它依赖于模型。",
    "lesson_remove_c1": "没什么影响：创建钩子的函数一返回，钩子就自动移除了。",
    "lesson_remove_c2": "只有注册它的那个学生会受到影响。",
    "lesson_remove_c3": "PyTorch 不允许同一层挂第二个钩子，所以其他人会报错。",
    "lesson_remove_c4": "它会在每个人的前向传播中运行：拖慢速度，还会把一个学生的副本混进别人的结果。",
}
