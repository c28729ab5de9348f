"""Benchmark 5: peak resident memory (ru_maxrss) of capturing every Conv2d of resnet50 and
resnet152 at input sizes 224 and 512, each case in a fresh process (``benchmarks.memory_case``),
with the model-only baseline, a bare forward pass (no hooks, another fresh process) for
comparison, and the size of the captured activations (sum of numel * 4 bytes)."""

from __future__ import annotations

import json
import subprocess
import sys

from .common import ROOT, Config, Result, Row

CASES = [("resnet50", 224), ("resnet50", 512), ("resnet152", 224), ("resnet152", 512)]


def measure(model: str, size: int, mode: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory_case", "--model", model, "--size", str(size), "--mode", mode],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memory_case {model} {size} {mode} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mib(mib: float) -> str:
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def run(cfg: Config) -> Result:
    cases = CASES[:1] if cfg.quick else CASES
    rows: list[Row] = []
    details = [
        "Every case runs in a fresh Python process that imports torch and vizhooks (about "
        "{imports} of resident memory before any model exists). "
        "*ru_maxrss before*: after building the model (random weights). *ru_maxrss after*: after "
        "`capture(model, x, \"all\")`. *Capture peak above model*: the high-water mark of the capture alone "
        "(reset to the current size just before it via `/proc/self/clear_refs`) minus the resident size with the "
        "model loaded. *Bare forward*: the same for one forward pass without hooks, in another fresh process. "
        "*Kept*: resident growth still there after the capture returns. tracemalloc is not used: torch allocates "
        "tensors outside Python's allocator, so it cannot see them.",
        "",
        "| model | size (input) | Conv2d | model-only RSS | ru_maxrss before → after | capture peak above model "
        "| bare forward peak above model | kept after capture | activations (numel×4) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    imports, floors = [], []
    for model, size in cases:
        cap = measure(model, size, "capture")
        bare = None if cfg.quick else measure(model, size, "bare")
        imports.append(cap["imports_peak"])
        floors.append(max(cap["start_peak"], bare["start_peak"] if bare else 0))
        base = cap["model_rss"] or cap["model_peak"]
        grown = cap["run_peak"] - base
        kept = (cap["retained_rss"] or cap["run_peak"]) - base
        shape = "×".join(map(str, cap["input"][-2:]))
        numbers = {"peak_mib": cap["peak"], "model_mib": base, "capture_peak_above_model_mib": grown,
                   "activations_mib": cap["activations"]}
        bare_text = "not run (--quick)"
        if bare is not None:
            bare_grown = bare["run_peak"] - (bare["model_rss"] or bare["model_peak"])
            numbers["bare_peak_above_model_mib"] = bare_grown
            bare_text = f"+{_mib(bare_grown)}"
        rows.append(Row(
            bench="memory", case=f"{model} at {size} ({shape}), all {cap['layers']} Conv2d",
            measured=f"peak {_mib(cap['peak'])}, model only {_mib(base)}: capture +{_mib(grown)} "
                     f"(bare forward {bare_text}); activations {_mib(cap['activations'])}",
            numbers=numbers,
        ))
        details.append(
            f"| {model} | {size} ({shape}) | {cap['layers']} | {_mib(base)} "
            f"| {_mib(cap['model_peak'])} → {_mib(cap['peak'])} | +{_mib(grown)} | {bare_text} "
            f"| +{_mib(kept)} | {_mib(cap['activations'])} |"
        )
    details[0] = details[0].format(imports=_mib(max(imports)))
    details.append("")
    details.append(f"Highest ru_maxrss a measuring process inherited at its start: {_mib(max(floors))} (each is "
                   "started by a small intermediate process, because Linux hands a parent's peak to its child).")
    return Result(rows=rows, details=details)
