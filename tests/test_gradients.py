"""Gradient hooks against an independent route: torch.fx feature extraction + torch.autograd.grad.

The oracle never uses a hook: it traces a copy of the model (every ReLU made out-of-place, so no
activation is rewritten after it is returned), takes the chosen nodes and the logits as plain
graph outputs and differentiates one logit with respect to them.
"""

from __future__ import annotations

import copy
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor

from tests.helpers import count_hooks
from vizhooks.hooks.gradients import BackwardRecord, backward_report, capture_gradients, gradient_pass
from vizhooks.hooks.summary import layer_summary
from vizhooks.interpret.cam import grad_cam

R18_LAYERS = ["conv1", "bn1", "layer1.0.conv2", "layer2.0.downsample.0", "layer3.1.bn2", "layer4.1.conv2"]
R50_LAYERS = ["conv1", "layer1.0.conv3", "layer3.2.conv2", "layer4.2.conv3"]


def _oracle(model: nn.Module, x: torch.Tensor, layers: list[str], target: int | None):
    """(gradients, activations, logits, target) from fx + autograd.grad, no hooks involved."""
    clone = copy.deepcopy(model).eval()
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    extractor = create_feature_extractor(clone, return_nodes=[*layers, "fc"])
    xg = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        out = extractor(xg)
        logits = out["fc"]
        index = int(logits[0].argmax()) if target is None else target
        grads = torch.autograd.grad(logits[0, index], [out[n] for n in layers])
    return (
        {n: g.detach() for n, g in zip(layers, grads, strict=True)},
        {n: out[n].detach() for n in layers},
        logits.detach(),
        index,
    )


# ----------------------------------------------------------------------------------------------
# values


@pytest.mark.slow
@pytest.mark.parametrize("target", [None, 7])
@pytest.mark.parametrize(("fixture", "layers"), [("resnet18", R18_LAYERS), ("resnet50", R50_LAYERS)],
                         ids=["resnet18", "resnet50"])
def test_capture_gradients_matches_autograd_grad(request, fixture, layers, target, image_tensor):
    model = request.getfixturevalue(fixture).model
    want, _, _, _ = _oracle(model, image_tensor, layers, target)
    got = capture_gradients(model, image_tensor, layers, target=target)
    assert set(got) == set(layers)
    for name in layers:
        assert got[name].shape == want[name].shape, name
        assert got[name].abs().max() > 0, name  # a missed hook would give zeros
        torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-4, msg=name)
    assert count_hooks(model) == 0


