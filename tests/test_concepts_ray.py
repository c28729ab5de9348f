"""The ray engine of vizhooks.interpret.concepts against the local one on the planted colour model: the
same crops, the same activation matrix A and so the same concepts. Ray runs locally (tests/conftest.py's
local_ray)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers import CONCEPT_MEAN_STD, CONCEPT_SIZE, ColourNet, colour_photos
from vizhooks.interpret.concepts import ConceptsError, activations, discover


@pytest.fixture(scope="module")
def photo_paths(tmp_path_factory):
    """Photos of two sizes on disk (the workers read them), so the crop boxes differ from photo to photo."""
    folder = tmp_path_factory.mktemp("colours")
    photos, _names = colour_photos(per_colour=3)
    paths = []
    for i, photo in enumerate(photos):
        if i % 2:
            photo = photo.resize((48, 40))
        paths.append(folder / f"{i:02d}.png")
        photo.save(paths[-1])
    return paths


@pytest.fixture
def one_thread():
    """Ray gives each actor one CPU and so one torch thread; the local pass on one thread too does the same
    arithmetic (on two threads a few sums round differently, by about 1e-7)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_ray_gives_the_local_activations_and_concepts(local_ray, photo_paths, one_thread):
    """One Ray run of discover (each Ray run starts its actors, most of what it costs): the same crops as
    the local activation pass, and the same bank, coefficients and importance bit for bit, which NMF of the
    same seed gives only from the same activation matrix A."""
    model = ColourNet()
    settings = {"crops_per_image": 4, "size": CONCEPT_SIZE, "mean_std": CONCEPT_MEAN_STD, "batch_size": 3}
    _acts, crops = activations(model, photo_paths, "relu", **settings)
    local = discover(model, photo_paths, "relu", k=4, target=0, **settings)
    calls = []
    on_ray = discover(model, photo_paths, "relu", k=4, target=0, engine="ray", workers=2,
                      progress=lambda done, total, stage: calls.append((done, total, stage)), **settings)
    assert local_ray.is_initialized()  # the session of the test was used, not a new one
    assert on_ray.crops == local.crops == crops and len(crops) == 48
    shards = [call for call in calls if call[2] == "crops"]
    assert len(shards) > 1 and shards[-1] == (48, 48, "crops")  # really sharded: one call per shard
    assert [done for done, _total, _stage in shards] == sorted(done for done, _total, _stage in shards)
    assert np.array_equal(on_ray.bank, local.bank) and np.array_equal(on_ray.coefficients, local.coefficients)
    assert np.array_equal(on_ray.importance, local.importance)


def test_an_unknown_engine_is_one_sentence():
    photos, _names = colour_photos(per_colour=1)
    with pytest.raises(ConceptsError, match="must be one of local, ray, not 'spark'") as info:
        discover(ColourNet(), photos, "relu", k=2, engine="spark", size=CONCEPT_SIZE)
    assert info.value.code == "concepts_engine" and "\n" not in str(info.value)
