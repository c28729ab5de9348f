"""patch(), sweep(), mean_ablate() and steer() against hand-written forward hooks.

The oracle is the plain PyTorch way of patching: one forward hook keeps the source's output of a
layer, another returns it (or part of it, or the mean, or the output plus a direction) for x, each
registered here by hand on tiny seeded models: a conv net, a torchvision ViT (tokens with a class
token, channels last) and a torchvision Swin (channels-last maps).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torchvision.models.swin_transformer import SwinTransformer
from torchvision.models.vision_transformer import VisionTransformer

from tests.helpers import count_hooks
from vizhooks.errors import CodedError
from vizhooks.hooks import patching
from vizhooks.hooks.patching import (
    class_direction,
    gradient_direction,
    mean_ablate,
    mean_direction,
    patch,
    photo_classes,
    steer,
    sweep,
)
from vizhooks.models.layers import UnknownLayerError


class _Count(nn.Module):
    """Counts the forward passes (and the images in them) that reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.passes = 0
        self.images = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.passes += 1
        self.images += x.shape[0]
        return x


def _seeded(build: Callable[[], nn.Module], seed: int = 0) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build().eval()


def _tiny() -> nn.Module:
    """conv -> bn -> relu (in place) -> conv -> relu -> conv -> pool -> linear, with a pass counter."""
    return _seeded(lambda: nn.Sequential(OrderedDict(
        count=_Count(), conv1=nn.Conv2d(3, 8, 3, padding=1), bn1=nn.BatchNorm2d(8), relu1=nn.ReLU(inplace=True),
        conv2=nn.Conv2d(8, 12, 3, stride=2, padding=1), relu2=nn.ReLU(), conv3=nn.Conv2d(12, 16, 3, padding=1),
        pool=nn.AdaptiveAvgPool2d(1), flat=nn.Flatten(), fc=nn.Linear(16, 10),
    )))


def _vit() -> VisionTransformer:
    def build() -> VisionTransformer:
        model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32,
                                  num_classes=10)
        nn.init.normal_(model.heads.head.weight)  # torchvision starts the head at zero: every logit would be 0
        return model

    return _seeded(build)


def _swin() -> SwinTransformer:
    return _seeded(lambda: SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[1, 1], num_heads=[1, 1],
                                           window_size=[2, 2], num_classes=10))


def _photos(n: int = 2, side: int = 16, seed: int = 1) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 3, side, side, generator=g) for _ in range(n)]


