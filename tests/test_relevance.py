"""Channel relevance and conditional heatmaps (vizhooks.interpret.relevance) against independent
answers: Taylor against torch.autograd.grad, ablation against a hand-written hook per channel, LRP
and its conditional maps against Zennit called here directly, and a planted model whose class
reads one channel only. Tiny models (resnet18 with weights=None and ten classes on 32x32-48x48
photos, a hand-built VGG-BN-like net, a one-layer ViT), so the file runs in seconds."""

from __future__ import annotations

import copy

import pytest
import torch
import torchvision
from helpers import count_hooks
from torch import nn

from vizhooks.i18n import english
from vizhooks.interpret.relevance import (
    METHODS,
    RelevanceError,
    channel_relevance,
    conditional_heatmap,
    conditional_heatmaps,
    lrp_heatmap,
    taylor_relevances,
)
from vizhooks.models.layers import UnknownLayerError


def _settled(model: nn.Module) -> nn.Module:
    """BatchNorm with statistics and affine parameters away from the identity, so merging it matters."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(m.num_features, generator=g) * 0.2 - 0.1)
    return model.eval()


@pytest.fixture(scope="module")
def tiny_resnet() -> nn.Module:
    torch.manual_seed(0)
    return _settled(torchvision.models.resnet18(weights=None, num_classes=10))


def _vgg_bn() -> nn.Module:
    torch.manual_seed(0)
    return _settled(nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5)))


def _tiny_vit() -> nn.Module:
    torch.manual_seed(0)
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2,
                                                hidden_dim=16, mlp_dim=32, num_classes=4).eval()


def _photo(side: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.randn(1, 3, side, side, generator=torch.Generator().manual_seed(seed))


def _output_of(model: nn.Module, layer: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, the layer's output tensor in the graph), by a plain hook written here."""
    kept = []
    handle = model.get_submodule(layer).register_forward_hook(lambda m, a, out: kept.append(out))
    try:
        logits = model(x)
    finally:
        handle.remove()
    return logits, kept[0]


# --- Taylor ----------------------------------------------------------------------------------


@pytest.mark.parametrize("layer", ["layer1.0.conv1", "layer3.1.conv2", "layer4"])
def test_taylor_is_activation_times_autograd_gradient(tiny_resnet, layer):
    x = _photo(32)
    found = channel_relevance(tiny_resnet, x, layer, method="taylor")
    model = copy.deepcopy(tiny_resnet)
    logits, act = _output_of(model, layer, x.clone().requires_grad_(True))
    target = int(logits[0].argmax())
    (grad,) = torch.autograd.grad(logits[0, target], act)
    expected = (act.detach() * grad).sum(dim=(0, 2, 3))
    assert found.target == target and found.method == "taylor" and found.layer == layer
    assert found.logit == pytest.approx(float(logits[0, target].detach()), rel=1e-5)
    torch.testing.assert_close(found.scores, expected, rtol=1e-4, atol=1e-6)
    assert torch.equal(found.order, torch.argsort(found.scores, descending=True, stable=True))


def test_taylor_on_vit_tokens_uses_the_embedding_channels():
    model, x = _tiny_vit(), _photo(32)
    found = channel_relevance(model, x, "encoder.layers.encoder_layer_0", target=2, method="taylor")
    logits, act = _output_of(copy.deepcopy(model), "encoder.layers.encoder_layer_0", x.clone().requires_grad_(True))
    (grad,) = torch.autograd.grad(logits[0, 2], act)
    torch.testing.assert_close(found.scores, (act.detach() * grad).sum(dim=(0, 1)), rtol=1e-4, atol=1e-6)
    assert found.scores.shape == (16,)


