"""Where an atlas lives on disk: the checkpoint of a run (``progress.npz`` and ``progress.log``), the
finished index, crops and manifest, and :class:`Atlas` to read them (see :mod:`vizhooks.atlas.exemplars`)."""

from __future__ import annotations

import io
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vizhooks._version import __version__
from vizhooks.atlas.receptive import ReceptiveField
from vizhooks.atlas.state import (
    CROPS,
    FORMAT,
    INDEX,
    KEYS,
    LOG,
    MANIFEST,
    PROGRESS,
    AtlasError,
    Job,
    PartialAtlas,
    TopK,
)
from vizhooks.i18n import SettingNames
from vizhooks.models.images import load_image
from vizhooks.models.layers import UnknownLayerError
from vizhooks.render.export import write_atomic

__all__ = ["Atlas", "Exemplar", "Progress", "load_atlas", "read_log", "read_progress", "resume", "write_atlas"]


class Progress:
    """The checkpoint of a run: ``progress.npz`` holds every top-k and the settings, ``progress.log``
    one JSON line per finished or skipped file, only ever appended to (so a checkpoint costs what
    is new, not the whole list). The npz says how many log lines it covers; lines after that are
    from batches that were not saved and are dropped when the run continues."""

    def __init__(self, out: Path, config: dict, state: PartialAtlas) -> None:
        self.out, self.config, self.state = out, config, state
        self.logged = [len(state.done), len(state.skipped)]  # already in the log

    def save(self) -> None:
        state, (done, skipped) = self.state, self.logged
        lines = [json.dumps({"path": p}, ensure_ascii=False) for p in state.done[done:]]
        lines += [json.dumps({"path": p, "skipped": r}, ensure_ascii=False)
                  for p, r in itertools.islice(state.skipped.items(), skipped, None)]
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.out / LOG, "a", encoding="utf-8") as fh:
            fh.writelines(line + "\n" for line in lines)
            fh.flush()
            os.fsync(fh.fileno())  # on disk before the npz that counts these lines
        self.logged = [len(state.done), len(state.skipped)]
        meta = {"format": FORMAT, "config": self.config, "layers": list(state.tops), "lines": sum(self.logged)}
        arrays: dict[str, np.ndarray] = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
        for i, top in enumerate(state.tops.values()):
            for key, array in zip(KEYS, top.arrays(), strict=True):
                arrays[f"{i}.{key}"] = array
        buf = io.BytesIO()
        np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **arrays as its allow_pickle: bool
        write_atomic(self.out / PROGRESS, buf.getvalue())


def read_log(path: Path, lines: int) -> tuple[list[str], dict[str, str], int]:
    """The first ``lines`` records of a progress log: finished files, skipped files, their bytes."""
    done: list[str] = []
    skipped: dict[str, str] = {}
    size = 0
    with open(path, "rb") as fh:
        for _ in range(lines):
            raw = fh.readline()
            if not raw.endswith(b"\n"):
                raise ValueError("the log is shorter than the checkpoint")
            size += len(raw)
            record = json.loads(raw)
            if "skipped" in record:
                skipped[record["path"]] = record["skipped"]
            else:
                done.append(record["path"])
    return done, skipped, size


def read_progress(out: str | os.PathLike) -> tuple[PartialAtlas, dict] | None:
    """The saved state of a run in an atlas folder, finished or not.

    Args:
        out: the atlas folder of :func:`build_atlas`.

    Returns:
        ``(state, settings)``, or None when ``out`` holds no checkpoint.

    Raises:
        AtlasError: the checkpoint is damaged.

    Example:
        >>> state, config = read_progress("atlas/")
        >>> len(state.done), config["layers"]
    """
    path = Path(out) / PROGRESS
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            tops = {name: TopK(int(meta["config"]["top"]), *(data[f"{i}.{key}"] for key in KEYS))
                    for i, name in enumerate(meta["layers"])}
        done, skipped, _ = read_log(Path(out) / LOG, int(meta["lines"]))
    except Exception as exc:
        raise AtlasError(f"The checkpoint in {out} is damaged ({exc.__class__.__name__}); delete {path} and "
                         f"{Path(out) / LOG} to start the atlas again.") from None
    return PartialAtlas(tops, done, skipped), meta["config"]


