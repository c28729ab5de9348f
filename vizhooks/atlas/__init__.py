"""Atlases of what channels respond to: dataset exemplars (state, scan, build, store; engines local
and ray), feature visualization and receptive fields."""

from vizhooks.atlas.build import build_atlas, check_engine
from vizhooks.atlas.featurevis import visualize_channel, visualize_channels
from vizhooks.atlas.receptive import ReceptiveField, receptive_field, receptive_fields
from vizhooks.atlas.scan import list_images, scan_paths
from vizhooks.atlas.state import ENGINES, IMAGE_EXTENSIONS, AtlasError, PartialAtlas, TopK
from vizhooks.atlas.store import Atlas, Exemplar, load_atlas, read_progress

__all__ = ["ENGINES", "IMAGE_EXTENSIONS", "Atlas", "AtlasError", "Exemplar", "PartialAtlas", "ReceptiveField", "TopK",
           "build_atlas", "check_engine", "list_images", "load_atlas", "read_progress", "receptive_field",
           "receptive_fields", "scan_paths", "visualize_channel", "visualize_channels"]
