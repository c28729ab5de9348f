"""Atlases of what channels respond to: feature visualization (and exemplars)."""

from .exemplars import Atlas, AtlasError, Exemplar, PartialAtlas, TopK, build_atlas, load_atlas, scan_paths
from .featurevis import visualize_channel, visualize_channels
from .receptive import ReceptiveField, receptive_field, receptive_fields

__all__ = ["Atlas", "AtlasError", "Exemplar", "PartialAtlas", "ReceptiveField", "TopK", "build_atlas", "load_atlas",
           "receptive_field", "receptive_fields", "scan_paths", "visualize_channel", "visualize_channels"]