@pytest.mark.slow
def test_bn1_gradient_is_taken_before_the_inplace_relu(resnet18, image_tensor):
    # d logit / d bn1-output differs from d logit / d relu-output exactly where bn1's output is
    # negative (ReLU's gradient there is 0): check the hook saw the pre-ReLU value's gradient.
    want, acts, _, _ = _oracle(resnet18.model, image_tensor, ["bn1", "relu"], None)
    got = capture_gradients(resnet18.model, image_tensor, ["bn1"])["bn1"]
    negative = acts["bn1"] < 0
    assert negative.any()
    assert torch.all(want["bn1"][negative] == 0)
    assert want["relu"][negative].abs().max() > 0  # the post-ReLU gradient really is different there
    torch.testing.assert_close(got, want["bn1"], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_gradient_pass_target_and_logits(resnet18, image_tensor):
    model = resnet18.model
    _, acts, oracle_logits, top1 = _oracle(model, image_tensor, ["layer4.1.conv2"], None)
    result = gradient_pass(model, image_tensor, ["layer4.1.conv2"])
    assert result.target == top1 == int(oracle_logits[0].argmax())
    with torch.no_grad():
        plain = model(image_tensor)
    assert result.logits.shape == (1, 1000)
    torch.testing.assert_close(result.logits, plain, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(result.activations["layer4.1.conv2"], acts["layer4.1.conv2"], rtol=1e-5, atol=1e-5)
    explicit = gradient_pass(model, image_tensor, ["layer4.1.conv2"], target=7)
    assert explicit.target == 7


@pytest.mark.parametrize("target", [-1, 1000, 2.5, True])
def test_bad_target_is_value_error(resnet18, image_tensor, target):
    with pytest.raises(ValueError):
        capture_gradients(resnet18.model, image_tensor, ["conv1"], target=target)
    assert count_hooks(resnet18.model) == 0


def test_unknown_layer_is_key_error(resnet18, image_tensor):
    with pytest.raises(KeyError):
        capture_gradients(resnet18.model, image_tensor, ["layer9.conv"])
    assert count_hooks(resnet18.model) == 0


# ----------------------------------------------------------------------------------------------
# the model is given back exactly as it came


def _children(model):
    return [n for n, _ in model.named_children()]


CALLS = {
    "capture_gradients": lambda m, x: capture_gradients(m, x, ["bn1", "layer1.0.conv2", "layer4.1.conv2"]),
    "grad_cam": lambda m, x: grad_cam(m, x, "layer4.1.conv2"),
    "backward_report": lambda m, x: backward_report(m, x, _children(m)),
    "layer_summary": lambda m, x: layer_summary(m, x),
}


def _boom(*args, **kwargs):
    raise RuntimeError("boom from layer3")


def _disturb(model: nn.Module):
    """Give the model an unusual state: some frozen params, some with .grad, layer2 training."""
    params = list(model.parameters())
    for i, p in enumerate(params):
        if i % 3 == 0:
            p.requires_grad_(False)
        if i % 4 == 1:
            p.grad = torch.full_like(p, 0.5)
    model.layer2.train()


def _reset(model: nn.Module, saved_state: dict) -> None:
    if "forward" in vars(model.layer3):
        del model.layer3.forward
    model.load_state_dict(saved_state)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(True)
        p.grad = None


@pytest.mark.parametrize("raises", [False, True], ids=["ok", "forward-raises"])
@pytest.mark.parametrize("fn", list(CALLS))
def test_state_is_restored(resnet18, fn, raises):
    model = resnet18.model
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(3))
    saved_state = {k: v.clone() for k, v in model.state_dict().items()}
    hooks_before = count_hooks(model)
    try:
        _disturb(model)
        params = list(model.parameters())
        requires = [p.requires_grad for p in params]
        grads = [p.grad for p in params]
        grad_values = [None if g is None else g.clone() for g in grads]
        training = {n: m.training for n, m in model.named_modules()}
        assert model.layer2.training and not model.training  # the disturbed state is really mixed
        if raises:
            model.layer3.forward = _boom
            with pytest.raises(RuntimeError, match="boom"):
                CALLS[fn](model, x)
            del model.layer3.forward
        else:
            CALLS[fn](model, x)
        assert count_hooks(model) == hooks_before
        assert [p.requires_grad for p in params] == requires
        for p, g, v in zip(params, grads, grad_values, strict=True):
            assert p.grad is g
            if v is not None:
                assert torch.equal(p.grad, v)  # not accumulated into
        assert {n: m.training for n, m in model.named_modules()} == training
    finally:
        _reset(model, saved_state)
    assert all(p.requires_grad and p.grad is None for p in model.parameters()) and not model.training


@pytest.mark.parametrize(("fn", "raises"), [
    pytest.param(fn, raises, id=f"{fn}-{'forward-raises' if raises else 'ok'}",
                 marks=pytest.mark.slow if fn in ("grad_cam", "backward_report") and not raises else ())
    for raises in (False, True) for fn in CALLS])
def test_batchnorm_statistics_untouched(resnet18, fn, raises):
    # layer2 is put in training mode beforehand: a pass that does not switch to eval mode would
    # update its BatchNorm running statistics.
    model = resnet18.model
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(4))
    saved_state = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        model.layer2.train()
        buffers = {n: b.clone() for n, b in model.named_buffers()}
        if raises:
            model.layer3.forward = _boom
            with pytest.raises(RuntimeError, match="boom"):
                CALLS[fn](model, x)
            del model.layer3.forward
        else:
            CALLS[fn](model, x)
        changed = [n for n, b in model.named_buffers() if not torch.equal(b, buffers[n])]
        assert changed == [], f"{fn} changed BatchNorm buffers: {changed[:4]}"
    finally:
        _reset(model, saved_state)


# ----------------------------------------------------------------------------------------------
# full backward hooks


def _io_shapes(model: nn.Module, x: torch.Tensor, names: list[str]) -> dict[str, tuple]:
    """(input shape, output shape) of each module's first call, from forward hooks on a copy."""
    clone = copy.deepcopy(model).eval()
    modules = dict(clone.named_modules())
    shapes: dict[str, tuple] = {}

    def make_hook(name):
        def hook(module, args, out):  # returns None: the output is left alone
            shapes.setdefault(name, (tuple(args[0].shape), tuple(out.shape)))

        return hook

    handles = [modules[n].register_forward_hook(make_hook(n)) for n in names]
    try:
        with torch.no_grad():
            clone(x)
    finally:
        for h in handles:
            h.remove()
    return shapes