def test_taylor_of_many_layers_at_once_is_activation_times_autograd_gradient_of_each(tiny_resnet):
    """One pass for several layers (nested ones too) gives each layer what autograd gives it here."""
    layers = ["conv1", "layer2.0.conv1", "layer4.1.conv2", "layer4"]
    x = _photo(32, seed=3)
    found = taylor_relevances(tiny_resnet, x, layers, target=7)
    model = copy.deepcopy(tiny_resnet)
    kept = {}
    handles = [model.get_submodule(n).register_forward_hook(lambda m, a, out, n=n: kept.setdefault(n, out))
               for n in layers]
    try:
        logits = model(x.clone().requires_grad_(True))
    finally:
        for handle in handles:
            handle.remove()
    grads = torch.autograd.grad(logits[0, 7], [kept[n] for n in layers])
    assert list(found) == layers
    for name, grad in zip(layers, grads, strict=True):
        assert found[name].target == 7 and found[name].method == "taylor" and found[name].layer == name
        torch.testing.assert_close(found[name].scores, (kept[name].detach() * grad).sum(dim=(0, 2, 3)),
                                   rtol=1e-4, atol=1e-6)
    assert count_hooks(tiny_resnet) == 0
    assert {n: r.target for n, r in taylor_relevances(tiny_resnet, x, ["layer1"]).items()} == {
        "layer1": int(logits[0].argmax())}


# --- ablation --------------------------------------------------------------------------------


def _ablation_by_hand(model: nn.Module, x: torch.Tensor, layer: str, target: int, dim: int = 1) -> torch.Tensor:
    """One forward pass per channel, each with a hook written here that zeroes that channel."""
    module = model.get_submodule(layer)
    with torch.no_grad():
        base = model(x)[0, target]
        channels = _output_of(model, layer, x)[1].shape[dim]
        scores = []
        for c in range(channels):
            def zero(m, a, out, c=c):
                out = out.clone()
                out.select(dim, c).zero_()
                return out
            handle = module.register_forward_hook(zero)
            try:
                scores.append(base - model(x)[0, target])
            finally:
                handle.remove()
    return torch.stack(scores)