def _by_hand(model: nn.Module, x: torch.Tensor, source: torch.Tensor, layer: str,
             put: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain PyTorch: keep the source's output of ``layer``, then return ``put(x's, source's)`` for x.
    Returns (patched logits, source logits)."""
    module = model.get_submodule(layer)
    kept: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda m, a, out: kept.append(out.detach().clone()))
    try:
        with torch.no_grad():
            source_logits = model(source)
    finally:
        handle.remove()
    handle = module.register_forward_hook(lambda m, a, out: put(out, kept[0]))
    try:
        with torch.no_grad():
            patched = model(x)
    finally:
        handle.remove()
    return patched[0], source_logits[0]


def _replace(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    return src


def test_patch_equals_a_hook_that_returns_the_sources_output() -> None:
    model = _tiny()
    x, source = _photos()
    for layer in ("conv2", "relu2", "conv3"):
        r = patch(model, x, source, layer)
        patched, source_logits = _by_hand(model, x, source, layer, _replace)
        with torch.no_grad():
            clean = model(x)[0]
        assert r.layer == layer
        assert r.logits.shape == (10,)
        torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-6)
        torch.testing.assert_close(r.source, source_logits, rtol=0, atol=1e-6)
        torch.testing.assert_close(r.clean, clean, rtol=0, atol=1e-6)
        assert r.target == int(source_logits.argmax())
        t = r.target
        want = float((patched[t] - clean[t]) / (source_logits[t] - clean[t]))
        assert r.restored == pytest.approx(want, rel=1e-4)
    assert count_hooks(model) == 0


def test_patching_the_first_conv_whole_gives_the_sources_logits() -> None:
    model = _tiny()
    x, source = _photos()
    r = patch(model, x, source, "conv1")
    assert torch.equal(r.logits, r.source)
    assert r.restored == pytest.approx(1.0, abs=1e-6)
    assert not torch.equal(r.clean, r.source)
    assert patch(model, x, source, "conv1", target=3).target == 3


def test_channel_and_region_patches_equal_hand_written_hooks() -> None:
    model = _tiny()
    x, source = _photos()

    def channels(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[:, [1, 5]] = src[:, [1, 5]]
        return new

    def region(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[:, :, 2:5, 1:7] = src[:, :, 2:5, 1:7]
        return new

    def both(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[:, 3, 0:2, 4:8] = src[:, 3, 0:2, 4:8]
        return new

    for kwargs, put in (({"channels": [1, 5]}, channels), ({"region": (2, 1, 5, 7)}, region),
                        ({"channels": [3], "region": (0, 4, 2, 8)}, both)):
        r = patch(model, x, source, "conv3", **kwargs)
        patched, _ = _by_hand(model, x, source, "conv3", put)
        torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-6)
        assert not torch.equal(r.logits, r.source)


def test_sweep_equals_separate_patch_calls_in_few_passes() -> None:
    model = _tiny()
    counter = model.get_submodule("count")
    x, source = _photos()
    layers = ["conv1", "bn1", "relu1", "conv2", "conv3"]
    separate = [patch(model, x, source, layer, channels=[0, 2]) for layer in layers]
    for batch_size in (1, 2, 16):
        counter.passes = counter.images = 0
        swept = sweep(model, x, source, layers, channels=[0, 2], batch_size=batch_size)
        # the source once, x once (shapes), then one pass per batch of layers
        assert counter.passes == 2 + -(-len(layers) // batch_size)
        assert counter.images == 2 + len(layers)
        assert [r.layer for r in swept] == layers
        for one, many in zip(separate, swept, strict=True):
            torch.testing.assert_close(many.logits, one.logits, rtol=0, atol=1e-5)
            assert many.restored == pytest.approx(one.restored, abs=1e-4)
            assert torch.equal(many.source, one.source) and many.target == one.target
    assert count_hooks(model) == 0
    assert [r.layer for r in sweep(model, x, source, "all")] == ["conv1", "conv2", "conv3"]


class _RowConv(nn.Conv2d):
    """A Conv2d that counts the image rows it computes."""

    rows = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += x.shape[0]
        return super().forward(x)


class _Twice(nn.Module):
    """BatchNorm in eval mode with running statistics, a conv and an in-place ReLU each used twice, a
    residual sum, an activation after the conv's second call, and a Linear on the batch folded with the
    positions (N * H * W rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = _RowConv(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.shared = _RowConv(8, 8, 3, padding=1)
        self.act = nn.GELU()
        self.mix = nn.Linear(8, 8)
        self.head = nn.Linear(8, 10)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn(self.stem(x)))
        x = self.relu(self.shared(x)) + x
        x = self.act(self.shared(x))
        n, c, h, w = x.shape
        tokens = self.mix(x.permute(0, 2, 3, 1).reshape(n * h * w, c)).reshape(n, h * w, c)
        return self.head(tokens.mean(1))


def _by_hand_every_call(model: nn.Module, x: torch.Tensor, source: torch.Tensor, layer: str,
                        channels: list[int] | None) -> torch.Tensor:
    """Plain PyTorch for a module that runs several times: the ``i``-th call for x returns the source's
    ``i``-th output (or only its ``channels``, dim 1). Returns the patched logits."""
    module = model.get_submodule(layer)
    kept: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda m, a, out: kept.append(out.detach().clone()))
    try:
        with torch.no_grad():
            model(source)
    finally:
        handle.remove()
    calls = iter(kept)

    def put(m: nn.Module, a: Any, out: torch.Tensor) -> torch.Tensor:
        src = next(calls)
        if channels is None:
            return src
        new = out.clone()
        new[:, channels] = src[:, channels]
        return new

    handle = module.register_forward_hook(put)
    try:
        with torch.no_grad():
            return model(x)[0]
    finally:
        handle.remove()


def test_sweep_equals_hand_written_hooks_on_shared_modules_and_batchnorm() -> None:
    """The batched pass starts each copy where its layer is (the work before was done in x's own run):
    a shared module, BatchNorm's running statistics and a folded batch must not tell the copies apart."""
    model = _seeded(_Twice)
    x, source = _photos()
    layers = ["shared", "head", "act", "stem", "relu", "bn"]  # not in the order they run
    for batch_size, channels in ((1, None), (4, None), (16, None), (1, [0, 2]), (4, [0, 2]), (16, [0, 2])):
        swept = sweep(model, x, source, layers, batch_size=batch_size, channels=channels)
        assert [r.layer for r in swept] == layers
        for r in swept:
            torch.testing.assert_close(r.logits, _by_hand_every_call(model, x, source, r.layer, channels),
                                       rtol=0, atol=1e-5)
        if channels is None:
            assert swept[1].restored == pytest.approx(1.0, abs=1e-6)  # the head patched: the source's logits
    assert count_hooks(model) == 0


def test_sweep_does_not_redo_the_work_before_each_copys_layer() -> None:
    model = _seeded(_Twice)
    stem, shared = model.get_submodule("stem"), model.get_submodule("shared")
    x, source = _photos()
    sweep(model, x, source, ["shared", "stem", "bn"])
    # the source and x once each; then the 3 copies in one pass: the stem computes none of them (each
    # equals x there); the shared conv's first call only the copies patched at the stem and at bn, its
    # second call those and the one patched at its first call
    assert stem.rows == 2
    assert shared.rows == 2 * 2 + 2 + 3


def test_sweep_keeps_a_bounded_prefix_and_still_equals_hand_written_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _seeded(_Twice)
    stem, shared = model.get_submodule("stem"), model.get_submodule("shared")
    x, source = _photos()
    # room for the stem's and bn's outputs only (8 x 16 x 16 floats each): the shared conv runs on every copy
    monkeypatch.setattr(patching, "_PREFIX_BYTES", 2 * 8 * 16 * 16 * 4)
    swept = sweep(model, x, source, ["shared", "stem", "act"], channels=[1, 3])
    assert stem.rows == 2
    assert shared.rows == 2 * 2 + 2 * 3
    for r in swept:
        torch.testing.assert_close(r.logits, _by_hand_every_call(model, x, source, r.layer, [1, 3]), rtol=0, atol=1e-5)
    assert count_hooks(model) == 0


def test_sweep_with_batch_statistics_in_eval_mode_equals_hand_written_hooks() -> None:
    """A BatchNorm without running statistics normalises over the batch even in eval mode: the copies
    of x must not run in one batch there."""
    model = _seeded(lambda: nn.Sequential(OrderedDict(
        conv1=nn.Conv2d(3, 8, 3, padding=1), bn=nn.BatchNorm2d(8, track_running_stats=False), relu=nn.ReLU(),
        conv2=nn.Conv2d(8, 8, 3, padding=1), pool=nn.AdaptiveAvgPool2d(1), flat=nn.Flatten(), fc=nn.Linear(8, 10))))
    x, source = _photos()
    layers = ["conv1", "bn", "conv2"]
    for r in sweep(model, x, source, layers):
        patched, _ = _by_hand(model, x, source, r.layer, _replace)
        torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-5)
    assert count_hooks(model) == 0


