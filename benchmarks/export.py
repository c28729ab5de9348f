"""A taught model leaves vizhooks (``vizhooks.exporting``): how long the exports take.

resnet18 on random weights (``weights="none"``), CPU, with a taught head of 6 classes
(``taught_bundle``: the Teach view's model, without teaching first), at 224 px:

1. ``onnx_bytes(taught)``: torch.onnx's TorchScript-based exporter, opset 17, the batch axis free.
   Target: <= 10 s (issue 32: a student clicks the download and waits), for the first export in the process
   (which also sets the exporter up) and the median of the next ones. The exported file is then run
   once in ONNX Runtime and its logits compared with PyTorch's (the largest difference is reported;
   a file that disagrees by more than 1e-4 is an error, not a number).
2. ``torchscript_bytes(taught)``: torch.jit.trace + save. Reported beside (no target).

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.export [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import os
import sys

from .common import Config, Result, Row, bench_main, fmt_s, fmt_samples, median, timed

SIZE = 224
CLASSES = 6


def run(cfg: Config) -> Result:
    import numpy as np
    import onnxruntime
    import torch
    from torch import nn

    import vizhooks as vz
    from vizhooks.exporting import onnx_bytes, torchscript_bytes
    from vizhooks.teaching import taught_bundle

    repeat = 1 if cfg.quick else max(1, min(cfg.repeat, 3))  # each export is seconds on 2 cores
    torch.manual_seed(0)
    backbone = vz.load_model("resnet18", weights="none", device="cpu")
    taught = taught_bundle(backbone, "fc", nn.Linear(512, CLASSES), [f"class {i + 1}" for i in range(CLASSES)])
    rows: list[Row] = []
    details = [f"resnet18 (random weights) with a {CLASSES}-class head, {SIZE} px, CPU, torch threads: "
               f"{torch.get_num_threads()}, {os.cpu_count()} CPUs; one untimed TorchScript export first.", ""]

    # the first call in a process also imports the exporter and registers its symbolics: what the first
    # student to click the download waits; the target applies to it (the later calls are faster)
    t_first = timed(lambda: onnx_bytes(taught, SIZE))
    data: list[bytes] = []
    t_onnx = [timed(lambda: data.append(onnx_bytes(taught, SIZE))) for _ in range(repeat)]
    x = torch.randn(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = taught.model(x).numpy()
    session = onnxruntime.InferenceSession(data[-1], providers=["CPUExecutionProvider"])
    diff = float(np.abs(session.run(None, {"image": x.numpy()})[0] - expected).max())
    if diff > 1e-4:
        raise RuntimeError(f"ONNX Runtime's logits differ from PyTorch's by {diff:.2e}; the time would mean nothing")
    m = median(t_onnx)
    worst = max(t_first, m)
    case1 = f"ONNX export (opset 17) of a taught resnet18, {CLASSES} classes, {SIZE} px"
    rows.append(Row(bench="export", case=case1,
                    measured=f"first in the process {fmt_s(t_first)}, then {fmt_s(m)} ({len(data[-1]) / 1e6:.1f} "
                             f"MB; ONNX Runtime within {diff:.1e} of PyTorch's logits)",
                    target="≤ 10 s", status="PASS" if worst <= 10.0 else "MISS",
                    numbers={"onnx_first_s": t_first, "onnx_s": m, "onnx_mb": len(data[-1]) / 1e6}))
    details += [f"1. The first ONNX export: {fmt_s(t_first)}; then (s): {fmt_samples(t_onnx)}; load average (1 min) "
                f"after: {os.getloadavg()[0]:.2f}"]

    torchscript_bytes(taught, SIZE)
    scripted: list[bytes] = []
    t_ts = [timed(lambda: scripted.append(torchscript_bytes(taught, SIZE))) for _ in range(repeat)]
    mt = median(t_ts)
    rows.append(Row(bench="export", case=f"TorchScript export (trace + save) of the same model, {SIZE} px",
                    measured=f"{fmt_s(mt)} ({len(scripted[-1]) / 1e6:.1f} MB)",
                    numbers={"torchscript_s": mt, "torchscript_mb": len(scripted[-1]) / 1e6}))
    details += [f"2. TorchScript exports (s): {fmt_samples(t_ts)}"]
    return Result(rows=rows, details=details, profilers={case1: lambda: onnx_bytes(taught, SIZE)})


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
