"""The ``ray`` engine of :func:`vizhooks.atlas.build_atlas`: the same map and merge on Ray.

Design: Ray core, not Ray Data. Each worker is a ``@ray.remote`` actor that receives the model once
(through the object store) and runs :func:`~vizhooks.atlas.exemplars.scan_paths` on one shard of
paths at a time; the driver hands shards to idle actors, gathers each :class:`PartialAtlas` as it
finishes (``ray.wait``), merges it with :meth:`PartialAtlas.merge` and checkpoints. A shard's result is
one Python object (a top-k per layer), not rows, so Ray Data's ``map_batches`` would only carry it
pickled in an object column; and the driver has to see every finished shard in turn anyway, to
checkpoint it. Ray is imported only inside :func:`run_ray`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .exemplars import AtlasError, PartialAtlas, _duration, _Job

SHARD_BATCHES = 4  # batches of work per shard: fewer round trips, fuller same-shape batches


class _Scanner:
    """One worker: holds the model and scans shards of paths with it."""

    def __init__(self, bundle, gpu: bool) -> None:
        import dataclasses

        import torch

        if gpu and torch.cuda.is_available():
            bundle = dataclasses.replace(bundle, model=bundle.model.to("cuda"), device=torch.device("cuda"))
        self.bundle = bundle

    def scan(self, root: str, paths: list[str], names: list[str], top: int, size: int, batch: int) -> PartialAtlas:
        from .exemplars import scan_paths

        return scan_paths(self.bundle, root, paths, names, top=top, size=size, batch=batch)


def _connect(workers: int):
    """``(ray, started_here)``: an existing session, the cluster of ``RAY_ADDRESS``, or a local Ray."""
    try:
        import ray
    except ImportError:
        raise AtlasError("The ray engine needs Ray: pip install -r requirements-scale.txt "
                         "(or pip install 'vizhooks[ray]').") from None
    if ray.is_initialized():  # the caller's session, with its own runtime environment
        return ray, False
    import vizhooks

    # the package travels with the job, so a cluster without vizhooks installed can run the actors
    env = {"py_modules": [str(Path(vizhooks.__file__).parent)]}
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, runtime_env=env, logging_level="WARNING")
    else:
        ray.init(num_cpus=workers or None, include_dashboard=False, runtime_env=env, logging_level="WARNING",
                 _node_ip_address="127.0.0.1")  # a Ray of this machine only
    return ray, True


def run_ray(job: _Job, todo: list[str], state: PartialAtlas, *, workers: int, save: Callable[[], None],
            checkpoint_every: int, on_batch: Callable[[int, PartialAtlas], object] | None, progress: bool) -> None:
    """Scan ``todo`` on Ray and merge every shard into ``state`` (in place, as the local engine does).

    ``workers`` actors (0: one per CPU of the cluster, at most one per shard), each with one CPU, or
    one GPU when the cluster has GPUs. Shards of ``SHARD_BATCHES * job.batch`` paths; the state is
    saved after every ``checkpoint_every`` merged shards, and ``on_batch(shards_done, state)`` is called
    after each.
    """
    if not todo:
        return
    ray, started_here = _connect(workers)
    actors: list = []
    try:
        size = SHARD_BATCHES * job.batch
        shards = [todo[i:i + size] for i in range(0, len(todo), size)]
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        count = workers or (gpus or max(1, int(resources.get("CPU", 1))))
        count = max(1, min(count, len(shards)))
        options: dict = {"num_cpus": 1}
        if gpus:
            options["num_gpus"] = 1
        scanner = ray.remote(_Scanner).options(**options)
        bundle = ray.put(job.bundle)
        actors = [scanner.remote(bundle, bool(gpus)) for _ in range(count)]
        args = (str(job.root), job.names, job.top, job.size, job.batch)
        pending, waiting, idle = {}, list(reversed(shards)), list(actors)
        merged, handled, started, shown = 0, 0, time.monotonic(), 0.0
        while waiting or pending:
            while waiting and idle:
                actor, shard = idle.pop(), waiting.pop()
                pending[actor.scan.remote(args[0], shard, *args[1:])] = (actor, len(shard))
            [ref], _ = ray.wait(list(pending), num_returns=1)
            actor, n = pending.pop(ref)
            idle.append(actor)
            part = ray.get(ref)
            whole = state.merge(part)  # checks the shards are disjoint and of the same layers
            state.tops = whole.tops
            state.done.extend(part.done)  # appended, not replaced: the checkpoint logs only what is new
            state.skipped.update(part.skipped)
            merged, handled = merged + 1, handled + n
            if merged % checkpoint_every == 0:
                save()
            if on_batch is not None:
                on_batch(merged, state)
            now = time.monotonic()
            if progress and now - shown >= 0.5:
                shown = now
                rate = handled / max(now - started, 1e-9)
                print(f"\r{handled}/{len(todo)} images, {rate:.1f} images/s, "
                      f"{_duration((len(todo) - handled) / rate)} left  ", end="", file=sys.stderr, flush=True)
        if progress:
            rate = len(todo) / max(time.monotonic() - started, 1e-9)
            print(f"\r{len(todo)}/{len(todo)} images, {rate:.1f} images/s, done.{' ' * 12}", file=sys.stderr)
    finally:
        for actor in actors:
            ray.kill(actor)
        if started_here:
            ray.shutdown()
