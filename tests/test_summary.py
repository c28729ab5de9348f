"""layer_summary against torchinfo (shapes, parameter counts, depth) and against forward hooks
written here (order of first calls, number of calls)."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torchinfo
from torch import nn

from tests.helpers import count_hooks
from vizhooks.hooks.summary import SummaryRow, layer_summary, summary_dataframe

X = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(11))


def _first_calls(model: nn.Module, x: torch.Tensor) -> tuple[list[str], dict[str, int]]:
    """Names in the order their first call starts, and the number of calls, from pre-hooks on a copy."""
    clone = copy.deepcopy(model).eval()
    order: list[str] = []
    calls: dict[str, int] = {}

    def make(name):
        def hook(module, args):
            if name not in calls:
                order.append(name)
            calls[name] = calls.get(name, 0) + 1

        return hook

    handles = [m.register_forward_pre_hook(make(n)) for n, m in clone.named_modules() if n]
    try:
        with torch.no_grad():
            clone(x)
    finally:
        for h in handles:
            h.remove()
    return order, calls


@pytest.fixture(scope="module")
def summaries(resnet18, resnet50):
    out = {}
    for key, bundle in (("resnet18", resnet18), ("resnet50", resnet50)):
        before = count_hooks(bundle.model)
        rows = layer_summary(bundle.model, X)
        assert count_hooks(bundle.model) == before == 0
        out[key] = rows
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["resnet18", "resnet50"])
def test_matches_torchinfo(request, fixture, summaries):
    model = request.getfixturevalue(fixture).model
    rows = {r.name: r for r in summaries[fixture]}
    clone = copy.deepcopy(model)  # torchinfo gets its own copy: it hooks and may switch modes
    stats = torchinfo.summary(
        clone, input_data=X, verbose=0, depth=10, col_names=("input_size", "output_size", "num_params")
    )
    name_of = {id(m): n for n, m in clone.named_modules()}
    first: dict[str, torchinfo.layer_info.LayerInfo] = {}
    for info in stats.summary_list:
        name = name_of[id(info.module)]
        if name and name not in first:  # the first call of each module, not the root
            first[name] = info
    assert set(first) == set(rows)
    checked_containers = 0
    for name, info in first.items():
        row = rows[name]
        assert not info.is_recursive, name
        assert row.output_shape == tuple(info.output_size), name
        assert row.input_shape == tuple(info.input_size), name
        assert row.depth == info.depth, name
        assert row.type == type(info.module).__name__
        # LayerInfo.num_params counts module.named_parameters(), i.e. children included; check
        # containers once more against the sum over the torchinfo leaf rows below them.
        assert row.params == info.num_params, name
        if not info.is_leaf_layer:
            leaves = [i for n, i in first.items() if n.startswith(name + ".") and i.is_leaf_layer]
            assert row.params == sum(i.num_params for i in leaves), name
            checked_containers += 1
    assert checked_containers > 10
    assert rows["fc"].output_shape == (1, 1000) and rows["conv1"].input_shape == (1, 3, 64, 64)
    assert count_hooks(model) == 0


@pytest.mark.slow
@pytest.mark.parametrize(("fixture", "reused_calls"), [("resnet18", 2), ("resnet50", 3)])
def test_rows_order_and_calls(request, fixture, reused_calls, summaries):
    model = request.getfixturevalue(fixture).model
    rows = summaries[fixture]
    names = [r.name for r in rows]
    expected = [n for n, _ in model.named_modules() if n]
    assert len(names) == len(set(names)) == len(expected)
    assert set(names) == set(expected)
    order, calls = _first_calls(model, X)
    assert names == order
    assert {r.name: r.calls for r in rows} == calls
    by_name = {r.name: r for r in rows}
    assert by_name["layer1.0.relu"].calls == reused_calls  # one ReLU module per block, reused
    assert by_name["layer4.1.relu"].calls == reused_calls
    assert by_name["relu"].calls == 1
    assert all(isinstance(r, SummaryRow) for r in rows)


@pytest.mark.parametrize("fixture", ["resnet18", "resnet50"])
def test_times(request, fixture, summaries):
    model = request.getfixturevalue(fixture).model
    rows = {r.name: r for r in summaries[fixture]}
    assert all(r.time_ms >= 0 and math.isfinite(r.time_ms) for r in rows.values())
    assert rows["layer1"].time_ms > 0
    containers = 0
    for name, module in model.named_modules():
        children = [f"{name}.{c}" if name else c for c, _ in module.named_children()]
        if not name or not children:
            continue
        containers += 1
        # the container's interval holds every call of each direct child, one after another
        child_times = [rows[c].time_ms for c in children]
        assert rows[name].time_ms >= max(child_times), name
        assert rows[name].time_ms + 1e-6 >= sum(child_times), name
    assert containers > 10


def test_depth_and_trainable(resnet18, summaries):
    rows = {r.name: r for r in summaries["resnet18"]}
    assert rows["conv1"].depth == 1 and rows["layer1.0"].depth == 2 and rows["layer2.0.downsample.0"].depth == 4
    assert rows["conv1"].trainable and rows["layer1"].trainable
    assert not rows["relu"].trainable and rows["relu"].params == 0
    model = copy.deepcopy(resnet18.model)
    for p in model.layer1[0].conv1.parameters():
        p.requires_grad_(False)
    frozen = {r.name: r for r in layer_summary(model, X)}
    assert not frozen["layer1.0.conv1"].trainable
    assert frozen["layer1.0"].trainable  # other children still train
    assert frozen["layer1.0.conv1"].params == rows["layer1.0.conv1"].params == 64 * 64 * 9


@pytest.mark.parametrize("fixture", ["resnet18", "resnet50"])
def test_summary_dataframe(request, fixture, summaries):
    import pandas as pd

    model = request.getfixturevalue(fixture).model
    rows = summaries[fixture]
    df = summary_dataframe(rows)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == [
        "name", "type", "input_shape", "output_shape", "params", "trainable", "time_ms", "calls", "depth",
        "output_elements",
    ]
    assert len(df) == len(rows)
    assert list(df["name"]) == [r.name for r in rows]
    for r, (_, rec) in zip(rows, df.iterrows(), strict=True):
        assert rec["output_elements"] == math.prod(r.output_shape), r.name
        assert rec["output_shape"] == "×".join(str(d) for d in r.output_shape)
        assert rec["params"] == r.params and rec["calls"] == r.calls and rec["depth"] == r.depth
    modules = dict(model.named_modules())
    leaf = df["name"].map(lambda n: not any(True for _ in modules[n].children()))
    assert int(df.loc[leaf, "params"].sum()) == sum(p.numel() for p in model.parameters())
    fc = df.set_index("name").loc["fc"]
    assert fc["output_elements"] == 1000 and fc["input_shape"] == ("1×512" if fixture == "resnet18" else "1×2048")


def test_no_hooks_left_on_error(resnet18):
    model = resnet18.model

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    model.layer3.forward = boom
    try:
        with pytest.raises(RuntimeError, match="boom"):
            layer_summary(model, X)
    finally:
        del model.layer3.forward
    assert count_hooks(model) == 0
    assert len(layer_summary(model, X)) == len(list(model.modules())) - 1
    assert count_hooks(model) == 0
