"""Activation patching: a sweep over every conv against one patch call per conv.

Random weights (``weights="none"``), two sample photos (the cat patched with the coffee cup), the
CPU, resnet18, both photos squashed to 224 x 224 px. ``vizhooks.hooks.patching.sweep(model, cat,
cup, convs)`` over the 20 Conv2d layers (the cup captured once with hooks on all 20, the cat once
for its shapes and the outputs every copy shares, then 20 patched copies of the cat in batches of 16, each
computed only after its conv) against 20 separate ``patch`` calls (each one: the cup, the cat, one patched
cat, which also starts at its conv), timed alternately, medians. Target: <= 0.3 x. ``--quick``: 64 px,
one pair.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.patching [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import os
import sys

from .common import ROOT, SAMPLE, Config, Result, Row, alternate, bench_main, fmt_s, fmt_samples, median

SIZE = 224
TARGET = 0.3
SOURCE = ROOT / "sample_images" / "coffee.jpg"


def run(cfg: Config) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.hooks.patching import patch, sweep
    from vizhooks.models.images import preprocess
    from vizhooks.models.layers import conv_layers
    from vizhooks.ops import hook_count

    size = 64 if cfg.quick else SIZE
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    model = bundle.model
    # both squashed to size x size: patching needs one shape at every layer
    x = preprocess(vz.load_image(SAMPLE).resize((size, size)), size)
    source = preprocess(vz.load_image(SOURCE).resize((size, size)), size)
    names = [layer.name for layer in conv_layers(model)]
    swept: list = []
    separate: list = []

    def batched() -> None:
        swept[:] = sweep(model, x, source, names)

    def one_by_one() -> None:
        separate[:] = [patch(model, x, source, name) for name in names]

    pairs = 1 if cfg.quick else max(3, cfg.repeat)
    t_sweep, t_sep = alternate(batched, one_by_one, pairs, warmup=1)
    if hook_count(model) != 0:
        raise RuntimeError("patching left hooks behind")
    gap = max(abs(a.restored - b.restored) for a, b in zip(swept, separate, strict=True))
    if not gap < 1e-3:
        raise RuntimeError(f"the sweep's restored fractions differ from separate patch calls by {gap}")
    m_sweep, m_sep = median(t_sweep), median(t_sep)
    ratio = m_sweep / m_sep
    case = f"resnet18 at {size} px, {len(names)} Conv2d: sweep vs {len(names)} separate patch calls"
    row = Row(bench="patching", case=case,
              measured=f"sweep {fmt_s(m_sweep)} vs separate {fmt_s(m_sep)}: {ratio:.2f} x",
              target=f"≤ {TARGET} x", status="PASS" if ratio <= TARGET else "MISS",
              numbers={"sweep_s": m_sweep, "separate_s": m_sep, "ratio": ratio})
    details = [f"{pairs} measured pairs (sweep, separate) after one warm-up pair; torch threads: "
               f"{torch.get_num_threads()}; largest difference of a restored fraction between the two: {gap:.2e}.",
               "",
               f"- sweep samples (s): {fmt_samples(t_sweep)}",
               f"- separate patch calls samples (s): {fmt_samples(t_sep)}",
               f"- load average (1 min) after: {os.getloadavg()[0]:.2f}"]
    return Result(rows=[row], details=details, profilers={case: batched})


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
