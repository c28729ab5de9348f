"""Benchmark 6: the same capture on a CUDA GPU, with the device -> CPU copy timed on its own.

* bare: forward pass on the GPU under ``torch.inference_mode()``, synchronised.
* hooks, kept on the GPU: forward hooks on every Conv2d that clone the output on the device.
* copy: moving those clones to the CPU (``.to("cpu")``), the part ``vizhooks.capture`` adds.
* vizhooks.capture: the library call end to end (it copies to the CPU inside each hook).

Without CUDA the table says "skipped: no CUDA".
"""

from __future__ import annotations

from .common import SAMPLE, Config, Result, Row, fmt_s, fmt_samples, median, timed


def measure(device: str, pairs: int) -> tuple[dict[str, float], dict[str, list[float]]]:
    """All four timings on ``device`` (also runs on "cpu", which is how it is checked without a GPU)."""
    import torch

    import vizhooks as vz
    from vizhooks.models.images import preprocess
    from vizhooks.models.layers import conv_layers

    bundle = vz.load_model("resnet18", weights="none", device=device)
    model = bundle.model
    x_cpu = preprocess(vz.load_image(SAMPLE), 224)
    x = x_cpu.to(device)
    convs = [layer.name for layer in conv_layers(model)]
    modules = dict(model.named_modules())
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    kept: list = []

    def bare():
        with torch.inference_mode():
            model(x)
        sync()

    def on_device():
        kept.clear()
        handles = [modules[n].register_forward_hook(lambda m, a, out: kept.append(out.detach().clone()))
                   for n in convs]
        try:
            with torch.inference_mode():
                model(x)
            sync()
        finally:
            for h in handles:
                h.remove()

    def copy():
        with torch.inference_mode():
            on_cpu = [t.to("cpu") for t in kept]
        sync()
        return on_cpu

    def library():
        vz.capture(model, x_cpu, "all")
        sync()

    for fn in (bare, on_device, copy, library):  # warm-up (cuDNN autotuning, allocator)
        fn()
    samples: dict[str, list[float]] = {"bare_s": [], "hooks_on_device_s": [], "copy_s": [], "capture_s": []}
    for _ in range(pairs):
        samples["bare_s"].append(timed(bare))
        samples["hooks_on_device_s"].append(timed(on_device))
        samples["copy_s"].append(timed(copy))
        samples["capture_s"].append(timed(library))
    med = {k: median(v) for k, v in samples.items()}
    med["copied_mib"] = sum(t.numel() * t.element_size() for t in kept) / 2**20
    return med, samples


def run(cfg: Config) -> Result:
    import torch

    case = "resnet18 at 224, all 20 Conv2d on CUDA"
    if not torch.cuda.is_available():
        return Result(rows=[Row(bench="gpu", case=case, measured="skipped: no CUDA", status="skipped: no CUDA")],
                      details=["`torch.cuda.is_available()` is False on this machine; nothing was measured."])
    pairs = max(3, 3 * cfg.repeat)
    med, samples = measure("cuda", pairs)
    name = torch.cuda.get_device_name(0)
    rows = [
        Row(bench="gpu", case=f"{case} ({name}): bare forward / hooks kept on GPU / vizhooks.capture",
            measured=f"{fmt_s(med['bare_s'])} / {fmt_s(med['hooks_on_device_s'])} / {fmt_s(med['capture_s'])}",
            numbers={k: med[k] for k in ("bare_s", "hooks_on_device_s", "capture_s")}),
        Row(bench="gpu", case=f"{case}: device → CPU copy of {med['copied_mib']:.0f} MiB, timed alone",
            measured=fmt_s(med["copy_s"]), numbers={"copy_s": med["copy_s"], "copied_mib": med["copied_mib"]}),
    ]
    details = [f"{pairs} measured rounds after one warm-up round; synchronised with `torch.cuda.synchronize()`.", ""]
    details += [f"- {k} samples (s): {fmt_samples(v)}" for k, v in samples.items()]
    return Result(rows=rows, details=details)
