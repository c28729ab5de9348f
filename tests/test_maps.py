"""vizhooks.models.maps: every captured tensor as a (1, C, H, W) map. Each case starts from a map built here
and the layout a network would give it (channels last, a token sequence with a class token, a
pooled vector), so the right answer is the map we started from.

The module list of Swin is checked against the shapes its modules really give on the meta device,
read with plain forward hooks and a shape rule written out here."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from vizhooks.models.maps import as_map, channels_last_modules, maps_of


def _map(c: int, h: int, w: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(1, c, h, w, generator=torch.Generator().manual_seed(seed))


def test_conv_maps_come_back_unchanged():
    m = _map(64, 56, 56)
    assert as_map(m, (224, 224)) is m


def test_channels_last_maps_are_found_and_permuted():
    m = _map(96, 56, 40)  # a 224 x 160 input at stride 4
    got = as_map(m.permute(0, 2, 3, 1).contiguous(), (224, 160))
    assert got.shape == (1, 96, 56, 40) and torch.equal(got, m)
    # told explicitly, the shapes are not looked at
    assert torch.equal(as_map(m.permute(0, 2, 3, 1), (1000, 1000), channels_last=True), m)
    assert as_map(m, (224, 160), channels_last=False) is m


@pytest.mark.parametrize("hw", [(224, 224), (97, 301)])
def test_ambiguous_shapes_stay_channels_first(hw):
    # (1, 8, 8, 8) for a 64 x 64 input: both pairs could be a downsampled picture, so nothing moves
    m = _map(8, 8, 8)
    assert as_map(m, (64, 64)) is m
    # the channel count happens to be a downsampled size, but the last pair is the picture's: NCHW
    m = _map(hw[0] // 4, hw[0] // 4, hw[1] // 4)
    assert as_map(m, hw) is m


def _tokens(m: torch.Tensor, prefix: int) -> torch.Tensor:
    """(1, D, h, w) as a ViT's sequence: ``prefix`` extra tokens, then the patches row by row."""
    d = m.shape[1]
    extra = torch.full((1, prefix, d), 1e6)  # a class token nowhere near the patches' values
    return torch.cat([extra, m.flatten(2).transpose(1, 2)], dim=1)


@pytest.mark.parametrize(("hw", "grid", "prefix"), [
    ((224, 224), (14, 14), 1),  # ViT-B/16: the class token and 196 patches
    ((224, 160), (14, 10), 1),  # a picture that is not square, 16-pixel patches
    ((224, 224), (7, 7), 0),  # Swin's last stage as tokens: no class token
    ((224, 224), (14, 14), 2),  # DeiT: class and distillation tokens
])
def test_token_sequences_become_the_patch_grid_without_the_extra_tokens(hw, grid, prefix):
    m = _map(12, *grid, seed=3)
    got = as_map(_tokens(m, prefix), hw)
    assert got.shape == (1, 12, *grid) and torch.equal(got, m)


def test_tokens_that_fit_no_grid_are_a_column():
    t = torch.randn(1, 7, 5)  # 7 tokens cannot be any patch grid of 224 x 224, with or without extras
    got = as_map(t, (224, 224))
    assert got.shape == (1, 5, 7, 1) and torch.equal(got[0, :, :, 0], t[0].T)


def test_vectors_are_one_pixel_maps_and_other_shapes_a_sentence():
    v = torch.randn(1, 1000)
    got = as_map(v, (224, 224))
    assert got.shape == (1, 1000, 1, 1) and torch.equal(got.flatten(), v.flatten())
    for bad in (torch.randn(5), torch.randn(1, 2, 3, 4, 5)):
        with pytest.raises(ValueError, match=re.escape(f"Cannot show a tensor of shape {tuple(bad.shape)} as")):
            as_map(bad, (224, 224))


