"""Benchmark 2: what the hooks cost. ``vizhooks.capture`` of all 20 Conv2d layers of resnet18
(hook registration, one forward pass, a CPU copy of each output, hook removal) against a bare
forward pass under ``torch.inference_mode()`` on the same input."""

from __future__ import annotations

from .common import SAMPLE, Config, Result, Row, alternate, fmt_s, fmt_samples, median, verdict

TARGET = 1.25


def run(cfg: Config) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.models.images import preprocess
    from vizhooks.models.layers import conv_layers
    from vizhooks.ops import hook_count

    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    model = bundle.model
    x = preprocess(vz.load_image(SAMPLE), 224)
    names = [layer.name for layer in conv_layers(model)]
    kept = {}

    def bare():
        with torch.inference_mode():
            model(x)

    def hooked():
        kept.update(vz.capture(model, x, "all"))

    pairs = max(3, 3 * cfg.repeat)
    t_bare, t_cap = alternate(bare, hooked, pairs, warmup=2)
    if hook_count(model) != 0 or len(kept) != len(names):
        raise RuntimeError("capture left hooks behind or missed layers")
    m_bare, m_cap = median(t_bare), median(t_cap)
    ratio = m_cap / m_bare
    mib = sum(t.numel() * 4 for t in kept.values()) / 2**20
    shape = "×".join(map(str, x.shape[-2:]))
    case = f"resnet18 at 224 ({shape}), capture of {len(names)} Conv2d vs bare forward"
    row = Row(
        bench="hooks", case=case,
        measured=f"capture {fmt_s(m_cap)} vs bare {fmt_s(m_bare)}: ratio {ratio:.3f}",
        target=f"ratio ≤ {TARGET:.2f}", status=verdict(ratio, TARGET),
        numbers={"capture_s": m_cap, "bare_s": m_bare, "ratio": ratio, "copied_mib": mib},
    )
    details = [
        f"{pairs} measured pairs (bare, capture) after 2 warm-up pairs; torch threads: {torch.get_num_threads()}; "
        f"capture copies {mib:.1f} MiB of activations to new CPU tensors.",
        "",
        f"- bare forward samples (s): {fmt_samples(t_bare)}",
        f"- capture samples (s): {fmt_samples(t_cap)}",
        f"- min/min ratio (least disturbed runs): {min(t_cap) / min(t_bare):.3f}",
    ]
    return Result(rows=[row], details=details, profilers={case: hooked})
