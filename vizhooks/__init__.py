"""vizhooks: look inside a convolutional network with PyTorch hooks.

Example:
    >>> from vizhooks import load_model, load_image, preprocess, capture, feature_grid
    >>> bundle = load_model("resnet18")
    >>> x = preprocess(load_image("sample_images/chelsea.jpg"))
    >>> acts = capture(bundle.model, x, ["conv1", "layer2.0.conv1"])
    >>> feature_grid(acts["conv1"], title="conv1").savefig("conv1.png")
"""

from importlib import metadata as _metadata

from ._hooks import model_lock
from .atlas import Atlas, Exemplar, load_atlas, visualize_channel, visualize_channels
from .cam import grad_cam
from .capture import as_map, capture, capture_with_output, hook_count, is_out_of_memory, release_memory
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
from .intervene import ChannelEdit, InterventionResult, clamp_gradients, intervene
from .layers import (
    LayerInfo,
    UnknownLayerError,
    block_layers,
    conv_layers,
    default_layers,
    describe_layers,
    find_layers,
    resolve_layers,
)
from .live import LiveProcessor, LiveSettings, LiveStats
from .models import (
    ARCHITECTURES,
    InputSpec,
    ModelBundle,
    list_models,
    load_model,
    resolve_device,
)
from .render import feature_grid, figure_to_png
from .summary import SummaryRow, layer_summary, summary_dataframe
from .video import Clip, InvalidVideoError, capture_frames, layer_video, read_clip, read_frames
from .weights import WeightsError, checkpoint_path, fetch_weights


def _version() -> str:
    """The installed distribution's version; in a source checkout that was never installed, the one
    in the pyproject.toml beside the package (pyproject is the only place a version is written)."""
    try:
        return _metadata.version("vizhooks")
    except _metadata.PackageNotFoundError:
        pass
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    except (OSError, ValueError, KeyError):  # no pyproject, or not one we can read
        return "0+unknown"
    return str(project["version"]) if project.get("name") == "vizhooks" else "0+unknown"


__version__ = _version()

__all__ = [
    "ARCHITECTURES",
    "Atlas",
    "BackwardRecord",
    "ChannelEdit",
    "Clip",
    "Exemplar",
    "GradientResult",
    "InputSpec",
    "InterventionResult",
    "InvalidImageError",
    "InvalidVideoError",
    "LayerInfo",
    "LiveProcessor",
    "LiveSettings",
    "LiveStats",
    "MAX_PIXELS",
    "ModelBundle",
    "SummaryRow",
    "UnknownLayerError",
    "WeightsError",
    "as_map",
    "backward_report",
    "block_layers",
    "capture",
    "capture_frames",
    "capture_gradients",
    "capture_with_output",
    "checkpoint_path",
    "clamp_gradients",
    "conv_layers",
    "default_layers",
    "describe_layers",
    "feature_grid",
    "fetch_weights",
    "figure_to_png",
    "find_layers",
    "grad_cam",
    "gradient_pass",
    "hook_count",
    "intervene",
    "is_out_of_memory",
    "layer_summary",
    "layer_video",
    "list_models",
    "load_atlas",
    "load_image",
    "load_model",
    "model_lock",
    "preprocess",
    "read_clip",
    "read_frames",
    "release_memory",
    "resize_for_model",
    "resolve_device",
    "resolve_layers",
    "summary_dataframe",
    "tensor_to_image",
    "to_tensor",
    "visualize_channel",
    "visualize_channels",
]