def _nhwc(shape: tuple[int, ...], hw: tuple[int, int]) -> bool:
    """The test's own rule, for a picture whose sizes no channel count equals: (N, h, w, C) with (h, w)
    the picture divided by a power of two."""
    return len(shape) == 4 and any(shape[1:3] == (hw[0] // 2 ** k, hw[1] // 2 ** k) for k in range(7))


def test_swins_channels_last_modules_are_those_that_output_nhwc():
    from vizhooks.models.registry import meta_model

    model, lock = meta_model("swin_t")
    hw = (256, 192)  # spatial sizes 64x48 ... 8x6: none is a channel count (96 ... 768)
    outputs: dict[str, tuple[int, ...]] = {}

    def keep(name: str):
        def hook(module: nn.Module, args: object, out: torch.Tensor) -> None:
            outputs.setdefault(name, tuple(out.shape))

        return hook

    with lock:
        handles = [m.register_forward_hook(keep(n)) for n, m in model.named_modules() if n]
        try:
            with torch.no_grad():
                model(torch.empty(1, 3, *hw, device="meta"))
        finally:
            for h in handles:
                h.remove()
        known = channels_last_modules(model)
    nhwc = {n for n, shape in outputs.items() if _nhwc(shape, hw)}
    # every block's, stage's and merging's channels-last maps are known; the whole of ``features`` and
    # the final norm are not, and there as_map's shape rule alone must turn them (last pair: a grid
    # side by 768 channels, never a picture's size)
    assert {n for n in nhwc if n.startswith("features.")} <= known
    assert nhwc - known == {"features", "norm"}
    for name in nhwc - known:
        n, h, w, c = outputs[name]
        assert as_map(torch.zeros(n, h, w, c), hw).shape == (n, c, h, w), name
    called_4d = {n for n in known if n in outputs and len(outputs[n]) == 4}
    assert called_4d <= nhwc  # and no module known as channels last gives NCHW
    assert "features.0.0" not in known  # the patch embedding's conv is still NCHW
    assert "permute" not in known  # the last Permute gives NCHW back (was listed as channels last)
    assert {"features.1.0", "features.2", "features.7.1"} <= known  # a block, a patch merging, the last block


def test_resnet_has_no_channels_last_module():
    from vizhooks.models.registry import meta_model

    assert channels_last_modules(meta_model("resnet18")[0]) == set()


class PatchMerging(nn.Module):  # named as torchvision's: known by its class name
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_maps_of_uses_what_is_known_of_the_modules_and_every_call():
    model = nn.Sequential()
    model.add_module("merge", PatchMerging())
    model.add_module("conv", nn.Conv2d(8, 8, 1))
    m = _map(8, 8, 8, seed=5)  # ambiguous on its own for a 64 x 64 picture (see above)
    nhwc = m.permute(0, 2, 3, 1).contiguous()
    got = maps_of(model, {"merge": nhwc, "merge#2": nhwc, "conv": m, "conv#2": m, "tokens": _tokens(m, 1)}, (64, 64))
    assert torch.equal(got["merge"], m) and torch.equal(got["merge#2"], m)  # known: permuted, every call
    assert got["conv"] is m and got["conv#2"] is m
    assert got["tokens"].shape == (1, 8, 8, 8) and torch.equal(got["tokens"], m)


def test_cam_map_takes_maps_and_a_vits_token_grid_and_refuses_the_rest():
    """What a CAM weighs (review 2026-12-06: tokens that make no patch grid became a one-pixel column, and an
    (N, C, h, w) map was permuted by a guess from its sizes in the audit but not in explain)."""
    from vizhooks.models.maps import cam_map

    conv = torch.randn(2, 64, 8, 8)
    assert cam_map(conv, (32, 32), channels_last=False) is conv
    swin = torch.randn(2, 8, 8, 768)  # a channels-last block the module list lacks: read by its sizes, as the page
    assert cam_map(swin, (256, 256), channels_last=False).shape == (2, 768, 8, 8)
    assert cam_map(torch.randn(2, 16, 16, 3), (32, 32), channels_last=True).shape == (2, 3, 16, 16)
    tokens = torch.randn(2, 1 + 16, 8)  # a class token and a 4 x 4 grid of a 32 x 32 picture in 8 x 8 patches
    grid = cam_map(tokens, (32, 32), channels_last=False)
    torch.testing.assert_close(grid, tokens[:, 1:].reshape(2, 4, 4, 8).permute(0, 3, 1, 2))
    assert cam_map(torch.randn(2, 7, 8), (32, 32), channels_last=False) is None  # 7 tokens: no grid
    assert cam_map(torch.randn(2, 8), (32, 32), channels_last=False) is None  # a vector


def test_timms_swinv2_blocks_are_known_channels_last():
    """Review 2026-12-06: timm's SwinV2 blocks ("SwinTransformerV2Block") give (N, h, w, C) and were not in the
    list, so a CAM weighed 8 "channels" of layers.3.blocks.1; the block's output is checked with a hook."""
    import timm

    from vizhooks.models.maps import channels_last_modules

    model = timm.create_model("swinv2_tiny_window8_256", pretrained=False).eval()
    seen = {}
    handle = model.get_submodule("layers.3.blocks.1").register_forward_hook(lambda m, a, out: seen.setdefault("o", out))
    with torch.no_grad():
        model(torch.randn(1, 3, 256, 256))
    handle.remove()
    assert seen["o"].shape == (1, 8, 8, 768)  # channels last
    assert {f"layers.{s}.blocks.{b}" for s in range(4) for b in (0, 1)} <= channels_last_modules(model)
