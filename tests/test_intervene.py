"""intervene() and clamp_gradients() against answers reached without them.

Channel edits: switching off (or scaling) output channel k of a conv is the same as zeroing (or
scaling) filter k's weight and bias in a copy of the model; keep_top is redone by a plain forward
hook written here. Clipped gradients: ``torch.autograd.grad`` in two stages, with the clip applied
by hand to the gradient at the clipped layer and chained on to the earlier one.
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict

import pytest
import torch
import torchvision
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor
from torchvision.ops.misc import Permute

from tests.helpers import count_hooks
from vizhooks import ChannelEdit, UnknownLayerError, clamp_gradients, intervene


def _seeded(build, seed: int = 0) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build().eval()


def _tiny() -> nn.Sequential:
    """conv -> relu -> conv -> relu -> pool -> linear, no BatchNorm, no in-place ops."""
    return _seeded(lambda: nn.Sequential(OrderedDict(
        conv1=nn.Conv2d(3, 8, 3, padding=1), relu1=nn.ReLU(), conv2=nn.Conv2d(8, 12, 3, stride=2, padding=1),
        relu2=nn.ReLU(), pool=nn.AdaptiveAvgPool2d(1), flat=nn.Flatten(), fc=nn.Linear(12, 10),
    )))


class _Tokens(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(2).transpose(1, 2)  # (N, C, H, W) -> (N, T, C), as a ViT's patch embedding


class _MeanOver(nn.Module):
    def __init__(self, dims: tuple[int, ...]):
        super().__init__()
        self.dims = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=self.dims)


def _token_model() -> nn.Sequential:
    return _seeded(lambda: nn.Sequential(OrderedDict(
        patch=nn.Conv2d(3, 16, 8, stride=8), tokens=_Tokens(), mix=nn.Linear(16, 16), act=nn.GELU(),
        pool=_MeanOver((1,)), head=nn.Linear(16, 10),
    )))


def _channels_last_model() -> nn.Sequential:
    # torchvision's Permute is what Swin uses; vizhooks knows its output is (N, H, W, C)
    return _seeded(lambda: nn.Sequential(OrderedDict(
        patch=nn.Conv2d(3, 8, 4, stride=4), perm=Permute([0, 2, 3, 1]), mix=nn.Linear(8, 8), act=nn.GELU(),
        pool=_MeanOver((1, 2)), head=nn.Linear(8, 10),
    )))


def _image(n: int = 1, side: int = 64, seed: int = 1) -> torch.Tensor:
    return torch.randn(n, 3, side, side, generator=torch.Generator().manual_seed(seed))


def _with_filters_scaled(model: nn.Module, layer: str, channels: list[int], scale: float) -> nn.Module:
    """A copy of ``model`` whose ``layer`` (Conv2d or Linear) has output channels ``channels``
    scaled in its weight and bias."""
    clone = copy.deepcopy(model)
    module = dict(clone.named_modules())[layer]
    with torch.no_grad():
        module.weight[channels] *= scale
        module.bias[channels] *= scale
    return clone


def _plain(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    assert not model.training  # the answer intervene() should give: eval mode
    with torch.no_grad():
        return model(x)


# ----------------------------------------------------------------------------------------------
# edits against edited weights


@pytest.mark.parametrize(("layer", "channels", "scale"), [
    ("conv1", [3], 0.0), ("conv2", [1, 5], 0.0), ("conv1", [2], 0.5), ("conv2", [0, 4], 2.0),
])
def test_channel_edit_equals_editing_the_filter(layer, channels, scale):
    model, x = _tiny(), _image()
    result = intervene(model, x, {layer: ChannelEdit(channels=channels, scale=scale)})
    want = _plain(_with_filters_scaled(model, layer, channels, scale), x)
    assert not torch.allclose(want, result.logits_before)  # the edit really changes the answer
    torch.testing.assert_close(result.logits_after, want, rtol=0, atol=1e-5)
    assert count_hooks(model) == 0


def test_channel_off_in_squeezenet_equals_zeroed_filter():
    # a Fire module's expand conv feeds ReLU(inplace=True) and a concatenation; no BatchNorm after it
    model, x = _seeded(lambda: torchvision.models.squeezenet1_1(weights=None)), _image()
    layer, channels = "features.12.expand3x3", list(range(0, 256, 4))
    result = intervene(model, x, {layer: ChannelEdit(channels=channels)})
    want = _plain(_with_filters_scaled(model, layer, channels, 0.0), x)
    assert not torch.allclose(want, result.logits_before)
    torch.testing.assert_close(result.logits_after, want, rtol=0, atol=1e-5)
    torch.testing.assert_close(result.logits_before, _plain(model, x), rtol=0, atol=0)


@pytest.mark.parametrize(("build", "layer", "weights_of"), [
    (_token_model, "mix", "mix"),  # (N, T, D) tokens
    (_channels_last_model, "perm", "patch"),  # (N, H, W, C) from a known channels-last module
    (_channels_last_model, "mix", "mix"),  # a Linear's output: channels last whatever its rank
], ids=["tokens", "permute", "linear-nhwc"])
def test_channels_are_the_last_dim_for_tokens_and_channels_last_maps(build, layer, weights_of):
    model, x = build(), _image()
    result = intervene(model, x, {layer: ChannelEdit(channels=[2, 5])})
    want = _plain(_with_filters_scaled(model, weights_of, [2, 5], 0.0), x)
    assert not torch.allclose(want, result.logits_before)
    torch.testing.assert_close(result.logits_after, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("scale", [0.0, 0.5])
def test_keep_top_matches_a_hook_written_here(scale):
    model, k = _tiny(), 3
    x = torch.cat([_image(), _image(seed=2) + 2.0])  # two images whose strongest channels differ
    tops = []

    def keep_top_by_hand(module, args, output):
        out = output.clone()
        for i in range(out.shape[0]):  # each image ranks its own channels
            order = torch.argsort(out[i].mean(dim=(1, 2)), descending=True)
            tops.append(set(order[:k].tolist()))
            out[i, order[k:]] *= scale
        return out

    clone = copy.deepcopy(model)
    clone.conv2.register_forward_hook(keep_top_by_hand)
    want = _plain(clone, x)
    assert tops[0] != tops[1]

    result = intervene(model, x, {"conv2": ChannelEdit(keep_top=k, scale=scale)}, capture=["conv2"])
    assert not torch.allclose(want, result.logits_before)
    torch.testing.assert_close(result.logits_after, want, rtol=0, atol=1e-5)
    if scale == 0.0:
        live = (result.activations["conv2"].abs().sum(dim=(2, 3)) > 0).sum(dim=1)
        assert live.tolist() == [k, k]
    assert count_hooks(model) == 0


def test_an_edit_applies_to_every_call_of_a_reused_module():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.conv = nn.Conv2d(8, 8, 3, padding=1)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            x = self.conv(torch.relu(self.conv(torch.relu(self.stem(x)))))
            return self.fc(x.mean(dim=(2, 3)))

    model, x = _seeded(Twice), _image()
    result = intervene(model, x, {"conv": ChannelEdit(channels=[6])}, capture=["conv"])
    want = _plain(_with_filters_scaled(model, "conv", [6], 0.0), x)
    torch.testing.assert_close(result.logits_after, want, rtol=0, atol=1e-5)
    assert list(result.activations) == ["conv", "conv#2"]
    for key in ("conv", "conv#2"):
        assert result.activations[key][0, 6].abs().max() == 0
        assert result.activations_before[key][0, 6].abs().max() > 0


def test_tuple_outputs_and_array_indices():
    class Pair(nn.Module):  # returns (maps, extra), like modules with auxiliary outputs
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)

        def forward(self, x):
            y = self.conv(x)
            return y, y.amax()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.pair, self.fc = Pair(), nn.Linear(6, 4)

        def forward(self, x):
            y, _ = self.pair(x)
            return self.fc(y.mean(dim=(2, 3)))

    model, x = _seeded(Net), _image()
    want = _plain(_with_filters_scaled(model, "pair.conv", [1, 4], 0.0), x)
    for channels in (torch.tensor([1, 4]), [torch.tensor(1), 4]):
        result = intervene(model, x, {"pair": ChannelEdit(channels=channels)}, capture=["pair"])
        torch.testing.assert_close(result.logits_after, want, rtol=0, atol=1e-5)
        assert result.activations["pair"][0, [1, 4]].abs().max() == 0
    assert ChannelEdit(channels=torch.tensor([1, 4])).channels == (1, 4)


# ----------------------------------------------------------------------------------------------
# the plain pass and captured activations


def test_before_is_the_plain_model_and_only_later_layers_change():
    model, x = _tiny(), _image()
    layers = ["conv1", "conv2", "relu2", "fc"]
    result = intervene(model, x, {"conv2": ChannelEdit(channels=[4])}, capture=layers)
    torch.testing.assert_close(result.logits_before, _plain(model, x), rtol=0, atol=0)
    with torch.no_grad():
        plain = create_feature_extractor(copy.deepcopy(model), return_nodes=layers)(x)
    assert list(result.activations) == list(result.activations_before) == layers
    for name in layers:
        torch.testing.assert_close(result.activations_before[name], plain[name], rtol=0, atol=1e-6)
        assert result.activations[name].device.type == "cpu"
    torch.testing.assert_close(result.activations["conv1"], result.activations_before["conv1"], rtol=0, atol=0)
    for name in ("conv2", "relu2", "fc"):
        assert not torch.allclose(result.activations[name], result.activations_before[name]), name
    # the edited layer's own capture shows the edit: channel 4 off, the rest as before
    after, before = result.activations["conv2"], result.activations_before["conv2"]
    assert after[0, 4].abs().max() == 0 and before[0, 4].abs().max() > 0
    others = [c for c in range(12) if c != 4]
    torch.testing.assert_close(after[0, others], before[0, others], rtol=0, atol=0)
    torch.testing.assert_close(result.logits_after, result.activations["fc"], rtol=0, atol=0)


def test_as_maps_gives_channel_first_maps():
    result = intervene(_token_model(), _image(), {"mix": ChannelEdit(channels=[0])}, capture=["mix", "head"],
                       as_maps=True)
    for acts in (result.activations, result.activations_before):
        assert acts["mix"].shape == (1, 16, 8, 8)
        assert acts["head"].shape == (1, 10, 1, 1)
    assert result.activations["mix"][0, 0].abs().max() == 0


def test_resnet18_keeps_its_state(resnet18):
    # BatchNorm and ReLU(inplace=True) after the edited conv; train mode must not leak into the passes
    model, x = resnet18.model, _image()
    was_training = model.training
    model.train()
    try:
        result = intervene(model, x, {"layer3.0.conv1": ChannelEdit(keep_top=8)}, capture=["layer3.0.bn1"])
        assert all(m.training for m in model.modules())
    finally:
        model.train(was_training)
    torch.testing.assert_close(result.logits_before, _plain(model, x), rtol=0, atol=0)
    assert not torch.allclose(result.logits_after, result.logits_before)
    assert count_hooks(model) == 0


# ----------------------------------------------------------------------------------------------
# bad edits: one-line sentences, no hooks left, model unchanged


def _snapshot(model: nn.Module):
    return (
        {k: v.clone() for k, v in model.state_dict().items()},
        [m.training for m in model.modules()],
        [(p.requires_grad, p.grad) for p in model.parameters()],
    )


def _assert_unchanged(model: nn.Module, snapshot) -> None:
    state, training, params = snapshot
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key
    assert [m.training for m in model.modules()] == training
    for p, (requires_grad, grad) in zip(model.parameters(), params, strict=True):
        assert p.requires_grad == requires_grad
        assert p.grad is grad
    assert count_hooks(model) == 0


@pytest.fixture
def odd_state_model():
    """The tiny model in train mode, one parameter frozen and one holding a .grad."""
    model = _tiny().train()
    model.fc.weight.requires_grad_(False)
    model.conv1.weight.grad = torch.ones_like(model.conv1.weight)
    return model


def test_success_leaves_the_model_as_it_was(odd_state_model):
    snapshot = _snapshot(odd_state_model)
    intervene(odd_state_model, _image(), {"conv1": ChannelEdit(channels=[0]), "conv2": ChannelEdit(keep_top=2)},
              capture=["relu2"])
    _assert_unchanged(odd_state_model, snapshot)


@pytest.mark.parametrize(("edits", "capture", "words"), [
    ({"conv1": ChannelEdit(channels=[8])}, (), ["'conv1'", "channel 8", "8 channels", "0 to 7"]),
    ({"conv2": ChannelEdit(channels=[0, 12])}, (), ["'conv2'", "channel 12", "0 to 11"]),
    ({"conv1": ChannelEdit(channels=[-1])}, (), ["'conv1'", "channel -1", "0 to 7"]),
    ({"conv1": ChannelEdit(channels=[])}, (), ["'conv1'", "empty"]),
    ({"conv1": ChannelEdit(channels=[1.5])}, (), ["'conv1'", "1.5"]),
    ({"conv1": ChannelEdit(channels=3)}, (), ["'conv1'", "channels=3", "channels=[0]"]),
    ({"conv1": ChannelEdit(channels=[0], scale=-1.0)}, (), ["'conv1'", "scale=-1.0", ">= 0"]),
    ({"conv1": ChannelEdit(channels=[0], scale=math.nan)}, (), ["'conv1'", "scale=nan", ">= 0"]),
    ({"conv2": ChannelEdit(keep_top=0)}, (), ["'conv2'", "keep_top=0", "at least 1"]),
    ({"conv2": ChannelEdit(keep_top=13)}, (), ["'conv2'", "keep_top=13", "12 channels", "1 to 12"]),
    ({"conv1": ChannelEdit(channels=[0], keep_top=2)}, (), ["'conv1'", "both"]),
    ({"conv1": ChannelEdit()}, (), ["'conv1'", "neither"]),
    ({"conv1": ChannelEdit(channels=[0]), "conv3": ChannelEdit(channels=[0])}, (), ["'conv3'", "conv1"]),
    ({"conv1": ChannelEdit(channels=[0])}, ["relu9"], ["'relu9'"]),
], ids=["out-of-range", "out-of-range-2nd-layer", "negative", "empty", "not-int", "not-a-list", "negative-scale",
        "nan-scale", "keep-top-0", "keep-top-too-big", "both", "neither", "unknown-layer", "unknown-capture"])
def test_bad_edits_are_one_sentence_and_leave_nothing_behind(odd_state_model, edits, capture, words):
    snapshot = _snapshot(odd_state_model)
    unknown = any(w in ("'conv3'", "'relu9'") for w in words)
    with pytest.raises(UnknownLayerError if unknown else ValueError) as info:
        intervene(odd_state_model, _image(), edits, capture=capture)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)
    _assert_unchanged(odd_state_model, snapshot)


def test_edits_must_be_a_mapping_of_channel_edits():
    model = _tiny()
    with pytest.raises(TypeError, match="mapping"):
        intervene(model, _image(), [("conv1", ChannelEdit(channels=[0]))])
    with pytest.raises(TypeError, match="'conv1'.*ChannelEdit"):
        intervene(model, _image(), {"conv1": [0]})
    with pytest.raises(ValueError, match="empty"):
        intervene(model, _image(), {})
    assert count_hooks(model) == 0


# ----------------------------------------------------------------------------------------------
# clipped gradients


def test_clamped_gradients_match_two_stage_autograd(odd_state_model):
    model, x = odd_state_model, _image()
    snapshot = _snapshot(model)
    m = copy.deepcopy(model).eval()
    xg = x.clone().requires_grad_(True)
    with torch.enable_grad():
        a1 = m.conv1(xg)
        a2 = m.conv2(m.relu1(a1))
        logits = m.fc(m.flat(m.pool(m.relu2(a2))))
        target = int(logits[0].argmax())
        g2, g1 = torch.autograd.grad(logits[0, target], [a2, a1], retain_graph=True)
        limit = 0.3 * float(g2.abs().max())
        clipped = g2.clamp(-limit, limit)
        (g1_clipped,) = torch.autograd.grad(a2, a1, grad_outputs=clipped)
    assert not torch.allclose(g1_clipped, g1)  # the clip bites

    plain, clamped = clamp_gradients(model, x, ["conv1", "conv2", "fc"], clamp_at="conv2", limit=limit)
    assert plain.target == clamped.target == target
    torch.testing.assert_close(plain.gradients["conv1"], g1, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(plain.gradients["conv2"], g2, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(clamped.gradients["conv1"], g1_clipped, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(clamped.gradients["conv2"], clipped, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(clamped.gradients["fc"], plain.gradients["fc"], rtol=0, atol=0)  # after the clip
    torch.testing.assert_close(clamped.activations["conv1"], a1.detach(), rtol=0, atol=1e-6)
    _assert_unchanged(model, snapshot)


@pytest.mark.slow
def test_clamp_before_an_inplace_relu_in_resnet18(resnet18):
    # layer2.0.bn1 feeds ReLU(inplace=True); layer1.1.conv2 reaches the logits through it and
    # through layer2.0's downsample branch, which the clip does not touch:
    #   clipped grad at early = plain grad + J_bn^T (clip(g_bn) - g_bn)
    model, x = resnet18.model, _image()
    early, at = "layer1.1.conv2", "layer2.0.bn1"
    clone = copy.deepcopy(model).eval()
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    extractor = create_feature_extractor(clone, return_nodes=[early, at, "fc"])
    with torch.enable_grad():
        out = extractor(x.clone().requires_grad_(True))
        target = int(out["fc"][0].argmax())
        g_at, g_early = torch.autograd.grad(out["fc"][0, target], [out[at], out[early]], retain_graph=True)
        limit = 0.2 * float(g_at.abs().max())
        (delta,) = torch.autograd.grad(out[at], out[early], grad_outputs=g_at.clamp(-limit, limit) - g_at)
    want = g_early + delta

    plain, clamped = clamp_gradients(model, x, [early], clamp_at=at, limit=limit)
    torch.testing.assert_close(plain.gradients[early], g_early, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(clamped.gradients[early], want, rtol=1e-4, atol=1e-6)
    assert not torch.allclose(clamped.gradients[early], plain.gradients[early], rtol=1e-3, atol=1e-6)
    assert count_hooks(model) == 0


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"clamp_at": "conv9", "limit": 1.0}, UnknownLayerError, ["'conv9'"]),
    ({"clamp_at": "conv2", "limit": -1.0}, ValueError, ["limit", "-1.0", ">= 0"]),
    ({"clamp_at": "conv2", "limit": math.nan}, ValueError, ["limit", "nan"]),
], ids=["unknown-layer", "negative", "nan"])
def test_bad_clamps_leave_nothing_behind(odd_state_model, kwargs, error, words):
    snapshot = _snapshot(odd_state_model)
    with pytest.raises(error) as info:
        clamp_gradients(odd_state_model, _image(), ["conv1"], **kwargs)
    assert "\n" not in str(info.value)
    for word in words:
        assert word in str(info.value)
    _assert_unchanged(odd_state_model, snapshot)


class _Folded(nn.Module):
    """A planted model whose Linear runs on the batch folded with the positions: conv -> (N * H * W, C)
    rows -> Linear ``mix`` -> back to (N, H * W, C) -> mean -> head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.mix = nn.Linear(4, 4)
        self.head = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        n, c, h, w = y.shape
        rows = self.mix(y.permute(0, 2, 3, 1).reshape(n * h * w, c))
        return self.head(rows.reshape(n, h * w, c).mean(1))