# layer1.0.bn2's output is rewritten in place by the block's `out += identity`
@pytest.mark.parametrize(("layer", "batch_size"), [("layer1.0.bn2", 24), ("layer1", 100)])
def test_ablation_equals_one_hooked_pass_per_channel(tiny_resnet, layer, batch_size):
    x = _photo(16, seed=3)
    found = channel_relevance(tiny_resnet, x, layer, target=4, method="ablation", batch_size=batch_size)
    expected = _ablation_by_hand(tiny_resnet, x, layer, 4)
    torch.testing.assert_close(found.scores, expected, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        logit = float(tiny_resnet(x)[0, 4])
    assert found.target == 4 and found.logit == pytest.approx(logit, rel=1e-5)


def test_ablation_on_a_vgg_bn_net():
    model, x = _vgg_bn(), _photo(16, seed=1)
    found = channel_relevance(model, x, "4", target=3, method="ablation", batch_size=5)
    torch.testing.assert_close(found.scores, _ablation_by_hand(model, x, "4", 3), rtol=1e-4, atol=1e-6)


def test_ablation_on_vit_tokens_zeroes_one_embedding_channel():
    model, x = _tiny_vit(), _photo(32)
    found = channel_relevance(model, x, "encoder.layers.encoder_layer_0", target=1, method="ablation", batch_size=5)
    expected = _ablation_by_hand(model, x, "encoder.layers.encoder_layer_0", 1, dim=2)
    torch.testing.assert_close(found.scores, expected, rtol=1e-4, atol=1e-5)


def test_ablation_runs_the_photo_once_and_batches_only_the_layers_after(tiny_resnet):
    inputs, heads = [], []
    handles = [tiny_resnet.register_forward_pre_hook(lambda m, args: inputs.append(args[0].shape[0])),
               tiny_resnet.fc.register_forward_pre_hook(lambda m, args: heads.append(args[0].shape[0]))]
    try:
        channel_relevance(tiny_resnet, _photo(16), "layer1.0.conv1", method="ablation", batch_size=25)
    finally:
        for handle in handles:
            handle.remove()
    assert inputs == [1, 1, 1, 1]  # the photo alone each time: every copy is the same up to the layer
    assert heads == [1, 26, 25, 14]  # 64 channels in three passes; the first one carries the check row


class _Suffix(nn.Module):
    """A conv, the ablated ReLU, then layers after it that cannot take a batch grown at the ReLU:
    ``cat`` joins an earlier tensor, ``flatten`` reshapes by the input's batch size before a Linear,
    ``mean`` reshapes the same way and averages, which runs without error into the wrong shape."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.kind = kind
        self.conv, self.act = nn.Conv2d(3, 6, 3, padding=1), nn.ReLU()
        self.head = nn.Linear(12 if kind == "cat" else 6 * 8 * 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, early = x.shape[0], self.conv(x)
        late = self.act(early)
        if self.kind == "cat":
            return self.head(torch.cat([early, late], 1).mean((2, 3)))
        if self.kind == "flatten":
            return self.head(late.reshape(n, -1))
        return late.reshape(n, -1).mean(1, keepdim=True) * torch.arange(1.0, 4.0)


@pytest.mark.parametrize("kind", ["cat", "flatten", "mean"])
def test_ablation_sends_whole_copies_when_the_later_layers_cannot_take_the_grown_batch(kind):
    model, x = _Suffix(kind).eval(), _photo(8, seed=2)
    inputs: list[int] = []
    handle = model.register_forward_pre_hook(lambda m, args: inputs.append(args[0].shape[0]))
    try:
        found = channel_relevance(model, x, "act", target=2, method="ablation", batch_size=4)
    finally:
        handle.remove()
    torch.testing.assert_close(found.scores, _ablation_by_hand(model, x, "act", 2), rtol=1e-4, atol=1e-6)
    assert inputs == [1, 1, 4, 2]  # the photo, the failed shared pass, then whole copies
    assert count_hooks(model) == 0


# --- LRP against Zennit --------------------------------------------------------------------------


def _zennit(model: nn.Module, x: torch.Tensor, layer: str | None, target: int, canonizers: list,
            keep: list[int] | None = None) -> tuple[torch.Tensor | None, torch.Tensor, float]:
    """Zennit called directly on a copy: (relevance at the layer's output, input relevance, logit),
    with only the channels ``keep`` passing relevance at the layer when given (zennit-crp's mask)."""
    from zennit.composites import EpsilonPlusFlat

    model = copy.deepcopy(model)
    for m in model.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    composite = EpsilonPlusFlat(canonizers=canonizers)
    kept: dict[str, torch.Tensor] = {}
    with composite.context(model) as modified:
        handle = None
        if layer is not None:
            def hook(m, a, out):
                def at(grad):
                    kept["r"] = grad.clone()
                    if keep is None:
                        return grad
                    mask = torch.zeros(grad.shape[1])
                    mask[keep] = 1
                    return grad * mask[None, :, None, None]
                out.register_hook(at)
            handle = modified.get_submodule(layer).register_forward_hook(hook)
        xg = x.clone().requires_grad_(True)
        out = modified(xg)
        start = torch.zeros_like(out)
        start[0, target] = out[0, target].detach()
        (relevance,) = torch.autograd.grad(out, xg, grad_outputs=start)
        if handle is not None:
            handle.remove()
    return kept.get("r"), relevance, float(out[0, target].detach())


def _resnet_canonizers() -> list:
    from zennit.torchvision import ResNetCanonizer

    return [ResNetCanonizer()]


def _vgg_canonizers() -> list:
    from zennit.torchvision import VGGCanonizer

    return [VGGCanonizer()]


@pytest.mark.parametrize("layer", ["layer2.0.conv2", "layer3", "layer4.1"])
def test_lrp_scores_equal_zennit_called_directly(tiny_resnet, layer):
    x = _photo(32, seed=5)
    found = channel_relevance(tiny_resnet, x, layer, target=7, method="lrp")
    at_layer, _, logit = _zennit(tiny_resnet, x, layer, 7, _resnet_canonizers())
    torch.testing.assert_close(found.scores, at_layer[0].sum(dim=(1, 2)), rtol=1e-4, atol=1e-6)
    assert found.logit == pytest.approx(logit, rel=1e-5)


def test_lrp_on_a_vgg_bn_net_merges_batchnorm_as_zennit_does():
    model, x = _vgg_bn(), _photo(32, seed=2)
    found = channel_relevance(model, x, "4", method="lrp")
    target = int(model(x)[0].argmax())
    at_layer, relevance, _ = _zennit(model, x, "4", target, _vgg_canonizers())
    torch.testing.assert_close(found.scores, at_layer[0].sum(dim=(1, 2)), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(lrp_heatmap(model, x), relevance[0].sum(dim=0), rtol=1e-4, atol=1e-7)
    # without merging, the input's relevance would differ: the canonizer is what makes it Zennit's answer
    _, unmerged, _ = _zennit(model, x, "4", target, [])
    assert not torch.allclose(lrp_heatmap(model, x), unmerged[0].sum(dim=0), rtol=1e-2)


def test_lrp_heatmap_equals_zennit_and_conserves_the_logit(tiny_resnet):
    x = _photo(32, seed=6)
    heat = lrp_heatmap(tiny_resnet, x, target=2)
    _, relevance, logit = _zennit(tiny_resnet, x, None, 2, _resnet_canonizers())
    torch.testing.assert_close(heat, relevance[0].sum(dim=0), rtol=1e-4, atol=1e-7)
    # conservation: what reaches the last stage is the logit, less what the head's bias absorbs
    stage = channel_relevance(tiny_resnet, x, "layer4", target=2, method="lrp")
    head_bias = tiny_resnet.fc.bias[2].item()
    assert float(stage.scores.sum()) == pytest.approx(logit - head_bias, rel=1e-3)
    assert stage.logit == pytest.approx(logit, rel=1e-5)


# --- conditional heatmaps ----------------------------------------------------------------------------


# layer4.0 carries the whole signal; layer2.0.conv2 has the block's shortcut around it, whose
# relevance reaches the photo whatever the mask (as with zennit-crp's mask on the layer's gradient)
@pytest.mark.parametrize(("layer", "groups"), [("layer4.0", (42, [3, 100, 511])), ("layer2.0.conv2", (5, [0, 7]))])
def test_conditional_heatmap_is_the_masked_relevance_of_zennit(tiny_resnet, layer, groups):
    x = _photo(32, seed=8)
    for channels in groups:
        found = conditional_heatmap(tiny_resnet, x, layer, channels, target=1)
        keep = [channels] if isinstance(channels, int) else channels
        _, relevance, _ = _zennit(tiny_resnet, x, layer, 1, _resnet_canonizers(), keep=keep)
        torch.testing.assert_close(found, relevance[0].sum(dim=0), rtol=1e-4, atol=1e-8)
        assert found.shape == (32, 32)


class _AddsInPlace(nn.Module):
    """A block written as many are by hand: ``out += shortcut`` rewrites the conv's output in place."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.shortcut = nn.Conv2d(3, 6, 3, padding=1), nn.Conv2d(3, 6, 1)
        self.head = nn.Sequential(nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv(x)
        out += self.shortcut(x)
        return self.head(out)


def test_a_conditional_map_where_the_block_rewrites_the_output_in_place():
    model, x = _AddsInPlace().eval(), _photo(16, seed=3)
    found = conditional_heatmap(model, x, "conv", [2, 5], target=0)
    _, relevance, _ = _zennit(model, x, "conv", 0, [], keep=[2, 5])
    torch.testing.assert_close(found, relevance[0].sum(dim=0), rtol=1e-4, atol=1e-8)
    assert not torch.allclose(found, lrp_heatmap(model, x, target=0), rtol=1e-3)  # the mask does matter


@pytest.mark.parametrize(("model_name", "layer"), [("resnet", "layer2.0.conv2"), ("resnet", "layer4.0"),
                                                   ("in place", "conv")])
def test_through_only_keeps_what_passed_through_the_channels(tiny_resnet, model_name, layer):
    """Zennit with the mask, less Zennit with every channel masked (what goes around the layer)."""
    model = tiny_resnet if model_name == "resnet" else _AddsInPlace().eval()
    canonizers = _resnet_canonizers if model_name == "resnet" else list
    x = _photo(32, seed=8)
    maps = conditional_heatmaps(model, x, layer, [3, [0, 5]], target=1, through_only=True)
    _, around, _ = _zennit(model, x, layer, 1, canonizers(), keep=[])
    for found, keep in zip(maps, ([3], [0, 5]), strict=True):
        _, relevance, _ = _zennit(model, x, layer, 1, canonizers(), keep=keep)
        torch.testing.assert_close(found, (relevance - around)[0].sum(dim=0), rtol=1e-4, atol=1e-7)
    if layer == "layer4.0":  # the whole signal passes through: nothing goes around
        assert float(around.abs().max()) < 1e-6
    else:  # the shortcut's part is large, and the default map keeps it
        assert float(around.abs().sum()) > float(maps[0].abs().sum())
        assert not torch.allclose(maps[0], conditional_heatmap(model, x, layer, 3, 1), rtol=1e-2)


@pytest.mark.parametrize(("net", "layer", "channels"), [("resnet", "layer1", 64), ("vgg", "6", 16)])
def test_per_channel_maps_add_up_to_the_full_map(tiny_resnet, net, layer, channels):
    model, x = (tiny_resnet, _photo(16, seed=9)) if net == "resnet" else (_vgg_bn(), _photo(16, seed=4))
    maps = conditional_heatmaps(model, x, layer, [[c] for c in range(channels)], target=3, batch_size=64)
    full = lrp_heatmap(model, x, target=3)
    assert maps.shape == (channels, 16, 16)
    torch.testing.assert_close(maps.sum(dim=0), full, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(conditional_heatmap(model, x, layer, list(range(channels)), 3), full,
                               rtol=1e-5, atol=1e-8)
    # one channel's map is its own: the batched maps equal single calls
    torch.testing.assert_close(maps[11], conditional_heatmap(model, x, layer, 11, 3), rtol=1e-5, atol=1e-9)


# --- a planted model: the class reads one channel ---------------------------------------------------


class _Planted(nn.Module):
    """Class 0 reads channel 5 of ``features`` only; class 1 reads channel 2 only. Every channel is
    active (positive weights and biases on a positive photo), so activation alone does not tell."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Conv2d(3, 6, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.features = nn.Conv2d(6, 8, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 2)
        with torch.no_grad():
            for conv in (self.stem, self.features):
                conv.weight.uniform_(0.0, 0.2)
                conv.bias.fill_(0.1)
            self.features.weight[5] *= 0.2  # the channel that matters is not the most active
            self.head.weight.zero_()
            self.head.bias.zero_()
            self.head.weight[0, 5] = 3.0
            self.head.weight[1, 2] = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.relu2(self.features(self.relu1(self.stem(x))))).flatten(1))


@pytest.mark.parametrize("method", METHODS)
def test_every_method_ranks_the_planted_channel_first(method):
    model = _Planted().eval()
    x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    for target, planted in ((0, 5), (1, 2)):
        found = channel_relevance(model, x, "features", target, method=method)
        assert int(found.order[0]) == planted, (method, target)
        others = torch.cat([found.scores[:planted], found.scores[planted + 1:]])
        assert float(found.scores[planted]) > 0 and torch.all(others.abs() < 1e-6), (method, target)
        assert found.rank(planted) == 1 and found.share(planted) == pytest.approx(1.0)
    # activation alone would pick another channel for class 0
    with torch.no_grad():
        mean = model.relu2(model.features(model.relu1(model.stem(x)))).mean(dim=(0, 2, 3))
    assert int(mean.argmax()) != 5


# --- hook hygiene and state --------------------------------------------------------------------------


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def _prepare(model: nn.Module) -> nn.Module:
    model.train()
    model.conv1.weight.requires_grad_(False)
    model.fc.weight.grad = torch.full_like(model.fc.weight, 0.5)
    return model


def _check_restored(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    assert count_hooks(model) == 0
    assert model.training and all(m.training for m in model.modules())
    assert not model.conv1.weight.requires_grad and model.fc.weight.requires_grad
    assert torch.equal(model.fc.weight.grad, torch.full_like(model.fc.weight, 0.5))
    assert all(p.grad is None for n, p in model.named_parameters() if n != "fc.weight")
    after = _state(model)
    assert all(torch.equal(before[k], after[k]) for k in before)  # bit-identical, BatchNorm statistics too
    assert all(m.inplace for m in model.modules() if isinstance(m, nn.ReLU))
    fresh = torchvision.models.resnet18(num_classes=10).modules()
    assert all(type(m) is type(o) for m, o in zip(model.modules(), fresh, strict=True))  # no canonizer left


@pytest.mark.parametrize("call", ["taylor", "ablation", "lrp", "conditional", "heatmap"])
def test_no_hook_left_and_state_restored(call):
    torch.manual_seed(0)
    model = _prepare(_settled(torchvision.models.resnet18(weights=None, num_classes=10)))
    model.train()
    before = _state(model)
    x = _photo(16)
    if call in METHODS:
        channel_relevance(model, x, "layer1.0.conv1", method=call)
    elif call == "conditional":
        conditional_heatmaps(model, x, "layer3", [1, [2, 3]])
    else:
        lrp_heatmap(model, x)
    _check_restored(model, before)


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize("call", ["taylor", "ablation", "lrp", "conditional"])
def test_a_failure_midway_leaves_no_hook(monkeypatch, call):
    torch.manual_seed(0)
    model = _prepare(_settled(torchvision.models.resnet18(weights=None, num_classes=10)))
    before = _state(model)
    # ablation runs the photo once before its batches: fail in a batch (the conditional maps' first
    # pass stops after their layer, before the pooling)
    allowed = {"taylor": 0, "ablation": 1, "lrp": 0, "conditional": 0}[call]
    pool = model.avgpool
    calls = {"n": 0}
    real = type(pool).forward

    def failing(self, x):
        calls["n"] += 1
        if calls["n"] > allowed:
            raise _Boom("mid-way")
        return real(self, x)

    monkeypatch.setattr(type(pool), "forward", failing)  # the class: LRP works on a deep copy
    with pytest.raises(_Boom) as failure:
        if call == "conditional":
            conditional_heatmaps(model, _photo(16), "layer3", [1, 2])
        else:
            channel_relevance(model, _photo(16), "layer3.1.conv1", method=call)
    monkeypatch.undo()
    assert failure.value is not None
    _check_restored(model, before)


def test_a_refusal_inside_the_pass_leaves_no_hook(tiny_resnet):
    for method in METHODS:
        with pytest.raises(RelevanceError, match=r"^target must be a class index from 0 to 9, not 10\.$"):
            channel_relevance(tiny_resnet, _photo(32), "layer2", target=10, method=method)
        assert count_hooks(tiny_resnet) == 0


# --- one sentence for bad input -------------------------------------------------------------------------


def test_unknown_layer_and_method_are_one_sentence(tiny_resnet):
    with pytest.raises(UnknownLayerError) as err:
        channel_relevance(tiny_resnet, _photo(32), "layer9", method="taylor")
    assert str(err.value).startswith("The model has no layer named 'layer9'.")
    with pytest.raises(RelevanceError) as bad:
        channel_relevance(tiny_resnet, _photo(32), "layer2", method="deeplift")
    assert str(bad.value) == "There is no relevance method 'deeplift'; choose from taylor, ablation, lrp."
    assert bad.value.code == "relevance_method"
    assert str(bad.value) == english("err_relevance_method", method="deeplift", known="taylor, ablation, lrp")
    with pytest.raises(RelevanceError, match=r"^There is no channel 512 in 'layer4'; choose channels from 0 to 511\.$"):
        conditional_heatmap(tiny_resnet, _photo(32), "layer4", 512)
    with pytest.raises(RelevanceError, match="one picture"):
        channel_relevance(tiny_resnet, torch.zeros(2, 3, 32, 32), "layer2")
    with pytest.raises(RelevanceError, match="batch_size must be a whole number"):
        channel_relevance(tiny_resnet, _photo(32), "layer2", method="ablation", batch_size=0)
    assert count_hooks(tiny_resnet) == 0


def test_lrp_on_a_vit_is_refused_naming_the_methods_that_work():
    model = _tiny_vit()
    for call in (lambda: channel_relevance(model, _photo(32), "encoder", method="lrp"),
                 lambda: conditional_heatmap(model, _photo(32), "encoder", 0), lambda: lrp_heatmap(model, _photo(32))):
        with pytest.raises(RelevanceError) as err:
            call()
        sentence = str(err.value)
        assert err.value.code == "relevance_lrp_tokens" and sentence.count(". ") == 0 and sentence.endswith(".")
        assert "'taylor'" in sentence and "'ablation'" in sentence
    assert count_hooks(model) == 0


def test_lrp_on_a_layer_without_a_map_is_one_sentence(tiny_resnet):
    with pytest.raises(RelevanceError, match=r"^LRP needs a layer whose output is a \(1, C, h, w\) map, but 'fc'"):
        channel_relevance(tiny_resnet, _photo(32), "fc", method="lrp")
    assert count_hooks(tiny_resnet) == 0
