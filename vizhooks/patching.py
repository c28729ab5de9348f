"""Activation patching: run photo A with a layer's output taken from photo B, and see how much of B's answer
comes back; a sweep over the layers shows where in the network the decision is made.

``vizhooks.patching`` is the public name; the code lives in :mod:`vizhooks.hooks.patching`, beside the
other interventions.
"""

from vizhooks.hooks.patching import (
    EditResult,
    PatchResult,
    class_direction,
    gradient_direction,
    mean_ablate,
    mean_direction,
    patch,
    photo_classes,
    steer,
    sweep,
)

__all__ = ["EditResult", "PatchResult", "class_direction", "gradient_direction", "mean_ablate", "mean_direction",
           "patch", "photo_classes", "steer", "sweep"]
