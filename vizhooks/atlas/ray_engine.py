"""The ``ray`` engine of :func:`vizhooks.atlas.build_atlas`: the same map and merge on Ray.

Design: Ray Data. A dataset of shard numbers goes through ``map_batches`` with a callable class, one
actor per worker, that receives the model once (through the object store) and runs
:func:`~vizhooks.atlas.scan.scan_paths` on each shard it is given; each shard's
:class:`PartialAtlas` comes back pickled in one column (it is one top-k object, not rows), and the
driver streams the results, merging each with :meth:`PartialAtlas.merge` and checkpointing as they
arrive. Ray is imported only inside :func:`run_ray`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vizhooks._ray import actors, pool, session
from vizhooks.atlas.scan import scan_paths
from vizhooks.atlas.state import AtlasError, Job, PartialAtlas, RateLine
from vizhooks.models.registry import ModelBundle

SHARD_BATCHES = 4  # batches of work per shard: fewer round trips, fuller same-shape batches


class _Scanner:
    """One worker: holds the model and scans shards of paths with it."""

    def __init__(self, bundle: ModelBundle, gpu: bool) -> None:
        import dataclasses

        import torch

        if gpu and torch.cuda.is_available():
            bundle = dataclasses.replace(bundle, model=bundle.model.to("cuda"), device=torch.device("cuda"))
        self.bundle = bundle

    def scan(self, root: str, paths: list[str], names: list[str], top: int, size: int, batch: int,
             rank: str = "activation", target: int | None = None) -> PartialAtlas:
        return scan_paths(self.bundle, root, paths, names, top=top, size=size, batch=batch, rank=rank, target=target)


def _no_ray() -> AtlasError:
    return AtlasError("The ray engine needs Ray: pip install -r requirements-scale.txt "
                      "(or pip install 'vizhooks[ray]').")


class _ShardScanner:
    """The callable class of Ray Data's ``map_batches``: one per worker, holding the model; each
    batch names shards by number and comes back as their pickled partial atlases."""

    def __init__(self, bundle_ref: Any, gpu: bool, shards: list[list[str]], args: tuple[Any, ...]) -> None:
        import ray

        self.scanner = _Scanner(ray.get(bundle_ref), gpu)
        self.shards, self.args = shards, args

    def __call__(self, batch: dict) -> dict:
        import pickle

        import numpy as np

        root, names, top, size, per_pass, rank, target = self.args
        parts = [pickle.dumps(self.scanner.scan(root, self.shards[int(i)], names, top, size, per_pass, rank, target))
                 for i in batch["shard"]]
        return {"part": np.array(parts, dtype=object)}


def _shards(todo: list[str], batch: int, workers: int) -> list[list[str]]:
    """``todo`` cut into shards of up to ``SHARD_BATCHES`` batches, but small enough that every
    worker gets at least two (a short folder on one shard would leave the other workers idle);
    never smaller than one batch unless the folder is."""
    per_worker = -(-len(todo) // (2 * workers))
    size = max(min(SHARD_BATCHES * batch, per_worker), min(batch, len(todo)), 1)
    return [todo[i:i + size] for i in range(0, len(todo), size)]


def run_ray(job: Job, todo: list[str], state: PartialAtlas, *, workers: int, save: Callable[[], None],
            checkpoint_every: int, on_batch: Callable[[int, PartialAtlas], object] | None, progress: bool) -> None:
    """Scan ``todo`` with Ray Data and merge every shard into ``state`` (in place, as the local engine
    does).

    A dataset of shard numbers goes through ``map_batches`` with a model actor per worker
    (``workers``; 0: one per GPU of the cluster, else one per CPU; ``num_gpus=1`` each when there are
    GPUs); results stream back to this process, which merges each shard as it arrives (any order
    gives the same atlas), saves after every ``checkpoint_every`` shards and calls
    ``on_batch(shards_done, state)`` after each. Shards as :func:`_shards` cuts them.
    """
    if not todo:
        return
    import pickle

    with session(workers, _no_ray) as ray:
        gpus, count = actors(ray, workers)
        shards = _shards(todo, job.batch, count)
        count = min(count, len(shards))
        args = (str(job.root), job.names, job.top, job.size, job.batch, job.rank, job.target)
        dataset = ray.data.from_items([{"shard": i} for i in range(len(shards))], override_num_blocks=len(shards))
        parts = dataset.map_batches(
            _ShardScanner, batch_size=1, **pool(ray, count), num_gpus=1 if gpus else 0,
            fn_constructor_kwargs={"bundle_ref": ray.put(job.bundle), "gpu": bool(gpus), "shards": shards,
                                   "args": args})
        merged, handled, line = 0, 0, RateLine(len(todo), progress)
        for batch in parts.iter_batches(batch_size=1, batch_format="numpy"):
            for blob in batch["part"]:
                part = pickle.loads(blob)
                whole = state.merge(part)  # checks the shards are disjoint and of the same layers
                state.tops = whole.tops
                state.done.extend(part.done)  # appended, not replaced: the checkpoint logs only what is new
                state.skipped.update(part.skipped)
                merged, handled = merged + 1, handled + len(part.done) + len(part.skipped)
                if merged % checkpoint_every == 0:
                    save()
                if on_batch is not None:
                    on_batch(merged, state)
                line.update(handled)
        line.finish()