def test_mean_ablate_equals_a_hook_that_returns_the_mean_and_caches_it() -> None:
    model = _tiny()
    x = _photos(1, seed=7)[0]
    photos = torch.cat(_photos(5, seed=3))
    kept: list[torch.Tensor] = []
    handle = model.get_submodule("conv2").register_forward_hook(lambda m, a, out: kept.append(out.detach().clone()))
    try:
        with torch.no_grad():
            model(photos)
    finally:
        handle.remove()
    mean = kept[0].mean(0, keepdim=True)
    for channels in (None, [2, 7]):
        def put(out: torch.Tensor, _src: torch.Tensor, channels: list[int] | None = channels) -> torch.Tensor:
            if channels is None:
                return mean.expand_as(out)
            new = out.clone()
            new[:, channels] = mean[:, channels]
            return new

        patched, _ = _by_hand(model, x, x, "conv2", put)
        r = mean_ablate(model, x, "conv2", photos, channels=channels)
        with torch.no_grad():
            clean = model(x)[0]
        torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-5)
        torch.testing.assert_close(r.clean, clean, rtol=0, atol=1e-6)
        assert r.target == int(clean.argmax())
        assert r.change == pytest.approx(float(patched[r.target] - clean[r.target]), abs=1e-5)
    counter = model.get_submodule("count")
    counter.passes = 0
    again = mean_ablate(model, x, "conv2", list(photos))  # the same set as a list: the cached mean
    assert counter.passes == 2
    torch.testing.assert_close(again.logits, _by_hand(model, x, x, "conv2", lambda o, s: mean.expand_as(o))[0],
                               rtol=0, atol=1e-5)
    counter.passes = 0
    mean_ablate(model, x, "conv2", photos[:3])  # another set: computed
    assert counter.passes == 3
    assert count_hooks(model) == 0


