"""vizhooks: look inside a convolutional network with PyTorch hooks.

Example:
    >>> from vizhooks import load_model, load_image, capture, feature_grid
    >>> bundle = load_model("resnet18")
    >>> x = bundle.preprocess(load_image("sample_images/chelsea.jpg"))  # the model's own size rule, mean and std
    >>> acts = capture(bundle.model, x, ["conv1", "layer2.0.conv1"])
    >>> feature_grid(acts["conv1"], title="conv1").savefig("conv1.png")

Beyond these names: picture sources and channel meaning are namespaces (``vizhooks.video``,
``vizhooks.live``, ``vizhooks.atlas``), what a server needs around a shared model (lock, hook
count, memory) is in ``vizhooks.ops``, and a class (teacher, followers, polls, gallery) in
``vizhooks.classroom``. :func:`explain` puts explanation methods side by side (Grad-CAM and its
family, Captum's input attributions); ``from vizhooks.interpret.methods import METHODS, attribute, ...`` has the
rest (the attribute ``vizhooks.explain`` is the function; Captum and pytorch-grad-cam load on first
use); :func:`faithfulness` scores a map (deletion, insertion, Average Drop) and :func:`sanity_check`
asks whether maps change when the model's weights are scrambled. :func:`teach` gives a model your
own classes (a new head on its frozen backbone); the rest of that job comes with
``from vizhooks.teaching import TeachError, find_head, ...`` (the attribute ``vizhooks.teach`` is the
function). This round's questions, why it decided and what it learned, are namespaces too:
``vizhooks.relevance`` (which channels carried the decision, LRP), ``vizhooks.concepts`` (what a
layer learned over many photos), ``vizhooks.audit`` (a labelled folder's shortcuts),
``vizhooks.patching`` (patch, sweep, steer, mean_direction) and ``vizhooks.exporting`` (ONNX).
None of them is imported until it is used.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from vizhooks._version import __version__ as __version__
from vizhooks.hooks.capture import capture, capture_with_output
from vizhooks.hooks.gradients import BackwardRecord, GradientResult, backward_report, capture_gradients, gradient_pass
from vizhooks.hooks.intervene import ChannelEdit, InterventionResult, clamp_gradients, intervene
from vizhooks.hooks.summary import SummaryRow, layer_summary
from vizhooks.interpret.cam import grad_cam
from vizhooks.interpret.faithfulness import faithfulness
from vizhooks.interpret.methods import explain
from vizhooks.interpret.sanity import sanity_check
from vizhooks.models.images import InvalidImageError, load_image
from vizhooks.models.layers import LayerInfo, UnknownLayerError, describe_layers, find_layers
from vizhooks.models.registry import ModelBundle, list_models, load_model
from vizhooks.models.weights import WeightsError
from vizhooks.models.zero_shot import zero_shot
from vizhooks.render.figures import feature_grid, figure_to_png
from vizhooks.teaching import Taught, teach

__all__ = [
    "BackwardRecord",
    "ChannelEdit",
    "GradientResult",
    "InterventionResult",
    "InvalidImageError",
    "LayerInfo",
    "ModelBundle",
    "SummaryRow",
    "Taught",
    "UnknownLayerError",
    "WeightsError",
    "backward_report",
    "capture",
    "capture_gradients",
    "capture_with_output",
    "clamp_gradients",
    "describe_layers",
    "explain",
    "faithfulness",
    "feature_grid",
    "figure_to_png",
    "find_layers",
    "grad_cam",
    "gradient_pass",
    "intervene",
    "layer_summary",
    "list_models",
    "load_image",
    "load_model",
    "sanity_check",
    "teach",
    "zero_shot",
]

#: Namespaces reachable as attributes, imported on first use (OpenCV, Ray, pyarrow stay unloaded).
_NAMESPACES = ("atlas", "audit", "classroom", "concepts", "exporting", "live", "ops", "patching", "relevance",
               "video")

def __getattr__(name: str) -> ModuleType:
    if name in _NAMESPACES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'vizhooks' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_NAMESPACES])
