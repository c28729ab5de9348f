"""Models from where engineers keep them (issue 32): what vizhooks adds around them.

1. The Hugging Face wrapper (``load_model("hf:FOLDER")``, ``HFClassifier``): its forward against the
   Hugging Face model's own ``hf(pixel_values=x).logits``, in interleaved pairs, on a ViT of DeiT-tiny's
   shape (12 blocks, width 192, 224 px; random weights from a config saved with save_pretrained).
   Target: the wrapper adds <= 2 % (median of the pairs' ratios).
2. CLIP zero-shot's prompt cache (``zero_shot``): a page view with new class names (one text forward for
   the set) against one with the same names again (no text forward), on RN50 with random weights
   (``weights="none"``). Text forwards are counted; the target is none for a known set.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.hf [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from .common import Config, Result, Row, bench_main, fmt_samples, median, timed

PROMPTS = ["a photo of a cat", "a photo of a dog", "a photo of a red mug", "a photo of a bus", "a photo of a tree"]
TINY_CLIP = {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": [1, 1, 1, 1], "width": 8},
             "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


def _wrapper(cfg: Config, folder: Path) -> tuple[list[Row], list[str]]:
    import torch
    import transformers as tf
    from transformers import AutoModelForImageClassification

    from vizhooks.models.registry import load_model

    side, layers, width = (32, 2, 32) if cfg.quick else (224, 12, 192)
    config = tf.ViTConfig(hidden_size=width, num_hidden_layers=layers, num_attention_heads=3 if width % 3 == 0 else 2,
                          intermediate_size=4 * width, image_size=side, patch_size=16 if side == 224 else 8)
    torch.manual_seed(0)
    AutoModelForImageClassification.from_config(config).save_pretrained(folder)
    bundle = load_model(f"hf:{folder}", device="cpu")
    wrapped, bare = bundle.model, bundle.model.hf
    x = torch.randn(1, 3, side, side, generator=torch.Generator().manual_seed(0))
    pairs = 1 if cfg.quick else max(10, 4 * cfg.repeat)
    with torch.no_grad():
        if not torch.equal(wrapped(x), bare(pixel_values=x).logits):
            raise RuntimeError("the wrapper's logits differ from the Hugging Face model's: times would mean nothing")
        for _ in range(3):  # warm-up
            wrapped(x), bare(pixel_values=x)
        t_wrapped, t_bare = [], []
        for i in range(pairs):  # interleaved, the order alternating: drift and load hit both sides alike
            runs = [(t_wrapped, lambda: wrapped(x)), (t_bare, lambda: bare(pixel_values=x))]
            for times, fn in runs if i % 2 == 0 else runs[::-1]:
                times.append(timed(fn))
    ratios = [w / b for w, b in zip(t_wrapped, t_bare, strict=True)]
    ratio = median(ratios)
    extra_us = median([(w - b) * 1e6 for w, b in zip(t_wrapped, t_bare, strict=True)])
    case = f"HFClassifier forward vs the Hugging Face model's own (ViT, {layers} blocks, width {width}, {side} px)"
    row = Row(bench="hf", case=case,
              measured=f"{ratio:.3f}x ({median(t_wrapped) * 1e3:.1f} vs {median(t_bare) * 1e3:.1f} ms; "
                       f"{extra_us:+.0f} µs a forward)",
              target="≤ 1.02x", status="PASS" if ratio <= 1.02 else "MISS",
              numbers={"wrapped_ms": median(t_wrapped) * 1e3, "bare_ms": median(t_bare) * 1e3, "ratio": ratio})
    details = [f"1. {pairs} interleaved pairs, CPU, torch threads {torch.get_num_threads()}; wrapped (s): "
               f"{fmt_samples(t_wrapped)}; bare (s): {fmt_samples(t_bare)}; load average (1 min) after: "
               f"{os.getloadavg()[0]:.2f}"]
    return [row], details


def _prompt_cache(cfg: Config, folder: Path) -> tuple[list[Row], list[str]]:
    import open_clip  # type: ignore[import-untyped]

    from vizhooks.models.zero_shot import zero_shot

    arch = "RN50"
    if cfg.quick:  # a tiny config of open_clip's own format, registered for this process
        (folder / "vizhooks-bench-tiny.json").write_text(json.dumps(TINY_CLIP))
        open_clip.add_model_config(folder)
        arch = "vizhooks-bench-tiny"
    clip = zero_shot(arch, PROMPTS[:2], weights="none", device="cpu").clip  # the model loaded, as a running page has it
    calls: list[int] = []
    original = clip.encode_text

    def counted(tokens, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(tokens))
        return original(tokens, *args, **kwargs)

    clip.encode_text = counted
    rounds = 1 if cfg.quick else max(3, cfg.repeat)
    t_first, t_cached, first_calls, cached_calls = [], [], 0, 0
    try:
        for i in range(rounds):
            names = [f"{p} ({i})" for p in PROMPTS]  # a set no earlier round used
            before = len(calls)
            t_first.append(timed(lambda names=names: zero_shot(arch, names, weights="none", device="cpu")))
            first_calls += len(calls) - before
            before = len(calls)
            t_cached.append(timed(lambda names=names: zero_shot(arch, names, weights="none", device="cpu")))
            cached_calls += len(calls) - before
    finally:
        del clip.encode_text
    first, cached = median(t_first), median(t_cached)
    row = Row(bench="hf", case=f"zero_shot with {len(PROMPTS)} new class names vs the same names again ({arch})",
              measured=f"new {first * 1e3:.1f} ms ({first_calls / rounds:.0f} text forward), same again "
                       f"{cached * 1e3:.2f} ms ({cached_calls} text forwards in {rounds} views)",
              target="0 text forwards", status="PASS" if cached_calls == 0 else "MISS",
              numbers={"new_ms": first * 1e3, "cached_ms": cached * 1e3, "text_forwards_new": first_calls / rounds})
    details = [f"2. {rounds} rounds; new (s): {fmt_samples(t_first)}; same again (s): {fmt_samples(t_cached)}"]
    return [row], details


def run(cfg: Config) -> Result:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here needs the Hub: configs and random weights
    with tempfile.TemporaryDirectory(prefix="vizhooks-bench-hf-") as tmp:
        rows1, details1 = _wrapper(cfg, Path(tmp) / "vit")
        rows2, details2 = _prompt_cache(cfg, Path(tmp))
    return Result(rows=[*rows1, *rows2], details=[*details1, *details2])


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