def test_steer_adds_the_direction_at_every_position() -> None:
    model = _tiny()
    x = _photos(1)[0]
    direction = torch.linspace(-1, 1, 12)
    r = steer(model, x, "conv2", direction, 2.5, target=4)
    patched, _ = _by_hand(model, x, x, "conv2", lambda out, _s: out + 2.5 * direction.view(1, 12, 1, 1))
    torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-6)
    assert r.target == 4
    with pytest.raises(CodedError) as caught:
        steer(model, x, "conv2", torch.ones(8), 1.0)
    assert caught.value.code == "patching_direction"
    assert str(caught.value) == ("The direction has 8 values but layer conv2 has 12 channels: "
                                 "give one value per channel.")
    assert count_hooks(model) == 0


def _outputs(model: nn.Module, layer: str, x: torch.Tensor) -> torch.Tensor:
    """``layer``'s output for ``x``, kept by a hand-written forward hook."""
    kept: list[torch.Tensor] = []
    handle = model.get_submodule(layer).register_forward_hook(lambda m, a, out: kept.append(out.detach().clone()))
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    return kept[0]


def test_mean_direction_is_the_difference_of_the_channel_means() -> None:
    model = _tiny()
    toward = torch.cat(_photos(3, side=16, seed=2))
    away = _photos(1, side=24, seed=3)[0]  # another size: only the means are compared
    direction = mean_direction(model, toward, away, "conv2")
    by_hand = _outputs(model, "conv2", toward).mean(dim=(0, 2, 3)) - _outputs(model, "conv2", away).mean(dim=(0, 2, 3))
    torch.testing.assert_close(direction, by_hand, rtol=0, atol=1e-5)
    # steering by it with scale 1 gives every channel of the steered photo the other photos' mean
    steered, _ = _by_hand(model, away, away, "conv2", lambda out, _s: out + direction.view(1, 12, 1, 1))
    torch.testing.assert_close(steer(model, away, "conv2", direction, 1.0).logits, steered, rtol=0, atol=1e-5)
    # ViT tokens: the channels are the last dim, the class token one more position
    vit = _vit()
    a, b = _photos(side=32)
    layer = "encoder.layers.encoder_layer_0"
    torch.testing.assert_close(mean_direction(vit, a, b, layer),
                               _outputs(vit, layer, a).mean(dim=(0, 1)) - _outputs(vit, layer, b).mean(dim=(0, 1)),
                               rtol=0, atol=1e-5)
    assert count_hooks(model) == 0 and count_hooks(vit) == 0