def resume(out: Path, config: dict, names: list[str], top: int) -> PartialAtlas:
    """The saved state in ``out`` (the log cut back to what the checkpoint covers), or a new one."""
    saved = read_progress(out)
    if saved is None:
        (out / LOG).unlink(missing_ok=True)  # lines of a first checkpoint that never completed
        return PartialAtlas.empty(names, top)
    state, old = saved
    if old != config:
        keys = [*config, *(k for k in old if k not in config)]  # a setting only the saved atlas has (its rank) too
        changed = SettingNames(f"atlas_{k}" for k in keys if old.get(k) != config.get(k))
        raise AtlasError(code="atlas_settings", out=str(out), changed=changed, progress=str(out / PROGRESS),
                         log=str(out / LOG))
    lines = len(state.done) + len(state.skipped)
    with open(out / LOG, "r+b") as fh:  # drop lines written after the checkpoint
        fh.truncate(read_log(out / LOG, lines)[2])
    return state


# ----------------------------------------------------------------------------------------------
# writing and reading an atlas


def write_atlas(job: Job, state: PartialAtlas, out: Path, config: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list] = {k: [] for k in ("layer", "channel", "rank", "path", "score", "y", "x", "left",
                                                "top", "right", "bottom", "crop")}
    wanted: dict[str, list[tuple[str, tuple[int, int, int, int]]]] = {}
    for name, topk in state.tops.items():
        for channel in range(topk.channels):
            for rank, (path, score, y, x, box) in enumerate(topk.entries(channel)):
                crop = f"{CROPS}/{name}/{channel}_{rank}.jpg"
                for key, value in zip(columns, (name, channel, rank, path, score, y, x, *box, crop), strict=True):
                    columns[key].append(value)
                wanted.setdefault(path, []).append((crop, box))
    missing = _write_crops(job.root, out, wanted)
    columns["crop"] = ["" if c in missing else c for c in columns["crop"]]
    schema = pa.schema([("layer", pa.string()), ("channel", pa.int32()), ("rank", pa.int32()), ("path", pa.string()),
                        ("score", pa.float32()), ("y", pa.int32()), ("x", pa.int32()), ("left", pa.int32()),
                        ("top", pa.int32()), ("right", pa.int32()), ("bottom", pa.int32()), ("crop", pa.string())])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns, schema=schema), sink)
    write_atomic(out / INDEX, sink.getvalue().to_pybytes())
    manifest = {
        "model": config["model"], "arch": config["arch"], "weights": config["weights"],
        "weights_status": config["weights_status"], "size": config["size"], "top": config["top"],
        "folder": config["folder"], "images": len(state.done),
        "skipped": [{"path": p, "reason": r} for p, r in sorted(state.skipped.items())],
        "layers": [{"name": name, "channels": topk.channels, "receptive_field": _rf_json(job.rfs[name])}
                   for name, topk in state.tops.items()],
        "vizhooks": __version__,
    }
    if job.rank == "relevance":  # which ranking the atlas holds; an activation atlas's manifest is as before
        manifest |= {"rank": job.rank, "target": job.target}
    write_atomic(out / MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())


def _rf_json(rf: ReceptiveField | None) -> dict | None:
    return None if rf is None else {"size": list(rf.size), "jump": list(rf.jump), "start": list(rf.start)}


def _write_crops(root: Path, out: Path, wanted: dict[str, list[tuple[str, tuple[int, int, int, int]]]]) -> set[str]:
    """Cut every crop, reading each image once; returns the crops whose image could not be read."""
    missing: set[str] = set()
    for path, crops in wanted.items():
        try:
            image = load_image(root / path)
        except Exception:  # gone or changed since it was scanned: the row stays, without a crop
            missing.update(c for c, _ in crops)
            continue
        for crop, box in crops:
            target = out / crop
            target.parent.mkdir(parents=True, exist_ok=True)
            image.crop(box).save(target, "JPEG", quality=90)
    return missing


@dataclass(frozen=True)
class Exemplar:
    """One image that makes a channel fire.

    Attributes:
        path: the image, relative to the atlas's folder (POSIX separators).
        score: the channel's maximum over its map.
        y, x: where that maximum is in the layer's map.
        box: ``(left, top, right, bottom)`` the maximum's receptive field covers, in the original
            image's pixels, clipped to the image (right and bottom excluded).
        crop: the JPEG of that box, or None when the image could not be read at writing time.
    """

    path: str
    score: float
    y: int
    x: int
    box: tuple[int, int, int, int]
    crop: Path | None


