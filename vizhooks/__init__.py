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
family, Captum's input attributions); ``from vizhooks.explain import METHODS, attribute, ...`` has the
rest (the attribute ``vizhooks.explain`` is the function; Captum and pytorch-grad-cam load on first
use); :func:`faithfulness` scores a map (deletion, insertion, Average Drop) and :func:`sanity_check`
asks whether maps change when the model's weights are scrambled. :func:`teach` gives a model your
own classes (a new head on its frozen backbone); the rest of that job comes with
``from vizhooks.teach import TeachError, find_head, ...`` (the attribute ``vizhooks.teach`` is the
function). None of them is imported until it is used.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

from ._version import __version__ as __version__
from .cam import grad_cam
from .capture import capture, capture_with_output
from .explain import explain
from .faithfulness import faithfulness
from .gradients import BackwardRecord, GradientResult, backward_report, capture_gradients, gradient_pass
from .images import InvalidImageError, load_image
from .intervene import ChannelEdit, InterventionResult, clamp_gradients, intervene
from .layers import LayerInfo, UnknownLayerError, describe_layers, find_layers
from .models import ModelBundle, list_models, load_model
from .render import feature_grid, figure_to_png
from .sanity import sanity_check
from .summary import SummaryRow, layer_summary
from .teach import Taught, teach
from .weights import WeightsError

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
]

#: Namespaces reachable as attributes, imported on first use (OpenCV, Ray, pyarrow stay unloaded).
_NAMESPACES = ("atlas", "classroom", "live", "ops", "video")

#: Names that were at the top level before 0.2, and the module each lives in now. They keep working
#: for one release, with a DeprecationWarning that names the new place.
_MOVED = {
    "ARCHITECTURES": "models",
    "Atlas": "atlas",
    "Clip": "video",
    "Exemplar": "atlas",
    "InputSpec": "images",
    "InvalidVideoError": "video",
    "LiveProcessor": "live",
    "LiveSettings": "live",
    "LiveStats": "live",
    "MAX_PIXELS": "images",
    "as_map": "maps",
    "block_layers": "layers",
    "capture_frames": "video",
    "checkpoint_path": "ops",
    "conv_layers": "layers",
    "default_layers": "layers",
    "fetch_weights": "weights",
    "hook_count": "ops",
    "is_out_of_memory": "ops",
    "layer_video": "video",
    "load_atlas": "atlas",
    "model_lock": "ops",
    "preprocess": "images",
    "read_clip": "video",
    "read_frames": "video",
    "release_memory": "ops",
    "resize_for_model": "images",
    "resolve_device": "models",
    "resolve_layers": "layers",
    "summary_dataframe": "summary",
    "tensor_to_image": "images",
    "to_tensor": "images",
    "visualize_channel": "atlas",
    "visualize_channels": "atlas",
}


def __getattr__(name: str) -> ModuleType | object:
    if name in _NAMESPACES:
        return importlib.import_module(f"{__name__}.{name}")
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'vizhooks' has no attribute {name!r}")
    hint = " (bundle.preprocess uses the model's own input spec)" if name in ("preprocess", "resize_for_model") else ""
    warnings.warn(f"vizhooks.{name} moved to vizhooks.{home}.{name}; import it from there{hint}. "
                  "The old name goes away in the next release.", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_NAMESPACES])
