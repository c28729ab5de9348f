"""vizhooks: look inside a convolutional network with PyTorch hooks.

Example:
    >>> from vizhooks import load_model, load_image, preprocess, capture, feature_grid
    >>> bundle = load_model("resnet18")
    >>> x = preprocess(load_image("sample_images/chelsea.jpg"))
    >>> acts = capture(bundle.model, x, ["conv1", "layer2.0.conv1"])
    >>> feature_grid(acts["conv1"], title="conv1").savefig("conv1.png")
"""

from .cam import grad_cam
from .capture import capture, capture_with_output, hook_count, is_out_of_memory, model_lock, release_memory
from .gradients import BackwardRecord, GradientResult, backward_report, capture_gradients, gradient_pass
from .images import (
    MAX_PIXELS,
    InvalidImageError,
    load_image,
    preprocess,
    resize_for_model,
    tensor_to_image,
    to_tensor,
)
from .layers import (
    LayerInfo,
    UnknownLayerError,
    conv_layers,
    default_layers,
    find_layers,
    resolve_layers,
)
from .models import (
    ARCHITECTURES,
    ModelBundle,
    WeightsError,
    checkpoint_path,
    fetch_weights,
    load_model,
    resolve_device,
)
from .render import feature_grid, figure_to_png
from .summary import SummaryRow, layer_summary, summary_dataframe

__version__ = "0.1.0"

__all__ = [
    "ARCHITECTURES",
    "BackwardRecord",
    "GradientResult",
    "SummaryRow",
    "backward_report",
    "capture_gradients",
    "grad_cam",
    "gradient_pass",
    "layer_summary",
    "summary_dataframe",
    "MAX_PIXELS",
    "InvalidImageError",
    "LayerInfo",
    "ModelBundle",
    "UnknownLayerError",
    "WeightsError",
    "capture",
    "capture_with_output",
    "checkpoint_path",
    "conv_layers",
    "default_layers",
    "feature_grid",
    "fetch_weights",
    "figure_to_png",
    "find_layers",
    "hook_count",
    "is_out_of_memory",
    "release_memory",
    "load_image",
    "load_model",
    "model_lock",
    "preprocess",
    "resize_for_model",
    "resolve_device",
    "resolve_layers",
    "tensor_to_image",
    "to_tensor",
]
