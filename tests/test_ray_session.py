"""vizhooks._ray: how the Ray engines (exemplars, concepts, the audit) join or start Ray and size their
pool of model actors. The engines' own tests run on a real local Ray; these check the rules alone."""

from __future__ import annotations

import sys

import pytest

from vizhooks import _ray


class _Cluster:
    def __init__(self, **resources: float) -> None:
        self.resources = resources

    def cluster_resources(self) -> dict[str, float]:
        return self.resources


@pytest.mark.parametrize("resources,workers,want", [
    ({"CPU": 8.0}, 0, (0, 8)),  # one actor per CPU
    ({"CPU": 16.0, "GPU": 2.0}, 0, (2, 2)),  # one per GPU when there are GPUs
    ({"CPU": 8.0, "GPU": 1.0}, 3, (1, 3)),  # asked for: as asked
    ({}, 0, (0, 1)),  # a cluster that reports nothing still gets one
])
def test_the_actor_count_follows_the_cluster(resources, workers, want):
    assert _ray.actors(_Cluster(**resources), workers) == want


def test_without_ray_the_engines_error_is_raised(monkeypatch):
    class Missing(Exception):
        pass

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(Missing):
        _ray.connect(0, Missing)


def test_the_shipped_package_is_vizhooks_itself():
    import vizhooks

    assert _ray.PACKAGE == str(__import__("pathlib").Path(vizhooks.__file__).resolve().parent)


def test_overlapping_sessions_give_the_callers_ray_data_settings_back_after_the_last():
    """Review 2026-12-06: two sessions in two threads restored each other's saved settings, leaving Ray Data's
    progress bars off for good; the settings go back when the last block ends."""
    import logging
    from types import SimpleNamespace

    from vizhooks._ray import _Quiet

    quiet, context, logger = _Quiet(), SimpleNamespace(enable_progress_bars=True), logging.getLogger("ray.data")
    before = logger.level
    quiet.enter(context)
    quiet.enter(context)
    quiet.leave(context)
    assert context.enable_progress_bars is False and logger.level == logging.ERROR  # one block still runs
    quiet.leave(context)
    assert context.enable_progress_bars is True and logger.level == before
