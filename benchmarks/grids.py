"""Benchmark 1: captured activations -> PNG bytes, vizhooks vs "the article's approach".

vizhooks: ``feature_grid`` (one mosaic image, one ``imshow``) + ``figure_to_png``.
Article: the pattern of the usual hooks tutorials: one pyplot figure, ``add_subplot(rows, cols,
i + 1)`` + ``imshow`` + ``axis('off')`` per channel, ``savefig`` to a BytesIO at dpi 100,
``plt.close(fig)``. For a fair fight the article's figure gets the same size in inches as ours
for the same layer and channel count, so both write PNGs of the same pixel size.
"""

from __future__ import annotations

import io
import math

from .common import SAMPLE, Config, Result, Row, alternate, fmt_s, fmt_samples, median, verdict

#: ours/article targets per channel count
TARGETS = {16: 0.10, 64: 0.06}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
    """The two ways to draw ``n`` channels of every layer, and where they leave their output."""
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

    return ours, article, sizes, ours_bytes, art_bytes


def run(cfg: Config) -> Result:
    import matplotlib

    matplotlib.use("Agg")
    import vizhooks as vz

    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = vz.preprocess(vz.load_image(SAMPLE), 224)
    acts = vz.capture(bundle.model, x, "all")
    if cfg.quick:  # smoke test: the smallest and the largest-channel layer only
        acts = {name: acts[name] for name in ("conv1", "layer4.1.conv2")}
    pairs = max(1, cfg.repeat)
    shape = "×".join(map(str, x.shape[-2:]))
    rows: list[Row] = []
    details = [
        f"Input: `sample_images/chelsea.jpg` at size 224 ({shape}), resnet18 with random weights, "
        f"{len(acts)} Conv2d layers; {pairs} measured A/B pair(s) after a warm-up; "
        "times are for all layers together.",
        "",
        "| channels/layer | vizhooks median | article median | ratio | vizhooks samples (s) | article samples (s) "
        "| PNG px (ours) | PNG KiB ours / article |",
        "|---|---|---|---|---|---|---|---|",
    ]
    profilers = {}
    for n in (16, 64):
        ours, article, sizes, ours_bytes, art_bytes = _contenders(vz, acts, n)
        ours()  # warm-up, and the figure sizes the article's figures copy
        first = next(iter(acts))
        article_png(acts[first][0, :n].numpy(), sizes[first])  # warm-up of pyplot (one layer)
        t_ours, t_art = alternate(ours, article, pairs, warmup=0)
        for name in acts:
            if not (ours_bytes[name].startswith(PNG_MAGIC) and art_bytes[name].startswith(PNG_MAGIC)):
                raise RuntimeError(f"{name}: a renderer did not produce a PNG")
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
        w_in, h_in = sizes[first]
        kib_o = sum(map(len, ours_bytes.values())) / 1024
        kib_a = sum(map(len, art_bytes.values())) / 1024
        details.append(
            f"| {n} | {fmt_s(m_ours)} ({1000 * m_ours / len(acts):.0f} ms/layer) "
            f"| {fmt_s(m_art)} ({1000 * m_art / len(acts):.0f} ms/layer) | {ratio:.3f} "
            f"| {fmt_samples(t_ours)} | {fmt_samples(t_art)} | {first}: {w_in * 100:.0f}×{h_in * 100:.0f} "
            f"| {kib_o:.0f} / {kib_a:.0f} |"
        )
        profilers[case] = ours
    return Result(rows=rows, details=details, profilers=profilers)
