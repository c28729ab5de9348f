"""The folder audit: throughput against a bare batched forward + backward, and memory as the folder grows.

- Throughput: :func:`vizhooks.interpret.audit.audit` (Grad-CAM, batches of 32, SpRAy included) over a
  folder of photos against a bare loop over the same files: decode, preprocess, one forward and one
  backward of the top-1 logits per batch, no hooks. Target: at least 0.7 x the bare pictures per second
  (the maps are one backward per batch, not per picture).
- Memory: the Python heap's peak (``tracemalloc``: every numpy array and Python object; torch's own CPU
  allocations are not traced, and they are one batch's at a time) of an audit with a store (the maps on
  disk) at two folder sizes (above :data:`~vizhooks.interpret.audit.SPRAY_LIMIT` a class, after a warm-up
  audit that does the imports), a tiny model at 32 px so the folder, not the model, is measured. The
  growth per picture, fitted through the two, extrapolates the peak to 100,000 pictures. Target: at most
  256 MiB there. The same audit without a store (maps in memory) is reported beside.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import tracemalloc
from pathlib import Path

from .common import Config, Result, Row, median, timed

BATCH = 32
FAR = 100_000


def write_folder(n: int, side: int) -> Path:
    """``n`` noisy PNG pictures with a coloured square at a random place, in two class folders (seeded)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = Path(tempfile.mkdtemp(prefix="vizhooks-bench-audit-"))
    for name in ("0", "1"):
        (out / name).mkdir()
    for i in range(n):
        arr = rng.integers(90, 160, (side, side, 3), dtype=np.uint8)
        s = side // 4
        top, left = (int(v) for v in rng.integers(0, side - s, 2))
        arr[top:top + s, left:left + s] = (220, 40, 40) if i % 2 else (40, 200, 40)
        Image.fromarray(arr).save(out / str(i % 2) / f"{i:06d}.png")
    return out


def tiny():
    """A conv + ReLU + pool + linear model with two classes (random weights; seeded)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("features", nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()))
    model.add_module("pool", nn.AdaptiveAvgPool2d(1))
    model.add_module("flat", nn.Flatten())
    model.add_module("head", nn.Linear(8, 2))
    model.categories = ["0", "1"]
    model.mean_std = ((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    return model.eval()


def heap_peak(n: int, store: bool) -> float:
    """The tracemalloc peak (MiB) of auditing ``n`` 32 px pictures with the tiny model."""
    from vizhooks.interpret.audit import audit

    folder = write_folder(n, 32)
    work = Path(tempfile.mkdtemp(prefix="vizhooks-bench-audit-store-"))
    try:
        model = tiny()
        tracemalloc.start()
        found = audit(model, folder, layer="features", size=32, batch_size=BATCH, clusters=2,
                      store=work / "s" if store else None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(found.predictions) == n
        return peak / 2**20
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def run(cfg: Config) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.interpret.audit import audit
    from vizhooks.models.images import load_image

    device = "cuda" if torch.cuda.is_available() else "cpu"
    name, size, n = ("resnet18", 64, 4) if cfg.quick else ("resnet18", 224, 128)
    repeat = 1 if cfg.quick else max(1, min(cfg.repeat, 3))
    folder = write_folder(n, 256)
    try:
        bundle = vz.load_model(name, weights="none", device=device)
        files = sorted(folder.rglob("*.png"))

        def bare() -> None:
            for start in range(0, len(files), BATCH):
                x = torch.cat([bundle.preprocess(load_image(p), size) for p in files[start:start + BATCH]])
                x = x.to(device).requires_grad_(True)
                logits = bundle.model(x)
                torch.autograd.grad(logits.gather(1, logits.argmax(1, keepdim=True)).sum(), x)
            if device == "cuda":
                torch.cuda.synchronize()

        def audited() -> None:
            audit(bundle, folder, size=size, batch_size=BATCH, clusters=2)

        bare(), audited()  # warm-up
        t_bare, t_audit = [], []
        for _ in range(repeat):
            t_bare.append(timed(bare))
            t_audit.append(timed(audited))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # SpRAy works on its sample of each class from 4,000 pictures on; still, the heap grows faster up to 10,000
    # pictures than beyond (5,000 -> 10,000: 2,700 bytes a picture; 10,000 -> 20,000: 1,230; measured to
    # 100,000: 1,075), so the line starts at 10,000
    counts = (16, 48) if cfg.quick else (10_000, 20_000)
    heap_peak(16, True)  # warm-up: the first audit of a process imports scikit-learn and scipy (traced too)
    stored = {c: heap_peak(c, True) for c in counts}
    in_memory = {c: heap_peak(c, False) for c in counts}
    small, large = counts

    def far(peaks: dict[int, float]) -> tuple[float, float]:
        per = (peaks[large] - peaks[small]) / (large - small)
        return per * 2**20, peaks[large] + per * (FAR - large)

    per_stored, far_stored = far(stored)
    per_memory, far_memory = far(in_memory)
    bare_pps, audit_pps = n / median(t_bare), n / median(t_audit)
    ratio = audit_pps / bare_pps
    rows = [
        Row(bench="audit", case=f"audit throughput, {name} at {size} px, {n} pictures, batches of {BATCH}, "
                                f"Grad-CAM + SpRAy, {device}",
            measured=f"audit {audit_pps:.1f} pictures/s, bare forward + backward {bare_pps:.1f}: {ratio:.2f} x",
            target="≥ 0.7 x", status="PASS" if ratio >= 0.7 else "MISS",
            numbers={"audit_pps": audit_pps, "bare_pps": bare_pps, "ratio": ratio}),
        Row(bench="audit", case=f"Python heap peak (tracemalloc) of an audit with a store, tiny model at 32 px, "
                                f"{small:,} and {large:,} pictures, extrapolated to {FAR:,}",
            measured=f"{stored[small]:.1f} and {stored[large]:.1f} MiB ({per_stored:.0f} bytes per picture): "
                     f"{far_stored:.0f} MiB at {FAR:,}; without a store (maps in memory) {far_memory:.0f} MiB "
                     f"({per_memory:.0f} bytes per picture)",
            target="≤ 256 MiB at 100,000", status="PASS" if far_stored <= 256 else "MISS",
            numbers={"peak_small_mib": stored[small], "peak_large_mib": stored[large], "far_mib": far_stored,
                     "bytes_per_picture": max(per_stored, 1e-9), "far_in_memory_mib": far_memory}),
    ]
    details = [f"{repeat} measured rounds after one warm-up (bare, audit in turn); decoding and preprocessing "
               "in both.",
               f"- bare (s): {', '.join(f'{v:.3f}' for v in t_bare)}",
               f"- audit (s): {', '.join(f'{v:.3f}' for v in t_audit)}",
               "- heap peaks (MiB) with a store: " + ", ".join(f"{c:,} pictures {v:.1f}" for c, v in stored.items())
               + "; without: " + ", ".join(f"{c:,} pictures {v:.1f}" for c, v in in_memory.items())]
    return Result(rows=rows, details=details, profilers={rows[0].case: audited})


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    result = run(Config(repeat=1, quick=args.quick, profile=False))
    for row in result.rows:
        print(f"{row.case}: {row.measured} [{row.status}]")
    for line in result.details:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
