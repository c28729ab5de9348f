"""Benchmark 1: captured activations -> PNG bytes, vizhooks vs "the article's approach".

vizhooks: ``feature_grid`` (one mosaic image, one ``imshow``) + ``figure_to_png``.
The library user's way: ``feature_grid(...).savefig("<layer>.png")`` with matplotlib's defaults
(README's example), to files in a temporary folder; timed interleaved with the other two.
Article: the pattern of the usual hooks tutorials: one pyplot figure, ``add_subplot(rows, cols,
i + 1)`` + ``imshow`` + ``axis('off')`` per channel, ``savefig`` to a BytesIO at dpi 100,
``plt.close(fig)``. For a fair fight the article's figure gets the same size in inches as ours
for the same layer and channel count, so both write PNGs of the same pixel size.
"""

from __future__ import annotations

import functools
import io
import math
import tempfile
from pathlib import Path

from .common import SAMPLE, Config, Result, Row, fmt_s, fmt_samples, median, timed, verdict

#: ours/article targets per channel count
TARGETS = {16: 0.10, 64: 0.06}
#: savefig("x.png")/article targets per channel count (the library user's way, issue 13)
SAVEFIG_TARGETS = {16: 0.10}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; raises if ``data`` is not a PNG."""
    if not data.startswith(PNG_MAGIC) or data[12:16] != b"IHDR":
        raise RuntimeError("not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def interleave(fns: list, reps: int) -> list[list[float]]:
    """Time each of ``fns`` once per round (A B C, B C A, C A B, ...) so drift in machine load
    hits all alike, and none always runs right after the same one (the article's pyplot run
    leaves garbage and cold caches behind). Returns the samples of each, in ``fns`` order."""
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(reps):
        for j in range(len(fns)):
            i = (r + j) % len(fns)
            samples[i].append(timed(fns[i]))
    return samples


def article_png(channels, figsize: tuple[float, float], cmap: str = "viridis") -> bytes:
    """One layer the tutorial way: a subplot per channel. ``channels``: (C, H, W) array."""
    import matplotlib.pyplot as plt

    n = channels.shape[0]
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    fig = plt.figure(figsize=figsize)
    for i in range(n):
        ax = fig.add_subplot(rows, cols, i + 1)
        ax.imshow(channels[i], cmap=cmap)
        ax.axis("off")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _contenders(vz, acts: dict, n: int):
    """The three ways to draw ``n`` channels of every layer, and where they leave their output
    (``saved`` writes into the folder it is given)."""
    layers = {name: t[0, :n].numpy() for name, t in acts.items()}
    sizes: dict[str, tuple[float, float]] = {}
    ours_bytes: dict[str, bytes] = {}
    art_bytes: dict[str, bytes] = {}

    def ours():
        for name, act in acts.items():
            fig = vz.feature_grid(act, channels=n, title=name)
            sizes[name] = tuple(float(v) for v in fig.get_size_inches())
            ours_bytes[name] = vz.figure_to_png(fig)

    def article():
        for name, chans in layers.items():
            art_bytes[name] = article_png(chans, sizes[name])

    def saved(folder: Path):
        for name, act in acts.items():
            vz.feature_grid(act, channels=n, title=name).savefig(folder / f"{name}.png")

    return ours, article, saved, sizes, ours_bytes, art_bytes


def _in_temp_folder(fn) -> None:
    """``fn(folder)`` with a fresh temporary folder, removed afterwards (for the profiler, which
    runs after the measured folder is gone)."""
    with tempfile.TemporaryDirectory(prefix="vizhooks-bench-grids-") as folder:
        fn(Path(folder))


def run(cfg: Config) -> Result:
    import matplotlib

    matplotlib.use("Agg")
    import vizhooks as vz
    from vizhooks.models.images import preprocess

    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = preprocess(vz.load_image(SAMPLE), 224)
    acts = vz.capture(bundle.model, x, "all")
    if cfg.quick:  # smoke test: the smallest and the largest-channel layer only
        acts = {name: acts[name] for name in ("conv1", "layer4.1.conv2")}
    pairs = max(1, cfg.repeat)
    shape = "×".join(map(str, x.shape[-2:]))
    rows: list[Row] = []
    details = [
        f"Input: `sample_images/chelsea.jpg` at size 224 ({shape}), resnet18 with random weights, "
        f"{len(acts)} Conv2d layers; {pairs} measured rounds after a warm-up, each round timing "
        "vizhooks, the article and (where a target is set) `savefig(\"<layer>.png\")` once, "
        "in an order rotated from round to round; "
        "times are for all layers together.",
        "",
        "| channels/layer | vizhooks median | article median | ratio | savefig(\"x.png\") median | ratio "
        "| vizhooks samples (s) | article samples (s) | savefig samples (s) | PNG px (ours) "
        "| PNG KiB ours / article |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    profilers = {}
    for n in (16, 64):
        ours, article, saved, sizes, ours_bytes, art_bytes = _contenders(vz, acts, n)
        with_savefig = n in SAVEFIG_TARGETS
        with tempfile.TemporaryDirectory(prefix="vizhooks-bench-grids-") as tmp:
            folder = Path(tmp)
            ours()  # warm-up, and the figure sizes the article's figures copy
            first = next(iter(acts))
            article_png(acts[first][0, :n].numpy(), sizes[first])  # warm-up of pyplot (one layer)
            contenders = [ours, article]
            if with_savefig:
                saved(folder)
                contenders.append(functools.partial(saved, folder))
            samples = interleave(contenders, pairs)
            t_ours, t_art = samples[:2]
            for name in acts:
                if not (ours_bytes[name].startswith(PNG_MAGIC) and art_bytes[name].startswith(PNG_MAGIC)):
                    raise RuntimeError(f"{name}: a renderer did not produce a PNG")
                if with_savefig and png_size((folder / f"{name}.png").read_bytes()) != png_size(ours_bytes[name]):
                    raise RuntimeError(f"{name}: savefig wrote a PNG of another size than figure_to_png")
        m_ours, m_art = median(t_ours), median(t_art)
        ratio = m_ours / m_art
        case = f"resnet18, {len(acts)} Conv2d at 224, {n} channels/layer"
        rows.append(Row(
            bench="grids", case=case,
            measured=f"ours {fmt_s(m_ours)} vs article {fmt_s(m_art)}: ratio {ratio:.3f}",
            target=f"ratio ≤ {TARGETS[n]:.2f}", status=verdict(ratio, TARGETS[n]),
            numbers={"ours_s": m_ours, "article_s": m_art, "ratio": ratio,
                     "ours_ms_per_layer": 1000 * m_ours / len(acts), "article_ms_per_layer": 1000 * m_art / len(acts)},
        ))
        profilers[case] = ours
        save_median = save_ratio_cell = save_samples = "—"
        if with_savefig:
            t_save = samples[2]
            m_save = median(t_save)
            save_ratio = m_save / m_art
            save_case = f"{case}, the user's `fig.savefig(\"x.png\")`"
            rows.append(Row(
                bench="grids", case=save_case,
                measured=f"savefig {fmt_s(m_save)} vs article {fmt_s(m_art)}: ratio {save_ratio:.3f} "
                         f"(figure_to_png {fmt_s(m_ours)})",
                target=f"ratio ≤ {SAVEFIG_TARGETS[n]:.2f}", status=verdict(save_ratio, SAVEFIG_TARGETS[n]),
                numbers={"savefig_s": m_save, "article_s": m_art, "ratio": save_ratio,
                         "savefig_over_ours": m_save / m_ours},
            ))
            profilers[save_case] = functools.partial(_in_temp_folder, saved)
            save_median, save_ratio_cell, save_samples = fmt_s(m_save), f"{save_ratio:.3f}", fmt_samples(t_save)
        w_in, h_in = sizes[first]
        kib_o = sum(map(len, ours_bytes.values())) / 1024
        kib_a = sum(map(len, art_bytes.values())) / 1024
        details.append(
            f"| {n} | {fmt_s(m_ours)} ({1000 * m_ours / len(acts):.0f} ms/layer) "
            f"| {fmt_s(m_art)} ({1000 * m_art / len(acts):.0f} ms/layer) | {ratio:.3f} "
            f"| {save_median} | {save_ratio_cell} | {fmt_samples(t_ours)} | {fmt_samples(t_art)} | {save_samples} "
            f"| {first}: {w_in * 100:.0f}×{h_in * 100:.0f} "
            f"| {kib_o:.0f} / {kib_a:.0f} |"
        )
    return Result(rows=rows, details=details, profilers=profilers)