class Atlas:
    """A finished atlas folder (see :func:`load_atlas`).

    Attributes:
        path: the atlas folder.
        manifest: the contents of ``manifest.json``.
    """

    def __init__(self, path: Path, manifest: dict, rows: dict[str, list]) -> None:
        self.path = path
        self.manifest = manifest
        self._channels = {layer["name"]: int(layer["channels"]) for layer in manifest["layers"]}
        self._rows: dict[tuple[str, int], list[Exemplar]] = {}
        for i in np.lexsort((rows["rank"], rows["channel"])):
            crop = rows["crop"][i]
            self._rows.setdefault((rows["layer"][i], int(rows["channel"][i])), []).append(Exemplar(
                rows["path"][i], float(rows["score"][i]), int(rows["y"][i]), int(rows["x"][i]),
                (int(rows["left"][i]), int(rows["top"][i]), int(rows["right"][i]), int(rows["bottom"][i])),
                path / crop if crop else None))

    @property
    def layers(self) -> list[str]:
        """The layers, in the order they were asked for."""
        return list(self._channels)

    @property
    def model(self) -> str:
        """The model's name, e.g. ``"resnet18"``."""
        return str(self.manifest["model"])

    def channels(self, layer: str) -> int:
        """Number of channels of ``layer``.

        Raises:
            UnknownLayerError (a KeyError): a layer not in the atlas.

        Example:
            >>> load_atlas("atlas").channels("layer3.0.conv1")
            256
        """
        self._check_layer(layer)
        return self._channels[layer]

    def top(self, layer: str, channel: int) -> list[Exemplar]:
        """The exemplars of one channel, best first.

        Args:
            layer: one of :attr:`layers`.
            channel: from 0 to ``channels(layer) - 1``.

        Returns:
            Up to ``top`` :class:`Exemplar` (fewer when the folder had fewer images).

        Raises:
            UnknownLayerError (a KeyError): a layer not in the atlas.
            IndexError: no such channel.

        Example:
            >>> load_atlas("atlas").top("layer3.0.conv1", 5)[0].score
        """
        self._check_layer(layer)
        if isinstance(channel, bool) or not isinstance(channel, (int, np.integer)) or not (
                0 <= channel < self._channels[layer]):
            raise IndexError(f"{layer} has channels 0 to {self._channels[layer] - 1}, not {channel!r}.")
        return list(self._rows.get((layer, int(channel)), []))

    def _check_layer(self, layer: str) -> None:
        if layer not in self._channels:
            raise UnknownLayerError(f"The atlas has no layer {layer!r}; it has {', '.join(self._channels)}.")

    def __repr__(self) -> str:
        return f"Atlas({str(self.path)!r}, model={self.model!r}, layers={self.layers!r})"


def load_atlas(path: str | os.PathLike) -> Atlas:
    """Open an atlas folder written by :func:`build_atlas` (or ``python -m vizhooks exemplars``).

    Args:
        path: the atlas folder.

    Returns:
        An :class:`Atlas`: ``atlas.layers``, ``atlas.model``, ``atlas.top(layer, channel)``.

    Raises:
        AtlasError: not a folder, not a finished atlas, or a damaged one; one sentence saying so.

    Example:
        >>> atlas = load_atlas("atlas/")
        >>> [e.path for e in atlas.top("layer3.0.conv1", 0)]
        ['cats/tabby.jpg', 'dogs/pug.png', 'cats/tom.jpg']
    """
    path = Path(path)
    if not path.is_dir():
        raise AtlasError(f"There is no atlas folder at {path}; make one with `python -m vizhooks exemplars FOLDER "
                         f"--out {path}`.")
    manifest_path, index_path = path / MANIFEST, path / INDEX
    if not manifest_path.is_file() or not index_path.is_file():
        unfinished = (path / PROGRESS).is_file()
        raise AtlasError(f"{path} is an unfinished atlas; run the same exemplars command again to finish it."
                         if unfinished else f"{path} is not an atlas folder (it has no {MANIFEST} and {INDEX}).")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        int(manifest["layers"][0]["channels"]), str(manifest["model"])  # noqa: B018 - the fields an Atlas needs
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise AtlasError(f"{manifest_path} is damaged ({exc.__class__.__name__}).") from None
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(index_path)
        rows = {name: table.column(name).to_pylist() for name in
                ("layer", "channel", "rank", "path", "score", "y", "x", "left", "top", "right", "bottom", "crop")}
    except Exception as exc:
        raise AtlasError(f"{index_path} is damaged ({exc.__class__.__name__}).") from None
    return Atlas(path, manifest, rows)
