"""The ray engine against the local engine on the generated folder of test_exemplars: the same index and
the same skipped files. Ray runs locally (tests/conftest.py's local_ray)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import EXEMPLAR_LAYERS, EXEMPLAR_SIZE, EXEMPLAR_TOP, write_exemplar_folder
from vizhooks.atlas import build_atlas

LAYERS, SIZE, TOP = EXEMPLAR_LAYERS, EXEMPLAR_SIZE, EXEMPLAR_TOP


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_exemplar_folder(tmp_path_factory.mktemp("photos"))


def _rows(atlas) -> list[tuple]:
    return [(layer, channel, e.path, e.score, e.y, e.x, e.box) for layer in atlas.layers
            for channel in range(atlas.channels(layer)) for e in atlas.top(layer, channel)]


def _skipped(atlas) -> list[tuple[str, str]]:
    return [(s["path"], s["reason"]) for s in json.loads((atlas.path / "manifest.json").read_text())["skipped"]]


@pytest.mark.slow
def test_ray_engine_gives_the_local_index(folder, resnet18, local_ray, tmp_path, capfd):
    local = build_atlas(folder, resnet18, LAYERS, tmp_path / "local", top=TOP, size=SIZE, batch=4, progress=False)
    shards = []
    capfd.readouterr()
    import logging

    from ray.data import DataContext

    level, bars = logging.getLogger("ray.data").level, DataContext.get_current().enable_progress_bars
    made = build_atlas(folder, resnet18, LAYERS, tmp_path / "ray", top=TOP, size=SIZE, batch=4, engine="ray",
                       workers=1, progress=False, on_batch=lambda n, state: shards.append(n))
    err = capfd.readouterr().err  # QA 2026-12-06: Ray Data's log lines came between the command's own
    assert "Starting execution of Dataset" not in err and "deprecated" not in err, err
    # and only for the build: the caller's Ray Data says what it said before (review 2026-12-06)
    assert (logging.getLogger("ray.data").level, DataContext.get_current().enable_progress_bars) == (level, bars)
    assert local_ray.is_initialized()  # the session of the test was used, not a new one
    # really sharded: 44 files in shards of 16 on one actor (each actor is a Python importing torch; the
    # resumed run below has two)
    assert len(shards) == 3
    assert made.layers == local.layers == LAYERS
    got, want = _rows(made), _rows(local)
    assert len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert g[:3] == w[:3] and g[4:] == w[4:], (g, w)
        assert g[3] == pytest.approx(w[3], abs=1e-5)
    assert _skipped(made) == _skipped(local) and len(_skipped(made)) == 2
    assert made.manifest["images"] == local.manifest["images"] == 42
    assert {c.relative_to(made.path) for c in made.path.rglob("*.jpg")} == {
        c.relative_to(local.path) for c in local.path.rglob("*.jpg")}


@pytest.mark.slow
def test_ray_engine_resumes_and_skips_done_files(folder, resnet18, local_ray, tmp_path):
    """Stopped after the first shard, the same call on ray folds in only the rest and ends as the local run."""
    out = tmp_path / "ray"

    def stop(n, state):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_atlas(folder, resnet18, LAYERS, out, top=TOP, size=SIZE, batch=4, engine="ray", workers=1,
                    progress=False, on_batch=stop)
    first = (out / "progress.log").read_text().splitlines()
    assert len(first) == 16  # one shard of 4 batches of 4, saved on the way out
    shards = []
    made = build_atlas(folder, resnet18, LAYERS, out, top=TOP, size=SIZE, batch=4, engine="ray", workers=2,
                       progress=False, on_batch=lambda n, state: shards.append(len(state.done) + len(state.skipped)))
    assert shards == [23, 30, 37, 44]  # 28 files left on 2 workers: four shards of 7, two per worker
    local = build_atlas(folder, resnet18, LAYERS, tmp_path / "local", top=TOP, size=SIZE, batch=4, progress=False)
    assert [r[:3] + r[4:] for r in _rows(made)] == [r[:3] + r[4:] for r in _rows(local)]
    assert _skipped(made) == _skipped(local)


def test_ray_missing_is_one_sentence(monkeypatch):
    import importlib.util

    from vizhooks.atlas.exemplars import check_engine

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ValueError) as info:
        check_engine("ray")
    assert "requirements-scale.txt" in str(info.value) and "\n" not in str(info.value)
