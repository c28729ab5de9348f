"""Feature visualization: time per optimisation step, one channel at a time against 16 channels in
one batch (``vizhooks.atlas.visualize_channels``), resnet18 ``layer3.0.conv2`` at 64 and 128 px.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.featurevis [--repeat N] [--quick] [--device cuda]

A third row compares one single-channel step with one forward + backward of the network up to
the layer (a truncated copy written out here), at 128 px: the parameterisation and transforms
should cost little on top (target: at most 1.3 x).

"single" is ``visualize_channel`` for one channel; 16 of them cost 16 times that. "batched" is one
``visualize_channels`` call for 16 channels. The speed-up is per channel: 16 singles / one batch.
Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import sys

from .common import Config, Result, Row, fmt_s, fmt_samples, median, report, timed

LAYER = "layer3.0.conv2"
CHANNELS = 16
SIZES = (64, 128)


def run(cfg: Config, device: str = "cpu") -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.atlas import visualize_channel, visualize_channels
    from vizhooks.ops import hook_count

    bundle = vz.load_model("resnet18", weights="none", device=device)
    model = bundle.model
    steps = 2 if cfg.quick else 8
    repeat = 1 if cfg.quick else max(1, cfg.repeat)
    chans = list(range(CHANNELS))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    rows: list[Row] = []
    details = [f"{repeat} measured runs of {steps} steps each, after one warm-up run; device {device}; "
               f"torch threads: {torch.get_num_threads()}.", ""]
    for size in SIZES:
        def single(size=size):
            visualize_channel(model, LAYER, 0, size=size, steps=steps, mean=bundle.mean, std=bundle.std)
            sync()

        def batched(size=size):
            visualize_channels(model, LAYER, chans, size=size, steps=steps, mean=bundle.mean, std=bundle.std)
            sync()

        single(), batched()  # warm-up: allocator, oneDNN / cuDNN kernels for these shapes
        t_single = [timed(single) / steps for _ in range(repeat)]
        t_batch = [timed(batched) / steps for _ in range(repeat)]
        s1, sb = median(t_single), median(t_batch)
        speedup = CHANNELS * s1 / sb
        rows.append(Row(
            bench="featurevis", case=f"resnet18 {LAYER} at {size} px, {CHANNELS} channels, {device}",
            measured=f"step: single {fmt_s(s1)}, batch of {CHANNELS} {fmt_s(sb)}; {speedup:.1f}x per channel",
            numbers={"single_step_s": s1, "batch_step_s": sb, "speedup": speedup},
            # the issue's target, at the functions' default size
            **({"target": "≥ 1.5 x", "status": "PASS" if speedup >= 1.5 else "MISS"} if size == 128 else {}),
        ))
        details += [f"- {size} px single step samples (s): {fmt_samples(t_single)}",
                    f"- {size} px batched step samples (s): {fmt_samples(t_batch)}"]
    # one step against a bare forward + backward of the network cut at the layer
    trunk = torch.nn.Sequential(model.conv1, model.bn1, model.relu, model.maxpool, model.layer1, model.layer2,
                                model.layer3[0].conv1, model.layer3[0].bn1, model.layer3[0].relu,
                                model.layer3[0].conv2)

    def bare_step():
        x = torch.rand(1, 3, 128, 128, device=device, requires_grad=True)
        trunk(x)[:, 0].mean().backward()
        sync()

    def one_step():
        visualize_channel(model, LAYER, 0, size=128, steps=steps, mean=bundle.mean, std=bundle.std)
        sync()

    with torch.enable_grad():
        bare_step(), one_step()
        t_bare = [timed(bare_step) for _ in range(repeat * 4)]
    t_one = [timed(one_step) / steps for _ in range(repeat)]
    ratio = median(t_one) / median(t_bare)
    rows.append(Row(
        bench="featurevis", case=f"one step vs forward + backward up to {LAYER}, 128 px, {device}",
        measured=f"step {fmt_s(median(t_one))}, bare {fmt_s(median(t_bare))}: {ratio:.2f} x",
        target="≤ 1.3 x", status="PASS" if ratio <= 1.3 else "MISS",
        numbers={"step_s": median(t_one), "bare_s": median(t_bare), "ratio": ratio},
    ))
    if hook_count(model) != 0:
        raise RuntimeError("feature visualization left hooks behind")
    return Result(rows=rows, details=details)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    result = run(Config(repeat=args.repeat, quick=args.quick, profile=False), device=args.device)
    report(result, status=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
