"""The Overview view against the Feature maps view, for resnet18 at 224 px.

The overview: ``vizhooks.network.overview.overview`` (one pass, a hook on each of the 20 convs reducing its
output to 8 thumbnails) and ``render.overview_png`` (the whole picture with the top-5 strip). The
Feature maps view of the five default layers (conv1 and the first conv of each stage): the page's
``analyse`` (one pass capturing those layers, with the logits) and, per layer, ``grid_layout`` +
``palette_png`` for 16 channels, as the page draws them. Both from the sample photo, random
weights, the CPU; timed alternately, medians. Target: overview <= 1.5 x Feature maps.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.overview [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import sys

from .common import SAMPLE, Config, Result, Row, alternate, bench_main, fmt_s, fmt_samples, median

SIZE, K, TILE = 224, 8, 72


def run(cfg: Config) -> Result:
    import vizhooks as vz
    from vizhooks.analysis import analyse
    from vizhooks.models.layers import default_layers
    from vizhooks.network.overview import overview
    from vizhooks.render.figures import grid_layout, overview_png, palette_png

    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    photo = vz.load_image(SAMPLE)
    layers = default_layers(bundle.model, (SIZE, SIZE))
    x = bundle.preprocess(photo, SIZE)

    def whole() -> None:
        ov = overview(bundle.model, x, k=K, tile=TILE)
        probs = ov.logits[0].softmax(0).topk(5)
        overview_png(ov.rows, [(bundle.categories[int(i)], float(p)) for p, i in zip(probs.values, probs.indices,
                                                                                       strict=True)])

    def maps() -> None:
        analysis = analyse(bundle, photo, SIZE, layers, "output")
        for name in layers:
            palette_png(grid_layout(analysis.activations[name], channels=16, order="index", title=name))

    pairs = 1 if cfg.quick else max(3, 2 * cfg.repeat)
    t_whole, t_maps = alternate(whole, maps, pairs)
    mw, mm = median(t_whole), median(t_maps)
    ratio = mw / mm
    case = (f"overview (20 convs x {K} channels, one picture) vs the Feature maps view ({len(layers)} default layers, "
            f"16 channels each), resnet18 at {SIZE} px")
    row = Row(bench="overview", case=case, measured=f"overview {fmt_s(mw)}, feature maps {fmt_s(mm)}: {ratio:.2f} x",
              target="≤ 1.5 x", status="PASS" if ratio <= 1.5 else "MISS",
              numbers={"overview_s": mw, "maps_s": mm, "ratio": ratio})
    details = [f"{pairs} measured pairs after one warm-up pair; the Feature maps layers: {', '.join(layers)}.",
               f"- overview (s): {fmt_samples(t_whole)}", f"- feature maps (s): {fmt_samples(t_maps)}"]
    return Result(rows=[row], details=details, profilers={case: whole})


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
