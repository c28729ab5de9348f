"""The lesson's sentences, English and 简体中文: each step's title, text, question and answer and the
captions of its live part (``lesson_<id>_...``, vizhooks/lesson/steps.py), the Lesson view's buttons,
and the lesson to take home (``handout_...``: the notebook, the HTML handout, the view's download).
The page's texts (vizhooks/page/texts.py) merge these tables into theirs."""

from __future__ import annotations

EN: dict[str, str] = {
    "lesson_step": "Step {n} of {total}: {title}",
    "lesson_back": "← Back",
    "lesson_next": "Next →",
    "lesson_link": "Link to this step",
    "lesson_question": "Question for the class:",
    "lesson_answer": "Answer",
    "lesson_code": (
        "This step's hooks in plain PyTorch. They run after the set-up below; the whole file runs as "
        "it is, next to the photo:"
    ),
    "lesson_code_setup": "Set-up: model, photo, preprocessing (the same in every step; runs first)",
    "lesson_code_download": "Download the whole file",
    "lesson_hello_caption": "What the hook printed during one forward pass:",
    "lesson_col_layer": "layer",
    "lesson_col_module": "module",
    "lesson_col_shape": "output shape",
    "lesson_prepost_input": "Input of {layer} (forward pre-hook)",
    "lesson_prepost_output": "Output of {layer} (forward hook)",
    "lesson_remove_forgot": "Hook calls per pass, handle never removed: {calls}",
    "lesson_remove_removed": "Hook calls per pass, handle removed after each pass: {calls}",
    "lesson_what_title": "What a hook is, and why",
    "lesson_what_text": (
        "A **hook** is a function you hand to PyTorch, and PyTorch calls it at a fixed moment: "
        "just before a module runs, just after it, or when a gradient has been computed. You can "
        "look inside a trained network **without changing one line of its code**: register the "
        "hook, run the model as usual, remove the hook. Here a forward hook on each chosen layer "
        "only prints what it sees."
    ),
    "lesson_what_q": "Why not just add a print() to the model's forward()?",
    "lesson_what_a": (
        "The model's code is torchvision's, not yours: editing it changes it for everyone and every "
        "later run. A hook is attached from the outside to one object, for as long as you need it, "
        "and removed again; the same hook works on any model."
    ),
    "lesson_forward_title": "The forward hook and a feature-map grid",
    "lesson_forward_text": (
        "`register_forward_hook(fn)` calls `fn(module, inputs, output)` right after the module's "
        "`forward()`. Keeping a copy of `output` gives the layer's **feature maps**: one 2-D map "
        "per channel, drawn here as a grid. Bright means a strong response of that channel at that "
        "place."
    ),
    "lesson_forward_q": "Why does the hook keep output.clone() and not output itself?",
    "lesson_forward_a": (
        "A later in-place operation (ResNet's `ReLU(inplace=True)`, `out += identity`) may "
        "overwrite the very same tensor after the hook has seen it. A copy keeps what the layer "
        "really produced."
    ),
    "lesson_prehook_title": "The forward pre-hook: a layer's input and output",
    "lesson_prehook_text": (
        "`register_forward_pre_hook(fn)` calls `fn(module, inputs)` just **before** `forward()`; "
        "`inputs` is a tuple. With a pre-hook and a forward hook on the same layer you see what "
        "goes in and what comes out: the input of a conv is the previous layer's output."
    ),
    "lesson_prehook_q": "The pre-hook may return something. What happens then?",
    "lesson_prehook_a": (
        "The returned value replaces the module's inputs: the module then runs on your values. "
        "Returning None leaves the inputs as they were."
    ),
    "lesson_shapes_title": "Shapes through the network",
    "lesson_shapes_text": (
        "A pre-hook and a hook on **every** module, in one pass, note each module's input and "
        "output shape and its time. That is how summary tools build their layer tables. Watch the "
        "channels grow while height and width shrink."
    ),
    "lesson_shapes_q": "Why do containers (stages, blocks) appear in the table as well as single layers?",
    "lesson_shapes_a": (
        "Containers are modules too and run their own forward(), so their hooks fire: their time "
        "includes their children's, and their output is the output of their last child."
    ),
    "lesson_conv_title": "What one convolution computes",
    "lesson_conv_text": (
        "Every value of a conv layer's feature map is one small sum. The kernel lies on a window of the "
        "input (the same place in every input channel it sees); each input value is multiplied by the "
        "weight under it, the products are added up, and the bias is added. A **forward pre-hook** hands "
        "you the window's numbers, a **forward hook** the result: below, both are taken apart for this "
        "photo. Move the place (row, column) and the window moves by the stride; BatchNorm and ReLU then "
        "scale, shift and cut the value before the next layer sees it."
    ),
    "lesson_conv_q": (
        "A Conv2d has a 3×3 kernel, 64 input channels and a bias. How many multiplications give one output "
        "value, and on how many input numbers does it depend? And for a depthwise 3×3 conv (groups = 64)?"
    ),
    "lesson_conv_a": (
        "3 × 3 × 64 = 576 multiplications, then one sum of the 576 products plus the bias; the value depends "
        "on those 576 input numbers, a 3×3 window in each of the 64 channels. In a depthwise conv each output "
        "channel sees only its own input channel: 9 multiplications and 9 input numbers."
    ),
    "lesson_tensor_title": "The tensor hook: gradients of a layer's output",
    "lesson_tensor_text": (
        "After `backward()`, PyTorch keeps `.grad` only for **leaf** tensors (the input, the "
        "parameters). A layer's output is not a leaf, so its `.grad` is `None`. "
        "`output.register_hook(fn)` calls `fn(grad)` during backward with exactly that gradient: "
        "how much the class score would change if one value of the map went up (red up, blue down)."
    ),
    "lesson_tensor_q": "What else could you do instead of a tensor hook, and what does it cost?",
    "lesson_tensor_a": (
        "`output.retain_grad()` before backward also keeps the gradient, but on every tensor you "
        "call it for and for as long as the tensor lives; a hook hands you the gradient once and "
        "you decide what to keep."
    ),
    "lesson_clamp_title": "Changing a gradient in a hook",
    "lesson_clamp_text": (
        "A tensor hook that **returns** a tensor replaces the gradient. Clamping it, "
        "`grad.clamp(-limit, limit)`, is the idea behind gradient clipping. The limit here is a "
        "percentile of the gradient's own sizes at the clamped layer, so it always clips a share you "
        "can read below. Backward then carries the clipped gradient on to the layers **before** the "
        "clamped one (upstream in the forward order): compare their gradients and Grad-CAM maps."
    ),
    "lesson_clamp_q": "Why do the layers after the clamped one not change?",
    "lesson_clamp_a": (
        "Backward runs from the score towards the input: the gradient reaches the later layers "
        "first, before the clamp happens. Only what flows on through the clamped layer, to the "
        "layers before it, is changed."
    ),
    "lesson_backward_title": "The full backward hook: grad_input and grad_output",
    "lesson_backward_text": (
        "`register_full_backward_hook(fn)` calls `fn(module, grad_input, grad_output)` during "
        "backward: the gradient arriving at the module's output, and the one it passes back to its "
        "input. Both are tuples; an entry is `None` only where no gradient flows. The first conv's "
        "`grad_input` is `None` when the input does not require a gradient; here the page (and the code "
        "below) sets `x.requires_grad_(True)`, so it is the gradient with respect to the photo, as the "
        "last row shows. Modules changed in place cannot carry this hook."
    ),
    "lesson_backward_q": "Why does backward list the modules in the reverse order of the forward pass?",
    "lesson_backward_a": (
        "The chain rule starts at the score and works back: each module needs the gradient of what "
        "it produced before it can compute the gradient of what it was given."
    ),
    "lesson_gradcam_title": "Grad-CAM: where the evidence is",
    "lesson_gradcam_text": (
        "Put the two together: a forward hook keeps a layer's maps, a tensor hook its gradients. "
        "Weight each channel by its average gradient, sum, keep the positive part and stretch it "
        "over the photo: that is **Grad-CAM**, a heat map of where this layer found evidence for "
        "the class."
    ),
    "lesson_gradcam_q": "Why are the maps of deep layers coarse, and those of early layers noisy?",
    "lesson_gradcam_a": (
        "Deep layers have few, large cells (7 × 7 for 224 pixels) that stand for whole objects; "
        "early layers have many small cells that respond to edges and textures, not to the class."
    ),
    "lesson_sanity_title": "Does the explanation depend on the model?",
    "lesson_sanity_text": (
        "A map that explains the **model** must change when the model changes. The sanity check of "
        "Adebayo et al. (2018) tests exactly that: a copy of the network has its weights re-initialised "
        "stage by stage, from the head down, and after each step Grad-CAM is drawn again for the same "
        "photo and class. The number beside each map is the Spearman rank correlation with the original "
        "map: 1 means the same pixels are ranked the same way, 0 means no relation. The hooks are the "
        "Grad-CAM ones of the previous step, on the copy."
    ),
    "lesson_sanity_q": (
        "After every layer is random, one method's map still correlates 0.9 with the original, another's "
        "0.1. Which one can tell you what the trained model looks at, and why?"
    ),
    "lesson_sanity_a": (
        "The one at 0.1: its map changed when the model was destroyed, so it depends on the weights. A map "
        "that stays the same for a random network is made by the picture (its edges and colours), not by "
        "what the model learned; Guided Backprop often fails this way, Grad-CAM passes."
    ),
    "lesson_sanity_caption": "Grad-CAM of {layer} for {label}: the original, then after each stage is re-initialised",
    "lesson_sanity_after": "{stage} random · ρ = {rho:.2f}",
    "lesson_sanity_original": "original",
    "lesson_sanity_none": "This model's layer {layer} has no spatial map for Grad-CAM; choose a conv layer.",
    "lesson_remove_title": "Removing hooks, and forgetting to",
    "lesson_remove_text": (
        "Every `register_*` call returns a **handle**; `handle.remove()` takes the hook off again. "
        "Forget it, and the hook stays on the model: register one in a loop and each pass adds "
        "another, so the calls pile up (and so does the memory they keep). Put `remove()` in a "
        "`finally:` so that it also runs when something fails."
    ),
    "lesson_remove_q": "The page's model is shared by the whole class. What would one forgotten hook do?",
    "lesson_remove_a": (
        "It would run in everybody's passes, slow them down and mix one student's copies into "
        "another's. That is why vizhooks removes every hook before it returns, even on errors."
    ),
    "handout_title": "vizhooks lesson: {model} on {photo}",
    "handout_intro": (
        "The page's {n}-step lesson on PyTorch hooks, on this photo and this model: each step's "
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
        "All {n} steps on this photo and model, to take home: the notebook runs the code (offline "
        "too), the handout holds the text, the code and the pictures and prints on A4."
    ),
    "handout_download_ipynb": "Notebook (.ipynb)",
    "handout_download_html": "Handout (.html)",
}

