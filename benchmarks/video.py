"""Video: ``vizhooks.video.capture_frames`` in batches of 8 against one ``vizhooks.capture`` per frame.

resnet18 (random weights), 48 frames of a generated 320 x 240 clip (a pan across the sample
photo, written with OpenCV's mp4v, decoded with ``read_frames``), layers ``layer1.0.conv1`` and
``layer3.0.conv1`` at 224 px. Both sides prepare every frame (``bundle.preprocess``) and return
CPU maps; the batched one runs 6 forward passes instead of 48. Timed in alternated pairs, medians.
Target: at least 1.3 x. Decoding the clip and encoding one layer's animated grid
(``layer_video``) are reported too.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.video [--repeat N] [--quick] [--device cuda]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import os
import sys
import tempfile

from .common import SAMPLE, Config, Result, Row, alternate, fmt_s, fmt_samples, median, report, timed

LAYERS = ["layer1.0.conv1", "layer3.0.conv1"]
SIZE = 224
BATCH = 8
WIDTH, HEIGHT, FPS = 320, 240, 24


def _clip(path: str, frames: int) -> None:
    """A pan across the sample photo, ``frames`` frames of 320 x 240 at 24 fps (mp4v)."""
    import cv2
    import numpy as np

    photo = cv2.imread(str(SAMPLE))
    photo = cv2.resize(photo, (int(photo.shape[1] * HEIGHT / photo.shape[0]), HEIGHT))
    travel = max(photo.shape[1] - WIDTH, 1)
    writer = cv2.VideoWriter(path, cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"mp4v"), FPS, (WIDTH, HEIGHT))
    if not writer.isOpened():
        raise RuntimeError("OpenCV cannot write mp4v here, so the benchmark has no clip to read.")
    try:
        for i in range(frames):
            left = int(travel * i / max(frames - 1, 1))
            writer.write(np.ascontiguousarray(photo[:, left: left + WIDTH]))
    finally:
        writer.release()


def run(cfg: Config, device: str = "cpu") -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.ops import hook_count
    from vizhooks.video import capture_frames, layer_video, read_frames

    n = 4 if cfg.quick else 48
    pairs = 1 if cfg.quick else max(1, cfg.repeat)
    fd, path = tempfile.mkstemp(prefix="vizhooks-bench-video-", suffix=".mp4")
    os.close(fd)
    try:
        _clip(path, n)
        t_read = [timed(lambda: read_frames(path, max_frames=n)) for _ in range(pairs)]
        frames = read_frames(path, max_frames=n)
    finally:
        os.unlink(path)
    bundle = vz.load_model("resnet18", weights="none", device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def batched():
        capture_frames(bundle, frames, LAYERS, size=SIZE, batch=BATCH)
        sync()

    def singles():
        for frame in frames:
            vz.capture(bundle.model, bundle.preprocess(frame, SIZE), LAYERS, as_maps=True)
        sync()

    t_batch, t_single = alternate(batched, singles, pairs)
    sb, ss = median(t_batch), median(t_single)
    speedup = ss / sb
    acts = capture_frames(bundle, frames, LAYERS[:1], size=SIZE, batch=BATCH)[LAYERS[0]]
    encoded: list[tuple[bytes, str, str]] = []
    t_encode = [timed(lambda: encoded.append(layer_video(acts, fps=8, channels=16))) for _ in range(pairs)]
    data, mime, _ = encoded[-1]
    if hook_count(bundle.model) != 0:
        raise RuntimeError("capture_frames left hooks behind")
    te = median(t_encode)
    rows = [
        Row(bench="video", case=f"read_frames: {n} frames of a {WIDTH} x {HEIGHT} MP4 (mp4v)",
            measured=f"{fmt_s(median(t_read))} ({n / median(t_read):.0f} frames/s)",
            numbers={"read_s": median(t_read)}),
        Row(bench="video", case=f"capture_frames, batches of {BATCH}, vs {n} single captures: resnet18 "
                                f"{', '.join(LAYERS)} at {SIZE} px, {device}",
            measured=f"batched {fmt_s(sb)}, single {fmt_s(ss)}: {speedup:.2f} x",
            target="≥ 1.3 x", status="PASS" if speedup >= 1.3 else "MISS",
            numbers={"batched_s": sb, "single_s": ss, "speedup": speedup}),
        Row(bench="video", case=f"layer_video: {LAYERS[0]}, {n} frames, 16 channels",
            measured=f"{fmt_s(te)} ({mime}, {len(data) / 1024:.0f} KiB)",
            numbers={"encode_s": te, "kib": len(data) / 1024}),
    ]
    details = [f"{pairs} measured pairs (batched, single) after one warm-up pair; device {device}; "
               f"torch threads: {torch.get_num_threads()}; layer_video wrote {mime}.", "",
               f"- batched (s): {fmt_samples(t_batch)}",
               f"- single (s): {fmt_samples(t_single)}",
               f"- read_frames (s): {fmt_samples(t_read)}",
               f"- layer_video (s): {fmt_samples(t_encode)}"]
    return Result(rows=rows, details=details, profilers={rows[1].case: batched})


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    result = run(Config(repeat=args.repeat, quick=args.quick, profile=False), device=args.device)
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