def test_keep_top_on_a_layer_that_folds_the_batch_is_one_sentence_and_channel_edits_still_work():
    """keep_top ranks each image's channels; on (N * H * W, C) rows it would rank each position's, so it is
    refused in one sentence. Scaling channels by number needs no image's rows: a hand-written hook agrees."""
    model = _seeded(_Folded).train()
    x = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(3))
    with pytest.raises(ValueError) as caught:
        intervene(model, x, {"mix": ChannelEdit(keep_top=2)})
    assert getattr(caught.value, "code", None) == "intervene_keep_top_batch"
    assert str(caught.value) == (
        "Layer mix gives 32 rows for a batch of 2, not one row per photo, so its strongest channels per photo "
        "cannot be found: switch channels off by number there, or choose a layer with one row per photo, such as "
        "the block around it.")
    assert count_hooks(model) == 0
    assert all(m.training for m in model.modules())
    model.eval()
    r = intervene(model, x, {"mix": ChannelEdit(channels=[1, 3], scale=0.5)})
    handle = model.mix.register_forward_hook(lambda m, a, out: out * torch.tensor([1.0, 0.5, 1.0, 0.5]))
    try:
        with torch.no_grad():
            by_hand = model(x)
    finally:
        handle.remove()
    torch.testing.assert_close(r.logits_after, by_hand, rtol=0, atol=1e-6)
    assert not torch.allclose(r.logits_after, r.logits_before)
    assert count_hooks(model) == 0
