"""A layer table built from forward pre-hooks and forward hooks in one pass."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from vizhooks._hooks import check_input, first_tensor, hooked, model_device


@dataclass(frozen=True)
class SummaryRow:
    """One module: shapes of its first call, parameter count (with children), time of all calls."""

    name: str
    type: str
    input_shape: tuple[int, ...] | None
    output_shape: tuple[int, ...] | None
    params: int
    trainable: bool
    time_ms: float
    calls: int
    depth: int


def _shape(value: Any) -> tuple[int, ...] | None:
    try:
        return tuple(first_tensor(value).shape)
    except TypeError:
        return None


def layer_summary(model: nn.Module, x: torch.Tensor) -> list[SummaryRow]:
    """Every module of ``model`` (leaves and containers, not the model itself) in the order they
    first run, with input and output shapes, parameter counts and wall time.

    A forward pre-hook notes the input shape and start time, a forward hook the output shape
    and end time. A module that runs several times (ResNet's shared ReLU) is one row with
    ``calls`` > 1 and the time of all calls. Container times include their children.

    Example:
        >>> rows = layer_summary(bundle.model, x)
        >>> [(r.name, r.output_shape) for r in rows][:2]
        [('conv1', (1, 64, 112, 169)), ('bn1', (1, 64, 112, 169))]
    """
    check_input(x)
    sync = torch.cuda.synchronize if model_device(model).type == "cuda" else (lambda: None)
    with hooked(model) as hooks:  # eval mode: BatchNorm statistics stay untouched
        named = [(n, m) for n, m in model.named_modules() if n]
        seen: dict[str, dict] = {}
        order: list[str] = []

        def pre(name: str) -> Callable[..., None]:
            def hook(module: nn.Module, args: Any) -> None:
                rec = seen.get(name)
                if rec is None:
                    rec = seen[name] = {"input": _shape(args), "output": None, "time": 0.0, "calls": 0}
                    order.append(name)
                sync()
                rec["start"] = time.perf_counter()

            return hook

        def post(name: str) -> Callable[..., None]:
            def hook(module: nn.Module, args: Any, output: Any) -> None:
                sync()
                rec = seen[name]
                rec["time"] += time.perf_counter() - rec["start"]
                rec["calls"] += 1
                if rec["output"] is None:
                    rec["output"] = _shape(output)

            return hook

        for name, module in named:
            hooks.forward_pre_hook(module, pre(name))
            hooks.forward_hook(module, post(name))
        with torch.inference_mode():
            model(x.to(model_device(model)))

    modules = dict(named)
    rows = []
    for name in order:
        m, rec = modules[name], seen[name]
        params = list(m.parameters())
        rows.append(SummaryRow(
            name=name, type=type(m).__name__, input_shape=rec["input"], output_shape=rec["output"],
            params=sum(p.numel() for p in params), trainable=any(p.requires_grad for p in params),
            time_ms=rec["time"] * 1000.0, calls=rec["calls"], depth=name.count(".") + 1,
        ))
    return rows


def summary_totals(rows: list[SummaryRow]) -> dict[str, float]:
    """Totals that do not count anything twice: parameters and time over the top-level modules
    (containers include their children), output values over the leaf modules."""
    names = [r.name for r in rows]
    leaves = [r for r in rows if not any(n.startswith(r.name + ".") for n in names)]
    top = [r for r in rows if "." not in r.name]
    return {
        "params": sum(r.params for r in top),
        "output_elements": sum(int(torch.Size(r.output_shape).numel()) for r in leaves if r.output_shape),
        "time_ms": sum(r.time_ms for r in top),
    }


def summary_dataframe(rows: list[SummaryRow]) -> Any:
    """The rows as a pandas DataFrame (shapes as "1×64×112×112" strings, for display)."""
    import pandas as pd

    def fmt(shape: tuple[int, ...] | None) -> str:
        return "×".join(map(str, shape)) if shape else ""

    records = []
    for r in rows:
        d = asdict(r)
        d["input_shape"], d["output_shape"] = fmt(r.input_shape), fmt(r.output_shape)
        d["output_elements"] = int(torch.Size(r.output_shape).numel()) if r.output_shape else 0
        records.append(d)
    return pd.DataFrame.from_records(records)
