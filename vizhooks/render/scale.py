"""Min-max scaling: one home for stretching a map to [0, 1].

Used by Grad-CAM (cam), the sanity check's SSIM (sanity), the faithfulness scores, the inspector's
channel views (render), the sliding window's colours (sliding) and the CAM family's own scaling
(explain). Below every other vizhooks module: it imports only NumPy and torch.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import torch

Values = TypeVar("Values", np.ndarray, torch.Tensor)


def min_max(values: Values, lo: float | None = None, hi: float | None = None, *,
            eps: float | None = None) -> Values:
    """``(values - lo) / (hi - lo)``: ``lo`` and ``hi`` the values' own min and max unless given;
    zeros shaped like ``values`` when ``hi <= lo`` (a constant map), never NaN.

    NumPy arrays are scaled with ``lo`` and ``hi`` as Python floats, tensors with 0-d tensors of
    their own dtype (each caller's numbers exactly as before there was one helper).

    With ``eps`` (``lo`` and ``hi`` not given): pytorch-grad-cam's ``scale_cam_image``,
    ``shifted = values - min``, then ``shifted / (max(shifted) + eps)``, no test for a constant
    map (it gives zeros too).

    Example:
        >>> min_max(torch.tensor([1.0, 2.0, 3.0]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    if eps is not None:
        if lo is not None or hi is not None:
            raise TypeError("min_max takes eps or lo / hi, not both.")
        shifted = values - values.min()
        return shifted / (shifted.max() + eps)
    if isinstance(values, np.ndarray):
        low = float(values.min()) if lo is None else lo
        high = float(values.max()) if hi is None else hi
        return (values - low) / (high - low) if high > low else np.zeros_like(values)
    tlow = values.min() if lo is None else lo
    thigh = values.max() if hi is None else hi
    return (values - tlow) / (thigh - tlow) if thigh > tlow else torch.zeros_like(values)
