"""Concepts (CRAFT): the activation pass against a bare batched forward to the layer, the whole
discovery, and peak memory as the crops grow.

- The activation pass (:func:`vizhooks.interpret.concepts.activations`: crops cut and resized,
  batches through ``hooked(stop_after=[layer])``, positive part averaged over positions) against a
  bare batched forward of the same crops, prepared the same way, through the model's modules up to
  the layer (an ``nn.Sequential`` of resnet50's stem and ``layer1`` .. ``layer3``, no hooks) under
  ``torch.inference_mode()``. Target: the pass keeps at least 0.8 x the bare forward's crops per second.
- The whole :func:`~vizhooks.interpret.concepts.discover` with ``k=10`` on the same 1,000 crops
  (pass + NMF). Target: at most 2 x the pass.
- Peak RSS of a fresh process running :func:`discover` over a folder of photos read one at a time,
  at 1,000 and 10,000 crops: bounded memory means the peak grows only by A (n_crops x C floats).

The photos are 256 x 256 JPEGs cut from the sample photos (seeded), written to a temporary folder.
Runs on CUDA when there is one (the machine section says which device), else on the CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import ROOT, Config, Result, Row, fmt_s, median, timed

LAYER, K, BATCH = "layer3", 10, 32


def write_photos(n: int) -> Path:
    """``n`` 256 x 256 JPEG photos cut from the sample photos (seeded), in a new temporary folder."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = Path(tempfile.mkdtemp(prefix="vizhooks-bench-concepts-"))
    photos = [Image.open(p).convert("RGB") for p in sorted((ROOT / "sample_images").glob("*.jpg"))]
    for i in range(n):
        photo = photos[i % len(photos)]
        side = min(photo.size)
        left = int(rng.integers(0, photo.width - side + 1))
        top = int(rng.integers(0, photo.height - side + 1))
        photo.crop((left, top, left + side, top + side)).resize((256, 256)).save(out / f"{i:05d}.jpg", quality=90)
    return out


