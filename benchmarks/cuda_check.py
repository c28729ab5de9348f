"""The CUDA path of this round's modules against the CPU: run on a machine with a GPU.

    python -m benchmarks.cuda_check

Each check runs one function on the CPU and on CUDA with the same seeded random weights and input,
and compares the answers (TF32 off, so both sides compute in float32): channel relevance (Taylor,
ablation, LRP), conditional heatmaps, activation patching and its sweep, concepts' activation matrix,
the folder audit's predictions, CLIP zero-shot and a Hugging Face model. It also says where each
result lives (tensors handed back on the model's device or on the CPU, as documented) and that no hook
is left. Not a test of `make test` (CI has no GPU); a line per check, ``OK`` or ``FAIL`` with why,
and exit status 1 when any check fails.

On a machine whose image has torch but not this project's pins, install the pure-Python extras
first (zennit, captum, open_clip_torch and its ftfy/wcwidth, as wheels downloaded here):
``python3 -m pip install --no-deps --no-index --target /tmp/wh WHEELS; PYTHONPATH=/tmp/wh``.
Last run: NVIDIA H200, torch 2.11.0+cu130, 2026-12-04: all 12 checks OK (largest difference
2.6e-6 of 0.207, relevance by ablation).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS: list[tuple[str, bool, str]] = []


def check(name: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    def run(fn: Callable[[], str]) -> Callable[[], str]:
        started = time.perf_counter()
        try:
            note = fn()
            RESULTS.append((name, True, f"{note} ({time.perf_counter() - started:.1f} s)"))
        except Exception as exc:  # reported, the other checks still run
            RESULTS.append((name, False, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))
        return fn
    return run


def close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-3, atol: float = 1e-4) -> str:
    a, b = a.detach().float().cpu(), b.detach().float().cpu()
    err = float((a - b).abs().max())
    scale = float(b.abs().max()) or 1.0
    if err > atol + rtol * scale:
        raise AssertionError(f"CPU and CUDA differ by {err:.3g} (scale {scale:.3g})")
    return f"max |cpu - cuda| {err:.2g} of {scale:.3g}"


def main() -> int:
    os.environ.setdefault("VIZHOOKS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    import vizhooks as vz
    from vizhooks.ops import hook_count

    cpu = vz.load_model("resnet18", weights="none", device="cpu")
    gpu = vz.load_model("resnet18", weights="none", device="cuda")
    gpu.model.load_state_dict(cpu.model.state_dict())
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, 64, 64, generator=g)
    source = torch.randn(1, 3, 64, 64, generator=g)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)

    for method in ("taylor", "ablation", "lrp"):
        @check(f"relevance {method}")
        def _relevance(method: str = method) -> str:
            from vizhooks.relevance import channel_relevance

            a = channel_relevance(cpu, x, "layer3", method=method)
            b = channel_relevance(gpu, x.cuda(), "layer3", method=method)
            assert a.target == b.target and hook_count(gpu.model) == 0
            return close(b.scores, a.scores, rtol=2e-3)

    @check("conditional heatmaps")
    def _heatmaps() -> str:
        from vizhooks.relevance import conditional_heatmaps

        a = conditional_heatmaps(cpu, x, "layer3", [[0], [1, 2], [3]])
        b = conditional_heatmaps(gpu, x.cuda(), "layer3", [[0], [1, 2], [3]])
        return close(torch.as_tensor(b), torch.as_tensor(a), rtol=2e-3)

    @check("patch and sweep")
    def _patching() -> str:
        from vizhooks.patching import patch, sweep

        layers = ["conv1", "layer2.0.conv1", "layer4.1.conv2"]
        a = patch(cpu, x, source, "layer2.0.conv1")
        b = patch(gpu, x.cuda(), source.cuda(), "layer2.0.conv1")
        notes = [close(b.logits, a.logits)]
        swept_a = [r.restored if hasattr(r, "restored") else r[1] for r in sweep(cpu, x, source, layers)]
        swept_b = [r.restored if hasattr(r, "restored") else r[1] for r in sweep(gpu, x.cuda(), source.cuda(), layers)]
        notes.append(close(torch.tensor(swept_b), torch.tensor(swept_a), atol=1e-3))
        assert hook_count(gpu.model) == 0
        return "; ".join(notes)

    @check("explain: LRP among the methods")
    def _explain_lrp() -> str:
        from vizhooks.interpret.methods import explain

        a = explain(cpu, x, 3, methods=["lrp"])["lrp"]
        b = explain(gpu, x.cuda(), 3, methods=["lrp"])["lrp"]
        assert hook_count(gpu.model) == 0
        return close(b, a, rtol=2e-3)

    @check("steer along mean_direction")
    def _steer() -> str:
        from vizhooks.patching import mean_direction, steer

        da = mean_direction(cpu, source, x, "layer3")
        db = mean_direction(gpu, source.cuda(), x.cuda(), "layer3")
        notes = [close(db, da)]
        a = steer(cpu, x, "layer3", da, 1.0)
        b = steer(gpu, x.cuda(), "layer3", db.cuda() if db.device.type != "cuda" else db, 1.0)
        notes.append(close(b.logits, a.logits))
        assert hook_count(gpu.model) == 0
        return "; ".join(notes)

    @check("gradient direction and steer(capture=)")
    def _gradient_direction() -> str:
        from vizhooks.patching import gradient_direction, steer

        da = gradient_direction(cpu, [x, source], "layer3", 3)
        db = gradient_direction(gpu, [x.cuda(), source.cuda()], "layer3", 3)
        notes = [close(db, da, rtol=2e-3)]
        a = steer(cpu, x, "layer3", da, 2.0, capture=["layer4.0.conv1"])
        b = steer(gpu, x.cuda(), "layer3", db.to("cuda"), 2.0, capture=["layer4.0.conv1"])
        notes.append(close(b.activations["layer4.0.conv1"], a.activations["layer4.0.conv1"], rtol=2e-3))
        assert hook_count(gpu.model) == 0
        return "; ".join(notes)

    @check("taylor relevances of every layer at once")
    def _taylor_all() -> str:
        from vizhooks.relevance import taylor_relevances

        layers = ["conv1", "layer2.0.conv1", "layer4.1.conv2"]
        a = taylor_relevances(cpu, x, layers)
        b = taylor_relevances(gpu, x.cuda(), layers)
        assert hook_count(gpu.model) == 0
        return "; ".join(close(b[n].scores, a[n].scores, rtol=2e-3) for n in layers)

    @check("audit with a store (resume)")
    def _audit_store() -> str:
        from vizhooks.audit import audit

        folder = ROOT / "sample_images" / "shortcut" / "test"
        categories = ["circle", "triangle"] + [str(i) for i in range(2, 1000)]
        store = Path(tempfile.mkdtemp())
        first = audit(gpu.model, folder, categories=categories, size=64, clusters=2, store=store)
        again = audit(gpu.model, folder, categories=categories, size=64, clusters=2, store=store)
        same = [p["predicted_index"] for p in first.predictions] == [p["predicted_index"] for p in again.predictions]
        assert same, "the resumed audit differs"
        return f"{len(first.predictions)} pictures, resumed equal"

    @check("concepts")
    def _concepts() -> str:
        from vizhooks.concepts import discover

        photos = sorted((ROOT / "sample_images").glob("*.jpg"))[:3]
        a = discover(cpu, photos, "layer3", k=3, crops_per_image=4, size=64)
        b = discover(gpu, photos, "layer3", k=3, crops_per_image=4, size=64)
        assert a.crops == b.crops
        return close(torch.as_tensor(b.bank), torch.as_tensor(a.bank), rtol=5e-2, atol=1e-3)

    @check("audit")
    def _audit() -> str:
        from vizhooks.audit import audit

        folder = ROOT / "sample_images" / "shortcut" / "test"
        categories = ["circle", "triangle"] + [str(i) for i in range(2, 1000)]
        a = audit(cpu.model, folder, categories=categories, size=64, clusters=2)
        b = audit(gpu.model, folder, categories=categories, size=64, clusters=2)
        same = sum(p["predicted_index"] == q["predicted_index"] for p, q in zip(a.predictions, b.predictions,
                                                                               strict=True))
        assert same >= len(a.predictions) - 1, f"{same} of {len(a.predictions)} predictions agree"
        return f"{same}/{len(a.predictions)} predictions agree"

    @check("zero_shot (CLIP)")
    def _clip() -> str:
        prompts = ["a photo of a cat", "a photo of a dog", "a red mug"]
        a = vz.zero_shot("RN50", prompts, weights="none", device="cpu")
        b = vz.zero_shot("RN50", prompts, weights="none", device="cuda")
        b.model.load_state_dict(a.model.state_dict())
        y = torch.randn(1, 3, 224, 224, generator=g)
        with torch.no_grad():
            return close(b.model(y.cuda()), a.model(y), rtol=5e-3)

    @check("Hugging Face ViT")
    def _hf() -> str:
        from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

        folder = Path(tempfile.mkdtemp())
        config = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, num_labels=3)
        ViTForImageClassification(config).save_pretrained(folder)
        ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
        a = vz.load_model(f"hf:{folder}", weights="auto", device="cpu")
        b = vz.load_model(f"hf:{folder}", weights="auto", device="cuda")
        y = torch.randn(1, 3, 32, 32, generator=g)
        with torch.no_grad():
            note = close(b.model(y.cuda()), a.model(y))
        acts = vz.capture(b.model, y.cuda(), ["blocks"])
        assert acts and all(t.device.type == "cpu" for t in acts.values()), "captures come back on the CPU"
        return note

    width = max(len(name) for name, _, _ in RESULTS)
    for name, good, note in RESULTS:
        print(f"{name.ljust(width)}  {'OK  ' if good else 'FAIL'}  {note}")
    return 0 if all(good for _, good, _ in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
