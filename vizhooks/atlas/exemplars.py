"""Dataset exemplars: for every channel of chosen layers, the images of a folder that make it fire most.

Every image is read with :func:`vizhooks.load_image` and prepared with ``bundle.preprocess(image,
size)``, exactly as the page prepares a photo (aspect kept, no crop). Images of one input shape run
together in batches, with forward hooks that reduce each channel's map to its maximum and the
maximum's position at once, so only the running top-k per channel is ever kept.

Layout of an atlas folder::

    index.parquet    one row per (layer, channel, rank): path, score, y, x, left, top, right, bottom, crop
    crops/LAYER/CHANNEL_RANK.jpg   the part of the original image that the maximum's position sees
    manifest.json    model, weights, size, folder, image count, skipped files with reasons, version
    progress.npz     the checkpoint: every top-k, the settings, how many lines of the log it covers
    progress.log     one JSON line per finished or skipped file, appended at each checkpoint

Order: highest score first; equal scores by path. ``rank`` counts from 0. Boxes are in the original
image's pixels, right and bottom excluded, from the layer's receptive field (see
:mod:`vizhooks.atlas.receptive`): the field's box in the model input, clipped to it, scaled back to
the original (left and top rounded down, right and bottom up).

Engines. The work is a map and a merge: :func:`scan_paths` turns any list of files into a
:class:`PartialAtlas`, and partial atlases of disjoint files :meth:`~PartialAtlas.merge` into the
same answer in any order. The ``local`` engine feeds a ``torch.utils.data.DataLoader`` (workers
decode and preprocess) into the same fold; the ``ray`` engine (:mod:`vizhooks.atlas.ray_engine`) runs
:func:`scan_paths` per shard in Ray actors and merges the shards here, in the driver.
"""

from __future__ import annotations

from vizhooks.atlas.build import build_atlas, check_engine
from vizhooks.atlas.scan import list_images, scan_paths
from vizhooks.atlas.state import ENGINES, IMAGE_EXTENSIONS, AtlasError, PartialAtlas, TopK
from vizhooks.atlas.store import Atlas, Exemplar, load_atlas, read_progress

__all__ = ["ENGINES", "IMAGE_EXTENSIONS", "Atlas", "AtlasError", "Exemplar", "PartialAtlas", "TopK", "build_atlas",
           "check_engine", "list_images", "load_atlas", "read_progress", "scan_paths"]
