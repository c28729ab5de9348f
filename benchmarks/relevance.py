"""Channel relevance: Taylor, batched ablation, LRP and conditional heatmaps against what they replace.

Random weights (``weights="none"``), the sample photo, the CPU, 224 px (``--quick``: 32 px).

1. Taylor: ``channel_relevance(resnet50, x, "layer4", method="taylor")`` against one bare forward +
   backward of the same photo (the input carries requires_grad), alternately, medians.
   Target: <= 1.5 x.
2. Ablation of the 512 channels of resnet18 ``layer4.1.conv2`` in batches of 64 against 512 separate
   ``intervene`` calls (one channel switched off each; each call runs the plain and the edited pass).
   The ablation runs the photo once and grows the batch at the layer: only the layers after it run
   per channel.
   The 512 calls are estimated from the median of 16 (times 32): the full loop would take minutes.
   Target: >= 5 x faster.
3. Conditional heatmaps of 16 channels of resnet18 ``layer4.1`` in one batched call
   (``conditional_heatmaps``) against 16 ``conditional_heatmap`` calls. Target: >= 4 x faster. Each
   map needs its own LRP pass below the layer, so on a CPU, whose cores a single pass already keeps
   busy, the batch gains little; the target is a GPU's.
4. LRP: ``channel_relevance(resnet50, x, "layer4", method="lrp")`` (the private copy, the canonizer
   and Zennit's rules included) against one bare forward + backward. Target: <= 3 x.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.relevance [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import os
import sys

from .common import SAMPLE, Config, Result, Row, alternate, bench_main, fmt_s, fmt_samples, median, timed

SIZE = 224
ABLATION_LAYER, ABLATION_BATCH, INTERVENE_SAMPLE = "layer4.1.conv2", 64, 16
CONDITIONAL_LAYER, CONDITIONAL_CHANNELS = "layer4.1", 16


def run(cfg: Config) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.hooks.intervene import ChannelEdit, intervene
    from vizhooks.interpret.relevance import channel_relevance, conditional_heatmap, conditional_heatmaps
    from vizhooks.ops import hook_count

    size = 32 if cfg.quick else SIZE
    pairs = 1 if cfg.quick else max(3, cfg.repeat)
    r50 = vz.load_model("resnet50", weights="none", device="cpu")
    r18 = vz.load_model("resnet18", weights="none", device="cpu")
    image = vz.load_image(SAMPLE)
    x50, x18 = r50.preprocess(image, size), r18.preprocess(image, size)
    px = f"{size} px"
    rows: list[Row] = []
    profilers: dict[str, object] = {}
    details = [f"Random weights, {SAMPLE.name} at {px}, CPU, torch threads: {torch.get_num_threads()}.", ""]

    def forward_backward(model: torch.nn.Module, x: torch.Tensor) -> None:
        xg = x.clone().requires_grad_(True)
        out = model(xg)
        out[0, int(out[0].argmax())].backward()

    def ratio_row(number: str, case: str, fn, limit: float, what: str) -> None:
        base = lambda: forward_backward(r50.model, x50)  # noqa: E731
        t_fn, t_base = alternate(fn, base, pairs, warmup=1)
        mf, mb = median(t_fn), median(t_base)
        ratio = mf / mb
        rows.append(Row(bench="relevance", case=case,
                        measured=f"{what} {fmt_s(mf)}, forward + backward {fmt_s(mb)}: {ratio:.2f} x",
                        target=f"≤ {limit} x", status="PASS" if ratio <= limit else "MISS",
                        numbers={"seconds": mf, "forward_backward_s": mb, "ratio": ratio}))
        profilers[case] = fn
        details.extend([f"{number}. {pairs} measured pairs after one warm-up of each.",
                        f"- {what} (s): {fmt_samples(t_fn)}", f"- forward + backward (s): {fmt_samples(t_base)}",
                        f"- load average (1 min) after: {os.getloadavg()[0]:.2f}", ""])

    # 1. Taylor ------------------------------------------------------------------------------------
    ratio_row("1", f"Taylor channel relevance, resnet50 layer4 (2048 channels), {px}, vs one forward + backward",
              lambda: channel_relevance(r50, x50, "layer4", method="taylor"), 1.5, "Taylor")

    # 2. ablation ----------------------------------------------------------------------------------
    def ablation() -> object:
        return channel_relevance(r18, x18, ABLATION_LAYER, method="ablation", batch_size=ABLATION_BATCH)

    def one_intervene(c: int) -> object:
        return intervene(r18.model, x18, {ABLATION_LAYER: ChannelEdit(channels=[c])})

    ablation()
    one_intervene(0)
    sample = 2 if cfg.quick else INTERVENE_SAMPLE
    t_abl = [timed(ablation) for _ in range(1 if cfg.quick else min(pairs, 3))]
    t_one = [timed(lambda c=c: one_intervene(c)) for c in range(sample)]
    channels = 512
    ma, mi = median(t_abl), median(t_one) * channels
    speedup = mi / ma
    case2 = (f"ablation of {channels} channels, resnet18 {ABLATION_LAYER}, {px}, batches of {ABLATION_BATCH}, "
             f"vs {channels} intervene calls")
    rows.append(Row(bench="relevance", case=case2,
                    measured=f"ablation {fmt_s(ma)}, {channels} intervene calls {fmt_s(mi)} (estimated from "
                             f"{sample}): {speedup:.1f} x faster",
                    target="≥ 5 x faster", status="PASS" if speedup >= 5 else "MISS",
                    numbers={"ablation_s": ma, "intervene_512_s": mi, "speedup": speedup}))
    profilers[case2] = ablation
    details += ["2. ablation calls after one warm-up; intervene calls one per channel, the median times 512.",
                f"- ablation (s): {fmt_samples(t_abl)}", f"- one intervene call (s): {fmt_samples(t_one)}",
                f"- load average (1 min) after: {os.getloadavg()[0]:.2f}", ""]

    # 3. conditional heatmaps ------------------------------------------------------------------------
    count = 4 if cfg.quick else CONDITIONAL_CHANNELS

    def batched() -> object:
        return conditional_heatmaps(r18, x18, CONDITIONAL_LAYER, list(range(count)), batch_size=count)

    def singles() -> None:
        for c in range(count):
            conditional_heatmap(r18, x18, CONDITIONAL_LAYER, c)

    t_batch, t_single = alternate(batched, singles, 1 if cfg.quick else min(pairs, 3), warmup=1)
    mb, ms = median(t_batch), median(t_single)
    speedup3 = ms / mb
    case3 = (f"conditional heatmaps of {count} channels, resnet18 {CONDITIONAL_LAYER}, {px}: one batched call "
             f"vs {count} single calls")
    rows.append(Row(bench="relevance", case=case3,
                    measured=f"batched {fmt_s(mb)}, {count} single calls {fmt_s(ms)}: {speedup3:.1f} x faster",
                    target="≥ 4 x faster", status="PASS" if speedup3 >= 4 else "MISS",
                    numbers={"batched_s": mb, "singles_s": ms, "speedup": speedup3}))
    profilers[case3] = batched
    details += ["3. batched and single calls alternately after one warm-up of each.",
                f"- batched (s): {fmt_samples(t_batch)}", f"- {count} single calls (s): {fmt_samples(t_single)}",
                f"- load average (1 min) after: {os.getloadavg()[0]:.2f}", ""]

    # 4. LRP -----------------------------------------------------------------------------------------
    ratio_row("4", f"LRP channel relevance (EpsilonPlusFlat, ResNetCanonizer, private copy), resnet50 layer4, {px}, "
              "vs one forward + backward", lambda: channel_relevance(r50, x50, "layer4", method="lrp"), 3.0, "LRP")

    if hook_count(r50.model) or hook_count(r18.model):
        raise RuntimeError("channel relevance left hooks on a model")
    return Result(rows=rows, details=details, profilers=profilers)


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
