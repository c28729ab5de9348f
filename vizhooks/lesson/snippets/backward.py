"""The Backward view's code: full backward hooks on the model's top-level children, printing the
gradients each receives and passes on, in the order backward reaches them."""

from vizhooks.lesson.snippets import fill
from vizhooks.lesson.snippets.common import target
from vizhooks.lesson.snippets.setup import model, modules

# %%

# en: Full backward hooks: called during backward with the gradients of a module's inputs
# en: and outputs. They cannot wrap a module whose output is changed in place later
# en: (ResNet's bn1, followed by ReLU(inplace=True)) or an in-place module itself (its
# en: relu), so those are left out here.
# zh: 完整反向钩子：在反向传播时调用，参数中有模块输入和输出的梯度。
# zh: 它不能挂在输出随后被原地修改的模块上
# zh: （ResNet 的 bn1，后面紧跟 ReLU(inplace=True)），
# zh: 也不能挂在本身就做原地运算的模块上（ResNet 的 relu），所以这里跳过它们。
skip = fill.skip

def report(name):
    def hook(module, grad_input, grad_output):
        def shapes(grads):
            return [None if g is None else tuple(g.shape) for g in grads]

        print(name, type(module).__name__, "grad_input", shapes(grad_input),
              "grad_output", shapes(grad_output))
    return hook

for p in model.parameters():
    p.requires_grad_(False)
names = [n for n, _ in model.named_children() if n not in skip]
handles = [modules[n].register_full_backward_hook(report(n)) for n in names]
# include: common.backward

print("not hooked", skip)
print("target", target)
