"""Labels that state a size or a count, through AppTest (issue 34 §5): the Feature maps captions give
each layer's resolution for this photo (not a square's), checked against a hand-written forward hook
on the same model and input."""

from __future__ import annotations

import re

import torch

from tests.helpers import ok, open_page
from vizhooks.models.registry import load_model


def test_feature_map_captions_give_the_photos_own_resolution():
    at = open_page(view="maps", size="128", layers="conv1,layer2.0.conv1,layer4.0.conv1")  # chelsea.jpg: 451 x 300
    ok(at)
    model = load_model("resnet18", weights="none", device="cpu").model
    modules = dict(model.named_modules())
    seen: dict[str, tuple[int, int]] = {}

    def remember(name: str):
        def hook(_module, _args, output) -> None:
            seen.setdefault(name, tuple(output.shape[-2:]))
        return hook

    handles = [modules[name].register_forward_hook(remember(name)) for name in ("conv1", "layer2.0.conv1",
                                                                                 "layer4.0.conv1")]
    try:
        with torch.no_grad():
            model(torch.zeros(1, 3, 128, 192))  # the shorter side to 128, the longer at 451 / 300 of it
    finally:
        for handle in handles:
            handle.remove()
    captions = [c.value for c in at.caption if re.match(r"conv \d+ of 20 · ", c.value)]
    assert len(captions) == 3, captions
    shown = []
    for caption in captions:
        where = re.match(r"conv \d+ of 20 · (\d+)×(\d+) · ", caption)
        assert where is not None, caption
        h, w = int(where[1]), int(where[2])
        assert f"×{h}×{w} ·" in caption, caption  # the shape the same caption gives
        shown.append((h, w))
    assert sorted(shown) == sorted(seen.values()), (shown, seen)
    assert all(h != w for h, w in shown), shown  # the photo is not square, nor are its maps