def _peak(model: str, crops: int, per_image: int, size: int, device: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.concepts", "--model", model, "--crops", str(crops), "--per-image",
         str(per_image), "--size", str(size), "--device", device],
        cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"concepts memory case at {crops} crops failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(cfg: Config) -> Result:
    import numpy as np
    import torch
    from PIL import Image
    from torch import nn

    import vizhooks as vz
    from vizhooks.interpret.concepts import activations, crop_boxes, discover
    from vizhooks.models.images import to_tensor

    device = "cuda" if torch.cuda.is_available() else "cpu"
    name, size = ("resnet18", 64) if cfg.quick else ("resnet50", 224)
    photos_n, per_image = (4, 4) if cfg.quick else (125, 8)  # 1,000 crops
    repeat = 1 if cfg.quick else max(1, min(cfg.repeat, 3))
    crops = photos_n * per_image
    folder = write_photos(photos_n)
    try:
        bundle = vz.load_model(name, weights="none", device=device)
        paths = sorted(folder.glob("*.jpg"))
        m = bundle.model
        to_layer = nn.Sequential(m.conv1, m.bn1, m.relu, m.maxpool, m.layer1, m.layer2, m.layer3).eval()

        def bare() -> None:
            rng = np.random.default_rng(0)
            batch: list[torch.Tensor] = []
            for path in paths:
                image = vz.load_image(path)
                for box in crop_boxes(*image.size, per_image, 0.5, rng):
                    piece = image.crop(box).resize((size, size), Image.Resampling.BILINEAR, reducing_gap=3.0)
                    batch.append(to_tensor(piece, bundle.mean, bundle.std))
                    if len(batch) == BATCH:
                        with torch.inference_mode():
                            to_layer(torch.cat(batch).to(device))
                        batch = []
            if batch:
                with torch.inference_mode():
                    to_layer(torch.cat(batch).to(device))
            if device == "cuda":
                torch.cuda.synchronize()

        def pass_() -> None:
            activations(bundle, paths, LAYER, crops_per_image=per_image, size=size, batch_size=BATCH)

        def whole() -> None:
            discover(bundle, paths, LAYER, k=K, crops_per_image=per_image, size=size, batch_size=BATCH)

        bare(), pass_()  # warm-up
        t_bare, t_pass, t_whole = [], [], []
        for _ in range(repeat):
            t_bare.append(timed(bare))
            t_pass.append(timed(pass_))
            t_whole.append(timed(whole))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    mem_model, mem_size = (name, size) if device == "cuda" or cfg.quick else ("resnet18", 112)
    counts = (16, 64) if cfg.quick else (1_000, 10_000)
    peaks = {n: _peak(mem_model, n, 8, mem_size, device) for n in counts}
    bare_cps, pass_cps = crops / median(t_bare), crops / median(t_pass)
    ratio, whole_ratio = pass_cps / bare_cps, median(t_whole) / median(t_pass)
    small, large = (peaks[n] for n in counts)
    rows = [
        Row(bench="concepts", case=f"activation pass, {name} {LAYER}, {crops} crops of {size} px, batches of "
                                   f"{BATCH}, {device}",
            measured=f"pass {pass_cps:.1f} crops/s, bare forward to the layer {bare_cps:.1f} crops/s: {ratio:.2f} x",
            target="≥ 0.8 x", status="PASS" if ratio >= 0.8 else "MISS",
            numbers={"pass_cps": pass_cps, "bare_cps": bare_cps, "ratio": ratio}),
        Row(bench="concepts", case=f"discover end to end, k={K}, the same {crops} crops (pass + NMF)",
            measured=f"{fmt_s(median(t_whole))} against the pass's {fmt_s(median(t_pass))}: {whole_ratio:.2f} x",
            target="≤ 2 x", status="PASS" if whole_ratio <= 2 else "MISS",
            numbers={"whole_s": median(t_whole), "pass_s": median(t_pass), "ratio": whole_ratio}),
        Row(bench="concepts", case=f"peak RSS of discover, {mem_model} {LAYER} at {mem_size} px, photos read one at "
                                   f"a time, {counts[0]:,} and {counts[1]:,} crops",
            measured=f"{small['peak']:.0f} MiB and {large['peak']:.0f} MiB (model loaded: {small['model_peak']:.0f} "
                     f"and {large['model_peak']:.0f} MiB; A is {large['a_mib']:.1f} MiB at {counts[1]:,})",
            numbers={"peak_small_mib": small["peak"], "peak_large_mib": large["peak"],
                     "model_small_mib": small["model_peak"], "model_large_mib": large["model_peak"]}),
    ]
    details = [f"{repeat} measured rounds after one warm-up (bare, pass, discover in turn); decoding, cropping and "
               "resizing in this process for both.",
               f"- bare (s): {', '.join(f'{v:.3f}' for v in t_bare)}",
               f"- pass (s): {', '.join(f'{v:.3f}' for v in t_pass)}",
               f"- discover (s): {', '.join(f'{v:.3f}' for v in t_whole)}",
               f"- memory cases: {json.dumps(peaks)}"]
    return Result(rows=rows, details=details, profilers={rows[0].case: pass_, rows[1].case: whole})


def _memory_case(argv: list[str]) -> int:
    """One peak-RSS reading in this fresh process; prints one JSON line (MiB)."""
    p = argparse.ArgumentParser()
    p.add_argument("--model")
    p.add_argument("--crops", type=int)
    p.add_argument("--per-image", type=int)
    p.add_argument("--size", type=int)
    p.add_argument("--device")
    args = p.parse_args(argv)
    import vizhooks as vz
    from vizhooks.interpret.concepts import discover

    from .memory_case import peak_mib

    folder = write_photos(-(-args.crops // args.per_image))
    try:
        bundle = vz.load_model(args.model, weights="none", device=args.device)
        model_peak = peak_mib()
        found = discover(bundle, sorted(folder.glob("*.jpg")), LAYER, k=K, crops_per_image=args.per_image,
                         size=args.size, batch_size=BATCH)
        a_mib = found.coefficients.shape[0] * found.bank.shape[1] * 4 / 2**20
        print(json.dumps({"crops": len(found.crops), "model_peak": model_peak, "peak": peak_mib(), "a_mib": a_mib}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def main() -> int:
    if "--crops" in sys.argv:
        return _memory_case(sys.argv[1:])
    result = run(Config(repeat=1 if "--once" in sys.argv else 3, quick="--quick" in sys.argv, profile=False))
    for row in result.rows:
        print(f"{row.case}: {row.measured} [{row.status}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
