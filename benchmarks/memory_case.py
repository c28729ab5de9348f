"""One memory measurement in a fresh process (ru_maxrss is a high-water mark, so every case
needs its own process). Prints one JSON line.

    python -m benchmarks.memory_case --model resnet50 --size 224 [--mode capture|bare]

``capture``: ``vizhooks.capture(model, x, "all")``; ``bare``: one forward pass under
``torch.inference_mode()`` without hooks (same input), for comparison.

Readings (MiB): ``start_peak`` (ru_maxrss when the measuring process starts: what it inherited),
``imports_peak`` (ru_maxrss after importing torch and vizhooks), ``model_peak``
(ru_maxrss once the model is built: the "before"), ``model_rss`` (resident size then),
``peak`` (ru_maxrss after the capture: the "after"), ``run_peak`` (the high-water mark of the
capture alone: on Linux it is reset to the current size just before the capture by writing 5 to
/proc/self/clear_refs, because building the model can leave a higher mark than the capture makes)
and ``retained_rss`` (resident size after the capture, with the activations still held).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys


def peak_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def rss_mib() -> float | None:
    """Current resident set size, MiB (Linux only)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return None


def reset_peak() -> bool:
    """Lower the high-water mark to the current resident size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--mode", choices=("capture", "bare"), default="capture")
    parser.add_argument("--direct", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.direct:
        # Linux carries a parent's peak RSS into a child it starts (fork copies the high-water mark
        # and exec keeps it), so a big benchmark runner would put a floor under every reading.
        # This small process starts the measuring one instead.
        argv = [*(sys.argv[1:] if argv is None else argv), "--direct"]
        cmd = [sys.executable, "-m", "benchmarks.memory_case", *argv]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        sys.stdout.write(proc.stdout)
        return proc.returncode
    start = peak_mib()
    os.environ["VIZHOOKS_OFFLINE"] = "1"

    import torch

    import vizhooks as vz
    from vizhooks.models.images import preprocess

    from .common import SAMPLE

    x = preprocess(vz.load_image(SAMPLE), args.size)
    out = {"model": args.model, "size": args.size, "mode": args.mode, "input": list(x.shape),
           "start_peak": start, "imports_peak": peak_mib()}
    bundle = vz.load_model(args.model, weights="none", device="cpu")
    gc.collect()
    out["model_peak"] = peak_mib()
    out["model_rss"] = rss_mib()
    out["reset"] = reset_peak()
    if args.mode == "capture":
        acts = vz.capture(bundle.model, x, "all")
        out["layers"] = len(acts)
        out["activations"] = sum(t.numel() * 4 for t in acts.values()) / 2**20
    else:
        with torch.inference_mode():
            bundle.model(x)
    out["run_peak"] = peak_mib()
    out["peak"] = max(out["run_peak"], out["model_peak"])
    out["retained_rss"] = rss_mib()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