def test_vit_tokens_are_patched_on_their_last_dim_and_patch_grid() -> None:
    model = _vit()
    x, source = _photos(side=32)
    layer = "encoder.layers.encoder_layer_0"  # (N, 1 + 4 * 4, 16): class token first

    def channels(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[:, :, [0, 9]] = src[:, :, [0, 9]]
        return new

    def region(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        # rows 1-2, columns 2-3 of the 4 x 4 patch grid: tokens 1 + 4 * row + column
        tokens = [1 + 4 * row + col for row in (1, 2) for col in (2, 3)]
        new = out.clone()
        new[:, tokens] = src[:, tokens]
        return new

    for kwargs, put in (({"channels": [0, 9]}, channels), ({"region": (1, 2, 3, 4)}, region),
                        ({}, _replace)):
        r = patch(model, x, source, layer, **kwargs)
        patched, _ = _by_hand(model, x, source, layer, put)
        torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-5)
        assert (r.logits - r.clean).abs().max() > 1e-3  # the patch changed the answer
    assert count_hooks(model) == 0


def test_swin_channels_last_maps_are_patched_on_their_last_dim() -> None:
    model = _swin()
    x, source = _photos(side=32)
    layer = "features.1"  # a stage of blocks: (N, 8, 8, 8), channels last

    def channels(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[..., [1, 6]] = src[..., [1, 6]]
        return new

    def region(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[:, 0:3, 5:8, :] = src[:, 0:3, 5:8, :]
        return new

    for kwargs, put in (({"channels": [1, 6]}, channels), ({"region": (0, 5, 3, 8)}, region)):
        r = patch(model, x, source, layer, **kwargs)
        patched, _ = _by_hand(model, x, source, layer, put)
        torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-5)
        assert (r.logits - r.clean).abs().max() > 1e-3  # the patch changed the answer
    assert count_hooks(model) == 0


def test_different_shapes_are_one_sentence_and_leave_no_hooks() -> None:
    model = _tiny()
    x = _photos(1, side=16)[0]
    bigger = _photos(1, side=20)[0]
    with pytest.raises(CodedError) as caught:
        patch(model, x, bigger, "conv2")
    assert caught.value.code == "patching_shapes"
    assert str(caught.value) == "The two photos give conv2 maps of 8x8 and 10x10: use the same size."
    assert count_hooks(model) == 0
    # after global pooling both sizes give the same shape: that layer can be patched
    assert patch(model, x, bigger, "flat").restored == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(CodedError) as caught:
        mean_ablate(model, x, "conv3", bigger)
    assert caught.value.code == "patching_mean_shapes"
    assert str(caught.value) == "The sample photos give conv3 maps of 10x10 and this photo 8x8: use the same size."
    assert count_hooks(model) == 0


@pytest.mark.parametrize(("call", "error", "code"), [
    (lambda m, x, s: patch(m, x, s, "conv9"), UnknownLayerError, None),
    (lambda m, x, s: patch(m, x, s, "conv2", channels=[12]), CodedError, "patching_channel"),
    (lambda m, x, s: patch(m, x, s, "conv2", region=(0, 0, 9, 2)), CodedError, "patching_region"),
    (lambda m, x, s: patch(m, x, s, "conv2", channels=[]), ValueError, None),
    (lambda m, x, s: patch(m, torch.cat([x, x]), s, "conv2"), ValueError, None),
    (lambda m, x, s: sweep(m, x, s, ["conv1", "conv2"], batch_size=0), ValueError, None),
    (lambda m, x, s: patch(m, x, s, "conv2", target=10), ValueError, None),
    (lambda m, x, s: mean_ablate(m, x, "conv2", []), ValueError, None),
    (lambda m, x, s: mean_ablate(m, "photo.jpg", "conv2", s), ValueError, None),
    (lambda m, x, s: steer(m, x, "conv2", torch.ones(2, 6), 1.0), ValueError, None),
])
def test_refusals_are_sentences_and_leave_the_model_as_it_was(call: Callable[..., Any], error: type[Exception],
                                                              code: str | None) -> None:
    model = _tiny()
    model.train()
    x, source = _photos()
    with pytest.raises(error) as caught:
        call(model, x, source)
    if code is not None:
        assert getattr(caught.value, "code", None) == code
    message = str(caught.value)
    assert message.endswith(".") and "\n" not in message
    assert count_hooks(model) == 0
    assert all(m.training for m in model.modules())
    assert all(p.requires_grad for p in model.parameters())


def test_a_model_in_training_mode_is_patched_in_eval_mode_and_put_back() -> None:
    model = _tiny().train()
    x, source = _photos()
    r = patch(model, x, source, "conv2")
    model.eval()
    patched, _ = _by_hand(model, x, source, "conv2", _replace)
    torch.testing.assert_close(r.logits, patched, rtol=0, atol=1e-6)
    model.train()
    sweep(model, x, source, ["conv1", "conv3"])
    mean_ablate(model, x, "conv1", source)
    steer(model, x, "conv1", torch.ones(8), 0.5)
    assert all(m.training for m in model.modules())
    assert all(p.requires_grad and p.grad is None for p in model.parameters())
    assert count_hooks(model) == 0


def test_the_mean_cache_holds_a_few_sets_per_model() -> None:
    model = _tiny()
    x = _photos(1)[0]
    for seed in range(patching._MEANS_PER_MODEL + 3):
        mean_ablate(model, x, "conv1", _photos(1, seed=100 + seed)[0])
    assert len(patching._means[model]) == patching._MEANS_PER_MODEL


def test_a_model_bundle_is_patched_as_its_network(resnet18) -> None:
    """Every other vizhooks function takes a ModelBundle; patching did not (a TypeError from the lock,
    found by the CUDA check): the bundle's answers are those of its .model."""
    x, source = _photos(2, side=32)
    net = resnet18.model
    pairs = [(patch(resnet18, x, source, "layer2.0.conv1"), patch(net, x, source, "layer2.0.conv1")),
             (sweep(resnet18, x, source, ["conv1", "layer3"])[1], sweep(net, x, source, ["conv1", "layer3"])[1])]
    for bundled, bare in pairs:
        assert torch.equal(bundled.logits, bare.logits) and bundled.restored == bare.restored
    photos = torch.cat(_photos(3, side=32, seed=4))
    assert torch.equal(mean_ablate(resnet18, x, "layer1", photos).logits, mean_ablate(net, x, "layer1", photos).logits)
    direction = torch.ones(64)
    assert torch.equal(steer(resnet18, x, "layer1", direction, 0.5).logits,
                       steer(net, x, "layer1", direction, 0.5).logits)
    assert count_hooks(net) == 0


class _OneChannelHead(nn.Module):
    """A planted model: ``feat`` copies the colours into channels 0-2 (1x1 conv, identity), and class c
    reads only channel c's mean (an identity head). Red photos are class 0, green ones class 1."""

    def __init__(self) -> None:
        super().__init__()
        self.feat = nn.Conv2d(3, 3, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(3, 3)
        with torch.no_grad():
            self.feat.weight.copy_(torch.eye(3)[:, :, None, None])
            self.feat.bias.zero_()
            self.head.weight.copy_(torch.eye(3))
            self.head.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.feat(x)).flatten(1))


def _coloured(levels: list[float], channel: int, side: int = 8) -> torch.Tensor:
    photos = torch.zeros(len(levels), 3, side, side)
    for i, level in enumerate(levels):
        photos[i, channel] = level
    return photos


def test_class_direction_is_the_class_mean_minus_the_others_and_raises_that_class() -> None:
    model = _OneChannelHead().eval()
    red, green = _coloured([0.6, 1.0], channel=0), _coloured([0.5, 0.7, 0.9], channel=1)
    photos = torch.cat([red, green])
    assert photo_classes(model, photos) == [0, 0, 1, 1, 1]
    direction = class_direction(model, photos, "feat", toward=0)
    # the right answer by construction: red's mean (0.8 in channel 0) minus green's (0.7 in channel 1)
    torch.testing.assert_close(direction, torch.tensor([0.8, -0.7, 0.0]), rtol=0, atol=1e-6)
    by_hand = _outputs(model, "feat", red).mean(dim=(0, 2, 3)) - _outputs(model, "feat", green).mean(dim=(0, 2, 3))
    torch.testing.assert_close(direction, by_hand, rtol=0, atol=1e-6)
    # steering a green photo along it: class 0's logit rises by scale x 0.8, green's falls by scale x 0.7
    x = green[:1]
    r = steer(model, x, "feat", direction, 1.0, target=0)
    steered, _ = _by_hand(model, x, x, "feat", lambda out, _s: out + direction.view(1, 3, 1, 1))
    torch.testing.assert_close(r.logits, steered, rtol=0, atol=1e-6)
    assert r.change == pytest.approx(0.8, abs=1e-6)
    assert float(r.logits[1] - r.clean[1]) == pytest.approx(-0.7, abs=1e-6)
    assert int(r.clean.argmax()) == 1 and int(r.logits.argmax()) == 0
    # labels given by hand, and a class to start from: here the same photos, so the same direction
    torch.testing.assert_close(class_direction(model, photos, "feat", 0, labels=[0, 0, 1, 1, 1], away=1), direction)
    assert count_hooks(model) == 0


def test_class_direction_without_photos_of_a_class_is_one_sentence() -> None:
    model = _OneChannelHead().eval()
    photos = _coloured([0.5, 0.9], channel=1)
    with pytest.raises(CodedError) as caught:
        class_direction(model, photos, "feat", toward=2)
    assert caught.value.code == "steer_no_class"
    assert str(caught.value) == ("None of the 2 photos is of class 2: pick a class that some of them show, "
                                 "or add photos of it.")
    with pytest.raises(CodedError) as caught:
        class_direction(model, photos, "feat", toward=1)
    assert caught.value.code == "steer_no_others"
    assert str(caught.value) == ("All the photos are of class 1, so there is nothing to compare them with: "
                                 "add photos of other classes.")
    with pytest.raises(ValueError, match="one class per photo"):
        class_direction(model, photos, "feat", toward=1, labels=[1])
    assert count_hooks(model) == 0


def test_gradient_direction_of_a_planted_head_is_the_class_channel() -> None:
    # class c reads channel c's mean over the 8 x 8 map: each position's gradient is 1/64 in channel c only
    model = _OneChannelHead().eval()
    green = _coloured([0.5, 0.9], channel=1)
    torch.testing.assert_close(gradient_direction(model, green, "feat", toward=0),
                               torch.tensor([1 / 64, 0.0, 0.0]), rtol=0, atol=1e-7)
    unit = gradient_direction(model, green, "feat", toward=0, length=2.0)
    torch.testing.assert_close(unit, torch.tensor([2.0, 0.0, 0.0]), rtol=0, atol=1e-6)
    r = steer(model, green[:1], "feat", unit, 1.0, target=0)  # a green photo pushed towards red
    assert r.change == pytest.approx(2.0, abs=1e-6) and int(r.logits.argmax()) == 0
    assert count_hooks(model) == 0


def test_gradient_direction_is_the_autograd_gradient_averaged_over_photos_and_positions() -> None:
    model = _tiny()
    photos = torch.cat(_photos(5, side=16, seed=3))
    # bn1's output is changed in place by relu1 right after: differentiate with respect to a leaf
    # put where bn1's output goes, the rest of the network run from it by hand
    with torch.no_grad():
        a = model.bn1(model.conv1(photos))
    leaf = a.clone().requires_grad_(True)
    logits = model[3:](leaf * 1)  # relu1 works in place: on a copy of the leaf
    (grad,) = torch.autograd.grad(logits[:, 7].sum(), leaf)
    expected = grad.mean(dim=(0, 2, 3))
    # batches of 2 of the 5 photos: the mean is over every photo and position, not per batch
    found = gradient_direction(model, photos, "bn1", toward=7, batch_size=2)
    torch.testing.assert_close(found, expected, rtol=1e-5, atol=1e-8)
    torch.testing.assert_close(found.norm(), expected.norm())
    scaled = gradient_direction(model, list(photos), "bn1", toward=7, length=3.0)
    torch.testing.assert_close(scaled, expected * 3.0 / expected.norm(), rtol=1e-5, atol=1e-7)
    assert all(p.grad is None for p in model.parameters())  # no gradient left on the weights
    assert count_hooks(model) == 0


def test_gradient_direction_of_vit_tokens_is_along_the_last_dim() -> None:
    model = _vit()
    photos = torch.cat(_photos(2, side=32, seed=5))
    kept: list[torch.Tensor] = []
    handle = model.encoder.layers[0].register_forward_hook(lambda m, a, out: kept.append(out))
    logits = model(photos)
    handle.remove()
    (grad,) = torch.autograd.grad(logits[:, 3].sum(), kept[0])
    found = gradient_direction(model, photos, "encoder.layers.encoder_layer_0", toward=3)
    torch.testing.assert_close(found, grad.mean(dim=(0, 1)), rtol=1e-5, atol=1e-8)
    assert found.shape == (16,) and count_hooks(model) == 0


def test_gradient_direction_refuses_in_one_sentence() -> None:
    model = _OneChannelHead().eval()
    photos = _coloured([0.5], channel=1)
    with pytest.raises(ValueError, match="class index from 0 to 2"):
        gradient_direction(model, photos, "feat", toward=3)
    with pytest.raises(ValueError, match="above 0"):
        gradient_direction(model, photos, "feat", toward=0, length=0.0)
    with pytest.raises(UnknownLayerError):
        gradient_direction(model, photos, "nope", toward=0)
    with torch.no_grad():
        model.head.weight[2].zero_()  # class 2 reads nothing: its gradient is 0 and has no length
    with pytest.raises(ValueError, match="gradient is 0"):
        gradient_direction(model, photos, "feat", toward=2, length=1.0)
    assert count_hooks(model) == 0


def test_steer_keeps_later_layers_maps_with_and_without_the_steering() -> None:
    model = _tiny()
    (x,) = _photos(1)
    direction = torch.linspace(-1, 1, 8)
    r = steer(model, x, "conv1", direction, 2.0, capture=["conv2", "conv3", "conv1"])
    assert list(r.activations) == list(r.activations_before) == ["conv2", "conv3"]  # not the steered layer
    for layer in ("conv2", "conv3"):
        kept: list[torch.Tensor] = []
        handle = model.get_submodule(layer).register_forward_hook(
            lambda m, a, out, kept=kept: kept.append(out.clone()))
        _by_hand(model, x, x, "conv1", lambda out, _s: out + 2.0 * direction.view(1, 8, 1, 1))
        handle.remove()
        # kept: the source's plain run, then x's steered run
        torch.testing.assert_close(r.activations_before[layer], kept[0], rtol=0, atol=1e-6)
        torch.testing.assert_close(r.activations[layer], kept[1], rtol=0, atol=1e-6)
        assert not torch.allclose(kept[0], kept[1])
    assert steer(model, x, "conv1", direction, 2.0).activations == {}
    assert count_hooks(model) == 0


class _Folded(nn.Module):
    """A planted model whose Linear runs on the batch folded with the positions: conv -> (N * H * W, C)
    rows -> Linear ``mix`` -> back to (N, H * W, C) -> mean -> head. ``mix``'s output has 64 rows for one
    8 x 8 photo, so no photo's output can be told apart in it."""

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


_FOLDED = ("Layer mix gives 64 rows for a batch of 1, not one row per photo (the model folds positions into the "
           "batch there), so it cannot be patched: choose a layer with one row per photo, such as the block around "
           "it.")


@pytest.mark.parametrize("call", [
    lambda m, x, s: patch(m, x, s, "mix"),
    lambda m, x, s: patch(m, x, s, "mix", channels=[1]),
    lambda m, x, s: patch(m, x, s, "mix", region=(0, 0, 1, 1)),
    lambda m, x, s: sweep(m, x, s, ["conv", "mix", "head"]),
    lambda m, x, s: sweep(m, x, s, ["head", "mix"], batch_size=1),
    lambda m, x, s: mean_ablate(m, x, "mix", torch.cat([s, x, s])),
    lambda m, x, s: mean_ablate(m, x, "mix", torch.cat([s, x]), channels=[0, 2]),
], ids=["patch", "channels", "region", "sweep", "sweep-one-at-a-time", "mean", "mean-channels"])
def test_a_layer_that_folds_the_batch_is_one_sentence_and_leaves_the_model_as_it_was(call: Callable[..., Any]) -> None:
    model = _seeded(_Folded).train()
    x, source = _photos(side=8)
    with pytest.raises(CodedError) as caught:
        call(model, x, source)
    assert caught.value.code == "patching_batch"
    assert str(caught.value) == _FOLDED
    assert count_hooks(model) == 0
    assert all(m.training for m in model.modules())
    assert all(p.requires_grad and p.grad is None for p in model.parameters())
    # the model is unharmed: the layers around the folded one still patch as a hand-written hook does
    model.eval()
    for layer in ("conv", "head"):
        by_hand, _ = _by_hand(model, x, source, layer, _replace)
        torch.testing.assert_close(patch(model, x, source, layer).logits, by_hand, rtol=0, atol=1e-6)
    assert count_hooks(model) == 0


def test_steering_a_layer_that_folds_the_batch_adds_the_direction_to_every_row() -> None:
    """Steering needs no photo's own rows (the same vector goes to every position), so it is not refused."""
    model = _seeded(_Folded)
    (x,) = _photos(1, side=8)
    direction = torch.tensor([0.5, -1.0, 2.0, 0.25])
    r = steer(model, x, "mix", direction, 1.5)
    by_hand, _ = _by_hand(model, x, x, "mix", lambda out, _s: out + 1.5 * direction)
    torch.testing.assert_close(r.logits, by_hand, rtol=0, atol=1e-6)
    assert not torch.allclose(r.logits, r.clean)
    assert count_hooks(model) == 0


class _Const(nn.Module):
    """Returns one learned (1, C, 1, 1) tensor whatever the batch: an output without a row per photo that
    one photo cannot tell from a batch dim."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.value = nn.Parameter(torch.randn(1, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value


class _WithConst(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.const = _Const(6)
        self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
        self.head = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv1(x)
        y = torch.relu(y + self.const(y))
        return self.head(self.conv2(y).mean((2, 3)))


def test_sweep_runs_a_layer_whose_output_is_one_for_the_whole_batch_one_copy_at_a_time() -> None:
    """Patching such a layer in a batch of copies would patch every copy (or fail on the second row):
    its batch runs its copies one at a time and equals hand-written hooks."""
    model = _seeded(_WithConst)
    x, source = _photos(side=8)
    layers = ["conv1", "const", "conv2"]  # const is the second copy of the batch
    swept = sweep(model, x, source, layers, batch_size=3)
    for r in swept:
        torch.testing.assert_close(r.logits, _by_hand(model, x, source, r.layer, _replace)[0], rtol=0, atol=1e-6)
    assert count_hooks(model) == 0


@pytest.mark.slow
def test_the_lessons_patching_step_on_a_layer_that_folds_the_batch_exits_2_with_the_sentence(
        tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line reaches patch sweeps through the lesson's handout: timm's TNT runs its pixel
    embedding conv on the photo's 196 patches as a batch of their own."""
    from tests.helpers import ROOT
    from vizhooks.__main__ import main

    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    out = tmp_path / "lesson.html"
    code = main(["lesson", "--photo", str(ROOT / "sample_images/astronaut.jpg"), "--model", "timm:tnt_s_patch16_224",
                 "--weights", "none", "--layers", "pixel_embed.proj", "--format", "html", "--plan", "patching",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    sentence = _FOLDED.replace("Layer mix gives 64 rows", "Layer pixel_embed.proj gives 196 rows")
    assert err.splitlines()[-1] == f"vizhooks: error: {sentence}"  # after the model line
    assert "Traceback" not in err
    assert not out.exists()