@pytest.mark.slow
def test_backward_report_resnet18_children(resnet18, image_tensor):
    model = resnet18.model
    names = _children(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = backward_report(model, image_tensor, names)
    assert all(isinstance(r, BackwardRecord) for r in records)
    assert [r.name for r in records] == [
        "fc", "avgpool", "layer4", "layer3", "layer2", "layer1", "maxpool", "relu", "bn1", "conv1",
    ]
    shapes = _io_shapes(model, image_tensor, names)
    modules = dict(model.named_modules())
    for r in records:
        assert r.type == type(modules[r.name]).__name__
        if r.name in ("relu", "bn1"):
            assert not r.supported and r.note, r.name
            assert r.grad_input is None and r.grad_output is None
            continue
        assert r.supported and r.note == "", r.name
        in_shape, out_shape = shapes[r.name]
        assert r.grad_input == (in_shape,), r.name
        assert r.grad_output == (out_shape,), r.name
    by_name = {r.name: r for r in records}
    assert by_name["fc"].grad_input == ((1, 512),) and by_name["fc"].grad_output == ((1, 1000),)
    assert by_name["conv1"].grad_input == (tuple(image_tensor.shape),)
    assert by_name["layer4"].grad_output == ((1, 512, 3, 4),)
    assert count_hooks(model) == 0


class _Scale(nn.Module):
    def forward(self, a, k):  # k is a plain number: its grad_input entry is None
        return a * k


class _TwoOut(nn.Module):
    def forward(self, a):  # the second output does not require grad: its grad_output entry is None
        return a * 2, torch.ones_like(a).detach()


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()
        self.scale = _Scale()
        self.two = _TwoOut()
        self.fc = nn.Linear(48, 5)

    def forward(self, x):
        x = self.flat(x)
        a, b = self.two(self.scale(x, 3.0))
        return self.fc(a + b)


def test_backward_report_keeps_none_entries():
    torch.manual_seed(0)
    model = _Tiny().eval()
    x = torch.randn(1, 3, 4, 4)
    records = backward_report(model, x, ["flat", "scale", "two", "fc"])
    assert [r.name for r in records] == ["fc", "two", "scale", "flat"]
    by_name = {r.name: r for r in records}
    assert by_name["scale"].grad_input == ((1, 48), None)
    assert by_name["scale"].grad_output == ((1, 48),)
    assert by_name["two"].grad_input == ((1, 48),)
    assert by_name["two"].grad_output == ((1, 48), None)
    assert by_name["flat"].grad_input == ((1, 3, 4, 4),)
    assert all(r.supported for r in records)
    assert count_hooks(model) == 0


@pytest.mark.slow
def test_naive_full_backward_hook_on_bn1_really_fails(resnet18, image_tensor):
    # The reason backward_report marks bn1 unsupported: the in-place ReLU after it rewrites the
    # view the full backward hook returns, which autograd refuses.
    clone = copy.deepcopy(resnet18.model).eval()
    handle = clone.bn1.register_full_backward_hook(lambda module, gi, go: None)
    try:
        with pytest.raises(RuntimeError):
            clone(image_tensor.clone().requires_grad_(True))
    finally:
        handle.remove()
    assert count_hooks(clone) == 0
    clone.relu.inplace = False  # and without the in-place ReLU the same hook works
    seen = []
    handle = clone.bn1.register_full_backward_hook(lambda module, gi, go: seen.append(go[0].shape))
    try:
        clone(image_tensor.clone().requires_grad_(True))[0, 0].backward()
    finally:
        handle.remove()
    assert seen == [torch.Size([1, 64, 48, 64])]


# ----------------------------------------------------------------------------------------------
# threads


@pytest.mark.slow
def test_threads_get_the_same_results_as_sequential_calls(resnet18):
    model = resnet18.model
    layers = ["layer1.0.conv2", "layer3.1.bn2", "layer4.1.conv2"]
    g = torch.Generator().manual_seed(5)
    inputs = [torch.randn(1, 3, 64, 64, generator=g) for _ in range(4)]
    sequential = [capture_gradients(model, x, layers) for x in inputs]
    barrier = threading.Barrier(4)

    def work(x):
        barrier.wait()
        return capture_gradients(model, x, layers)

    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(work, inputs))
    for seq, par in zip(sequential, parallel, strict=True):
        assert list(par) == layers
        for name in layers:
            torch.testing.assert_close(par[name], seq[name], rtol=1e-5, atol=1e-6)
    # the inputs differ, so would the results: a mix-up between threads could not go unnoticed
    assert not torch.allclose(sequential[0]["layer4.1.conv2"], sequential[1]["layer4.1.conv2"])
    assert count_hooks(model) == 0
