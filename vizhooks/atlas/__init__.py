"""Atlases of what channels respond to: dataset exemplars (state, scan, build, store; engines local
and ray), feature visualization and receptive fields."""

from .build import build_atlas, check_engine
from .featurevis import visualize_channel, visualize_channels
from .receptive import ReceptiveField, receptive_field, receptive_fields
from .scan import list_images, scan_paths
from .state import ENGINES, IMAGE_EXTENSIONS, AtlasError, PartialAtlas, TopK
from .store import Atlas, Exemplar, load_atlas, read_progress

__all__ = ["ENGINES", "IMAGE_EXTENSIONS", "Atlas", "AtlasError", "Exemplar", "PartialAtlas", "ReceptiveField", "TopK",
           "build_atlas", "check_engine", "list_images", "load_atlas", "read_progress", "receptive_field",
           "receptive_fields", "scan_paths", "visualize_channel", "visualize_channels"]