ZH: dict[str, str] = {
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
        "卷积层特征图中的每个值都只是一个加权和，而且参与的值并不多。卷积核覆盖输入上的一个窗口（在它看到的每个输入通道上位置都相同），"
        "窗口中的每个输入值乘以对应位置的权重，乘积相加，再加上偏置。**前向预钩子**交给你窗口里的数，"
        "**前向钩子**交给你结果：下面就用这张照片把两者逐项拆开。改变位置（行、列），窗口就按步幅移动；"
        "之后批归一化（BatchNorm）和 ReLU 还会对这个值做缩放、平移和截断，下一层看到的是处理后的值。"
    ),
    "lesson_conv_q": (
        "一个 Conv2d 的卷积核为 3×3，有 64 个输入通道，带偏置。算出一个输出值要做多少次乘法？这个值取决于多少个输入值？"
        "换成 3×3 的逐通道卷积（depthwise，groups = 64）呢？"
    ),
    "lesson_conv_a": (
        "3 × 3 × 64 = 576 次乘法，再把这 576 个乘积相加、加上偏置；这个值取决于这 576 个输入值，"
        "即 64 个通道中各自的一个 3×3 窗口。在逐通道卷积中，每个输出通道只看与它对应的那一个输入通道："
        "9 次乘法，9 个输入值。"
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
        "深层的特征图只有很少几个位置（输入为 224 像素时是 7 × 7），每个位置的感受野大到能覆盖整个物体；"
        "浅层有许多位置，每个位置的感受野小，只能响应边缘和纹理，还分辨不出类别。"
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
        "每次调用 `register_*` 都会返回一个**句柄**；`handle.remove()` 会把钩子摘掉。"
        "如果忘了这一步，钩子就会一直留在模型上："
        "在循环中注册钩子，每做一次前向传播就多一个钩子，调用次数越积越多（它们占用的内存也一样）。"
        "把 `remove()` 放在 `finally:` 中，这样即使出错也会执行。"
    ),
    "lesson_remove_q": "页面上的模型由全班共用。一个忘记移除的钩子会造成什么后果？",
    "lesson_remove_a": (
        "它会在每个人的前向传播里都运行一遍，拖慢所有人的速度，还可能把一个学生保存的副本混进另一个学生的结果里。"
        "所以 vizhooks 每次返回之前都会移除全部钩子，出错时也不例外。"
    ),
    "handout_title": "vizhooks 课程：{model} 看 {photo}",
    "handout_intro": (
        "页面上关于 PyTorch 钩子的 {n} 步课程，用的是这张照片和这个模型：每一步的讲解、"
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
        "这张照片和这个模型上的全部 {n} 步，带回家：笔记本可以运行代码（离线也可以），"
        "讲义包含讲解、代码和图片，可以用 A4 纸打印。"
    ),
    "handout_download_ipynb": "笔记本（.ipynb）",
    "handout_download_html": "讲义（.html）",
}
