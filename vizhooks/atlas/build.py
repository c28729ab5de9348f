"""Building an atlas: check the settings, resume a run, scan with an engine (``local`` here, ``ray`` in
:mod:`vizhooks.atlas.ray_engine`), checkpoint, and write the result (see :mod:`vizhooks.atlas.exemplars`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import torch

from vizhooks.atlas.receptive import receptive_fields
from vizhooks.atlas.scan import Buckets, Files, Prepare, as_list, fold, list_images
from vizhooks.atlas.state import (
    ENGINES,
    IMAGE_EXTENSIONS,
    AtlasError,
    Job,
    PartialAtlas,
    RateLine,
    check_rank,
    check_settings,
    trace_hw,
)
from vizhooks.atlas.store import Atlas, Progress, load_atlas, resume, write_atlas
from vizhooks.models.layers import resolve_layers
from vizhooks.models.registry import ModelBundle

__all__ = ["build_atlas", "check_engine"]


def _local_engine(job: Job, todo: list[str], state: PartialAtlas, *, workers: int, save: Callable[[], None],
                  checkpoint_every: int, on_batch: Callable[[int, PartialAtlas], object] | None,
                  progress: bool) -> None:
    """DataLoader workers decode and preprocess; this process batches by shape and runs the model."""
    loader = torch.utils.data.DataLoader(
        Files(job.root, todo, Prepare(job.bundle, job.size)), batch_size=job.batch, shuffle=False,
        num_workers=workers, collate_fn=as_list, persistent_workers=False)
    buckets, batches, line = Buckets(job.batch), 0, RateLine(len(todo), progress)
    handled = 0

    def fold_one(items: list[dict]) -> None:
        nonlocal batches
        fold(job, state, items)
        batches += 1
        if batches % checkpoint_every == 0:
            save()
        if on_batch is not None:
            on_batch(batches, state)
        line.update(handled)

    for chunk in loader:
        for item in chunk:
            handled += 1
            if item["error"] is not None:
                state.skipped[item["path"]] = item["error"]
                continue
            for ready in buckets.add(item):
                fold_one(ready)
    for ready in buckets.rest():
        fold_one(ready)
    line.finish()


def check_engine(engine: str) -> None:
    """Check an engine name before any work starts.

    Args:
        engine: one of ``ENGINES``.

    Raises:
        AtlasError: an unknown engine, or ``"ray"`` where Ray is not installed.

    Example:
        >>> check_engine("local")
    """
    if engine not in ENGINES:
        raise AtlasError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}.")
    if engine == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:  # found, not imported: importing Ray takes seconds
            raise AtlasError("The ray engine needs Ray: pip install -r requirements-scale.txt "
                             "(or pip install 'vizhooks[ray]'), or use the local engine.")


def build_atlas(
    folder: str | os.PathLike,
    bundle: ModelBundle,
    layers: str | Iterable[str],
    out: str | os.PathLike,
    *,
    top: int = 9,
    size: int = 224,
    engine: str = "local",
    batch: int = 32,
    workers: int = 0,
    checkpoint_every: int = 20,
    progress: bool = True,
    on_batch: Callable[[int, PartialAtlas], object] | None = None,
    rank: str = "activation",
    target: int | None = None,
) -> Atlas:
    """Find the top-``top`` images of ``folder`` for every channel of ``layers`` and write an atlas.

    Resumable: the state is saved to ``out/progress.npz`` and ``out/progress.log`` every
    ``checkpoint_every`` batches and when the run is interrupted (KeyboardInterrupt, a failed
    worker); calling again with the same settings continues where it stopped and gives the same
    atlas. Files added to the folder later are folded in by another call.

    Args:
        folder: a folder of images, read recursively (see :func:`list_images`).
        bundle: from :func:`vizhooks.load_model`.
        layers: qualified module names.
        out: the atlas folder (created).
        top: images kept per channel.
        size: shorter side of the model input, as on the page.
        engine: ``"local"``, or ``"ray"``: shards of files scanned by Ray actors, on the cluster of
            ``RAY_ADDRESS``, the Ray session already started in this process, or a local Ray started
            for the run (see :mod:`vizhooks.atlas.ray_engine`). Both give the same atlas.
        batch: images per forward pass (all of one input shape).
        workers: local: DataLoader worker processes that decode and preprocess (0: in this process);
            ray: actors, each holding the model (0: one per CPU, or per GPU where there are GPUs).
        checkpoint_every: save the state after this many batches (ray: after this many shards).
        progress: print a progress line (images/s, time left) on stderr.
        on_batch: called as ``on_batch(batches_done, state)`` after every batch (ray: every shard).
        rank: ``"activation"`` (each channel's peak) or ``"relevance"`` (RelMax: the channel's Taylor
            relevance for class ``target``, activation x gradient summed over its positions; the box
            is where that product is largest). The manifest's config says which (``rank``, ``target``).

    Returns:
        The finished :class:`Atlas`.

    Raises:
        AtlasError: no such folder, no images in it, bad settings, an engine that cannot run, or an
            ``out`` folder holding a run with other settings.
        UnknownLayerError: a layer the model lacks.
        KeyboardInterrupt: re-raised after the state is saved.

    Example:
        >>> atlas = build_atlas("photos", load_model("resnet18"), ["layer3.0.conv1"], "atlas", top=9)
        >>> atlas.top("layer3.0.conv1", 0)[0].path
        'cats/tabby.jpg'
    """
    root, out = Path(folder), Path(out)
    if not root.exists():
        raise AtlasError(f"There is no folder at {root}.")
    if not root.is_dir():
        raise AtlasError(f"{root} is a file; give the folder that holds the images.")
    check_engine(engine)
    check_settings(top, size, batch)
    check_rank(rank, target)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise AtlasError(f"workers must be 0 or more, not {workers!r}.")
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise AtlasError(f"checkpoint_every must be 1 or more, not {checkpoint_every!r}.")
    names = resolve_layers(bundle.model, layers)
    files = list_images(root, exclude=out)
    if not files:
        raise AtlasError(f"{root} holds no image files ({', '.join(IMAGE_EXTENSIONS)}).")

    config = {"model": bundle.name, "arch": bundle.arch, "weights": bundle.weights_source,
              "weights_status": bundle.weights_status, "size": size, "layers": names, "top": top,
              "folder": str(root.resolve())}
    if rank == "relevance":  # activation atlases keep the config they always had
        config |= {"rank": rank, "target": target}
    state = resume(out, config, names, top)
    handled = set(state.done) | set(state.skipped)
    todo = [f for f in files if f not in handled]
    job = Job(bundle, root, names, receptive_fields(bundle.model, names, trace_hw(bundle, size)), top, size, batch,
              rank, target)
    checkpoint = Progress(out, config, state)
    try:
        if engine == "ray":
            from vizhooks.atlas.ray_engine import run_ray

            run_ray(job, todo, state, workers=workers, save=checkpoint.save, checkpoint_every=checkpoint_every,
                    on_batch=on_batch, progress=progress)
        else:
            _local_engine(job, todo, state, workers=workers, save=checkpoint.save,
                          checkpoint_every=checkpoint_every, on_batch=on_batch, progress=progress)
    except BaseException:
        checkpoint.save()  # keep every finished batch; the same call again continues from here
        raise
    checkpoint.save()
    write_atlas(job, state, out, config)
    return load_atlas(out)
