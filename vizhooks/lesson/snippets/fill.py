"""The values a snippet leaves to the builder (vizhooks/lesson/code.py), declared with their types so
that mypy checks the snippets as if they were filled in. ``fill.NAME`` in a snippet's code becomes the
value's Python source; ``{fill.NAME}`` in a comment or a string becomes its text (see __init__.py).
Nothing imports this module at run time."""

from PIL import Image

#: the model's name, as the page names it
model: str
#: the photo's path
image: str
#: the shorter side in pixels, and the longer side's cap (free-size models)
size: int
cap: int
#: the side of the square input (fixed-size models: ViT, Swin, MaxViT)
side: int
#: the shorter side before the centre crop (fixed-size models; MobileViT's processor: larger than ``side``)
resize: int
#: the model's interpolation (source: ``Image.Resampling.BILINEAR``)
resample: Image.Resampling
#: the model's normalisation
mean: list[float]
std: list[float]
#: modules whose output is channels-last (Swin)
channels_last: list[str]
#: the chosen layers, and the one a step looks at
layers: list[str]
layer: str
#: the class to explain: a number, or the code that works out the top-1 class (values.py)
target: int
#: modules a full backward hook cannot wrap (in place)
skip: list[str]
#: the conv step's output channel and place (a place: ``row, col``; or values.centre)
channel: int
where: tuple[int, int]
#: the clamp step's layer and limit
clamp_at: str
limit: float
#: the sanity check's stages, from the head down
stages: list[str]
#: the patching step's photo B (its path)
source_image: str
#: the concepts step's number of concepts and crops per photo
k: int
crops: int
