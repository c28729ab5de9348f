"""CLIP zero-shot (``zero_shot(arch, prompts)``) on tiny open_clip models registered from a config,
with random weights (``weights="none"``): logits against open_clip's own similarity, the prompt cache,
Grad-CAM."""

from __future__ import annotations

import json
import os

import pytest
import torch
import torch.nn.functional as F

from tests.helpers import count_hooks
from vizhooks.hooks.capture import capture
from vizhooks.interpret.cam import grad_cam
from vizhooks.models.layers import block_layers
from vizhooks.models.weights import WeightsError
from vizhooks.models.zero_shot import zero_shot

os.environ["HF_HUB_OFFLINE"] = "1"

TEXT = {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}
CONFIGS = {
    "vizhooks-tiny-vit": {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 2, "width": 32,
                                                          "head_width": 16, "patch_size": 8}, "text_cfg": TEXT},
    "vizhooks-tiny-rn": {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": [1, 1, 1, 1], "width": 8},
                         "text_cfg": TEXT},
}
PROMPTS = ["a photo of a cat", "a photo of a dog", "a photo of a red mug"]


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module", autouse=True)
def tiny_configs(tmp_path_factory):
    import open_clip

    folder = tmp_path_factory.mktemp("open_clip_configs")
    for name, cfg in CONFIGS.items():
        (folder / f"{name}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(folder)


def _x(seed: int = 0) -> torch.Tensor:
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_logits_are_open_clips_own_similarity(arch):
    import open_clip

    bundle = zero_shot(arch, PROMPTS, weights="none", device="cpu")
    clip = bundle.clip
    assert isinstance(clip, open_clip.CLIP) and bundle.categories == PROMPTS and not bundle.pretrained
    x = _x()
    with torch.no_grad():
        image = F.normalize(clip.encode_image(x), dim=-1)
        text = F.normalize(clip.encode_text(open_clip.get_tokenizer(arch)(PROMPTS)), dim=-1)
        expected = clip.logit_scale.exp() * image @ text.T
        ours = bundle.model(x)
    assert ours.shape == (1, 3)
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-5)
    # seeded: the same random model every time
    other = zero_shot(arch, PROMPTS[:2], weights="none", device="cpu")
    torch.testing.assert_close(other.model(x), expected[:, :2], rtol=1e-5, atol=1e-5)


def test_prompt_embeddings_are_computed_once_per_prompt_set(monkeypatch):
    arch = "vizhooks-tiny-vit"
    clip = zero_shot(arch, PROMPTS, weights="none", device="cpu").clip
    calls: list[int] = []
    original = clip.encode_text

    def counted(tokens, *args, **kwargs):
        calls.append(len(tokens))
        return original(tokens, *args, **kwargs)

    monkeypatch.setattr(clip, "encode_text", counted)
    assert zero_shot(arch, PROMPTS, weights="none", device="cpu").clip is clip
    assert calls == []  # a known set: no text forward
    new = ["a cat", "a dog"]
    bundle = zero_shot(arch, new, weights="none", device="cpu")
    assert calls == [2] and bundle.categories == new  # one forward for the whole new set
    zero_shot(arch, new, weights="none", device="cpu")
    zero_shot(arch, PROMPTS, weights="none", device="cpu")
    assert calls == [2]
    zero_shot(arch, list(reversed(new)), weights="none", device="cpu")
    assert calls == [2, 2]


@pytest.mark.parametrize(("arch", "layer"), [("vizhooks-tiny-vit", "visual.transformer.resblocks.1"),
                                             ("vizhooks-tiny-rn", "visual.layer4")])
def test_grad_cam_for_a_typed_class_runs_and_leaves_no_hooks(arch, layer):
    bundle = zero_shot(arch, PROMPTS, weights="none", device="cpu")
    x = _x(1)
    cam, target = grad_cam(bundle.model, x, layer, target=2, return_target=True)
    assert target == 2 and cam.shape == (32, 32) and torch.isfinite(cam).all()
    assert count_hooks(bundle.model) == 0 and count_hooks(bundle.clip) == 0
    assert all(p.grad is None for p in bundle.clip.parameters())


def test_the_image_towers_blocks_are_the_layers_and_show_as_maps():
    bundle = zero_shot("vizhooks-tiny-vit", PROMPTS, weights="none", device="cpu")
    names = [b.name for b in block_layers(bundle.model)]
    assert names == ["visual.transformer.resblocks.0", "visual.transformer.resblocks.1"]
    maps = capture(bundle.model, _x(2), names, as_maps=True)
    assert all(m.shape == (1, 32, 4, 4) for m in maps.values())  # the class token dropped, 4 x 4 patches
    assert bundle.input.fixed_size == 32 and bundle.input.interpolation == "bicubic"


def test_bad_prompts_arch_and_weights_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="from 2 to"):
        zero_shot("vizhooks-tiny-vit", ["only one"], weights="none")
    with pytest.raises(ValueError, match="different"):
        zero_shot("vizhooks-tiny-vit", ["a cat", " a cat"], weights="none")
    with pytest.raises(TypeError, match="list of class names"):
        zero_shot("vizhooks-tiny-vit", "a cat, a dog", weights="none")
    with pytest.raises(ValueError, match="open_clip has no model named 'vizhooks-tiny-vt'"):
        zero_shot("vizhooks-tiny-vt", PROMPTS, weights="none")
    with pytest.raises(WeightsError, match="no weights 'openai'"):
        zero_shot("vizhooks-tiny-rn", PROMPTS, weights="openai")
    with pytest.raises(WeightsError, match="HF_HUB_OFFLINE is set.*openai weights of RN50") as info:
        zero_shot("RN50", PROMPTS, weights="openai")  # refused before anything is built
    assert "\n" not in str(info.value) and "create_model('RN50', pretrained='TAG')" in str(info.value)
    auto = zero_shot("vizhooks-tiny-rn", PROMPTS)  # no pretrained tag: random, and it says so
    assert not auto.pretrained and auto.weights_status.startswith("Random weights")
