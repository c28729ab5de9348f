"""Explanation scores: deletion and insertion of one map, and Score-CAM's masked batches.

Random weights (``weights="none"``), the sample photo, the CPU, resnet18 at 224 px.

1. Deletion + insertion: ``vizhooks.interpret.faithfulness.deletion_insertion(bundle, x, target, cam,
   steps=20, baseline="blur")`` (40 masked images in batches of 16, the blur and the ranking
   included) for a Grad-CAM map of ``layer4`` made beforehand (the method's cost is not the
   score's). Beside it, a bare forward of the same 40 images, made beforehand, in the same batches
   under ``torch.inference_mode``: what the model alone costs. Medians. Target: <= 5 s.
2. Score-CAM: ``vizhooks.interpret.methods.explain(bundle, x, target, methods=["scorecam"],
   layers=["layer4"], batch_size=B)`` against its batch count (512 channels / B) times one bare
   forward of B images, timed alternately, medians. Target: <= 1.0 x (the masks, their
   upsampling and the photo's own forward must cost next to nothing). ``--quick``: 48 px,
   batches of 256, one repetition.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.explain [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import math
import os
import sys

from .common import SAMPLE, Config, Result, Row, alternate, bench_main, fmt_s, fmt_samples, median, timed

SIZE, STEPS, BATCH = 224, 20, 16
LAYER = "layer4"
SCORECAM_BATCH = 64


def run(cfg: Config) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.interpret.faithfulness import baseline_image, deletion_insertion
    from vizhooks.interpret.methods import explain
    from vizhooks.ops import hook_count

    size = 48 if cfg.quick else SIZE
    repeats = 1 if cfg.quick else max(3, cfg.repeat)
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    model = bundle.model
    x = bundle.preprocess(vz.load_image(SAMPLE), size)
    with torch.inference_mode():
        target = int(model(x).argmax())
    cam = vz.grad_cam(model, x, LAYER, target=target)
    if not isinstance(cam, torch.Tensor):
        raise TypeError("grad_cam gave no map")
    rows: list[Row] = []
    profilers: dict[str, object] = {}
    px = f"{size} px ({x.shape[-2]} x {x.shape[-1]})"
    details = [f"resnet18 (random weights), {SAMPLE.name} at {px}, CPU, torch threads: "
               f"{torch.get_num_threads()}; class {target} (the top-1).", ""]

    # 1. deletion + insertion --------------------------------------------------------------------
    n = x.shape[-2] * x.shape[-1]
    order = torch.argsort(cam.flatten(), descending=True, stable=True)
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(n)
    ranks = ranks.view_as(cam)
    base = baseline_image(x, "blur")
    images = [x, base]
    for inverted in (False, True):
        for k in range(1, STEPS):
            replaced = (ranks < k * n // STEPS) ^ inverted
            images.append(torch.where(replaced, base, x))
    stack = torch.cat(images)

    def scores() -> object:
        return deletion_insertion(bundle, x, target, cam, steps=STEPS, baseline="blur", batch_size=BATCH)

    def bare() -> None:
        with torch.inference_mode():
            for start in range(0, len(stack), BATCH):
                model(stack[start:start + BATCH])

    scores()  # warm-up
    t_scores, t_bare = alternate(scores, bare, repeats, warmup=1)
    ms, mb = median(t_scores), median(t_bare)
    if hook_count(model) != 0:
        raise RuntimeError("deletion_insertion left hooks on the model")
    case1 = (f"deletion + insertion of one map (Grad-CAM {LAYER}), resnet18, {px}, {STEPS} steps, "
             f"blur baseline, batches of {BATCH}")
    rows.append(Row(bench="explain", case=case1,
                    measured=f"{fmt_s(ms)} ({len(stack)} masked images; their bare forward alone {fmt_s(mb)}, "
                             f"{ms / mb:.2f} x)",
                    target="≤ 5 s", status="PASS" if ms <= 5.0 else "MISS",
                    numbers={"seconds": ms, "bare_forward_s": mb, "ratio": ms / mb}))
    profilers[case1] = scores
    details += [f"1. {repeats} measured pairs (scores, bare forward of the same {len(stack)} images made "
                "beforehand) after one warm-up of each.",
                f"- deletion_insertion (s): {fmt_samples(t_scores)}",
                f"- bare forward (s): {fmt_samples(t_bare)}",
                f"- load average (1 min) after: {os.getloadavg()[0]:.2f}", ""]

    # 2. Score-CAM against its batch count x one batched forward ----------------------------------
    channels = int(vz.capture(model, x, [LAYER])[LAYER].shape[1])
    batch = 256 if cfg.quick else SCORECAM_BATCH
    batches = math.ceil(channels / batch)
    masks = x.expand(batch, -1, -1, -1).contiguous()

    def scorecam() -> object:
        return explain(bundle, x, target, methods=["scorecam"], layers=[LAYER], batch_size=batch)

    def one_forward() -> None:
        with torch.inference_mode():
            model(masks)

    scorecam()  # warm-up
    one_forward()
    pairs = 1 if cfg.quick else max(1, min(cfg.repeat, 3))
    forwards = 1 if cfg.quick else 3
    t_cam: list[float] = []
    t_fwd: list[float] = []
    for _ in range(pairs):
        t_cam.append(timed(scorecam))
        t_fwd.append(median([timed(one_forward) for _ in range(forwards)]))
    if hook_count(model) != 0:
        raise RuntimeError("Score-CAM left hooks on the model")
    mc, mf = median(t_cam), median(t_fwd)
    budget = batches * mf
    ratio = mc / budget
    case2 = (f"Score-CAM ({LAYER}, {channels} channels, batch_size={batch}: {batches} batches) vs {batches} x one "
             f"forward of {batch} images, resnet18, {px}")
    rows.append(Row(bench="explain", case=case2,
                    measured=f"Score-CAM {fmt_s(mc)}, {batches} x one batched forward {fmt_s(budget)} "
                             f"({fmt_s(mf)} each): {ratio:.2f} x",
                    target="≤ 1.0 x", status="PASS" if ratio <= 1.0 else "MISS",
                    numbers={"scorecam_s": mc, "batched_forward_s": mf, "budget_s": budget, "ratio": ratio}))
    profilers[case2] = scorecam
    details += [f"2. {pairs} measured Score-CAM calls, each followed by the median of {forwards} bare forwards of "
                f"{batch} images (the photo repeated, under inference_mode), after one warm-up of each.",
                f"- Score-CAM (s): {fmt_samples(t_cam)}",
                f"- one batched forward (s): {fmt_samples(t_fwd)}",
                f"- load average (1 min) after: {os.getloadavg()[0]:.2f}"]
    return Result(rows=rows, details=details, profilers=profilers)


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
