"""Code a fill may stand for instead of a value (vizhooks/lesson/code.py): the top-1 class when no
class was chosen, the centre of the map when no place was."""

from vizhooks.lesson.snippets.setup import model, x

logits = out = model(x)

# %% top1
int(logits[0].argmax())  # en: top-1 class
# zh: Top-1 类别
# %% top1_lesson
int(model(x)[0].argmax())
# %% centre
out.shape[-2] // 2, out.shape[-1] // 2  # en: the centre
# zh: 特征图的中心
