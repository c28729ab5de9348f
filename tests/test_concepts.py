"""vizhooks.interpret.concepts: concepts found on a planted colour model are its colours, importance
finds the colour a planted head reads, the ablation is a hand-written hook, the NMF is
scikit-learn's and the transform an independent NNLS (SciPy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from scipy.optimize import nnls as scipy_nnls
from sklearn.decomposition import NMF
from torch import nn

from tests.helpers import COLOURS, ColourNet, count_hooks
from tests.helpers import CONCEPT_MEAN_STD as NONE
from tests.helpers import CONCEPT_SIZE as SIZE
from tests.helpers import colour_photos as _photos
from vizhooks.interpret.concepts import (
    NMF_MAX_ITER,
    ConceptsError,
    ablate,
    activations,
    concept_direction,
    concept_maps,
    discover,
    nnls,
)
from vizhooks.models.layers import UnknownLayerError


@pytest.fixture(scope="module")
def planted():
    torch.manual_seed(0)
    model = ColourNet()
    photos, names = _photos()
    found = discover(model, photos, "relu", k=4, target=0, crops_per_image=4, size=SIZE, mean_std=NONE,
                     batch_size=5)
    return model, photos, names, found


def _colour_of(found, names, i: int) -> str:
    rows = np.argmax(found.coefficients, axis=1) == i
    labels = [names[found.crops[r][0]] for r in np.flatnonzero(rows)]
    return max(set(labels), key=labels.count)


def test_the_colours_are_found_as_concepts(planted):
    _model, _photos_, names, found = planted
    assert found.bank.shape == (4, 8) and found.coefficients.shape == (64, 4) and len(found.crops) == 64
    assert (found.bank >= 0).all() and (found.coefficients >= 0).all()
    assign = np.argmax(found.coefficients, axis=1)
    majority = 0
    for i in range(4):
        labels = [names[found.crops[r][0]] for r in np.flatnonzero(assign == i)]
        majority += max(labels.count(c) for c in COLOURS) if labels else 0
    assert majority / len(assign) >= 0.9
    assert sorted(_colour_of(found, names, i) for i in range(4)) == sorted(COLOURS)
    # the top crops of each concept are crops of its colour
    for i in range(4):
        assert {names[index] for index, _box in found.top(i, n=4)} == {_colour_of(found, names, i)}


def test_importance_picks_the_colour_the_head_reads(planted):
    _model, _photos_, names, found = planted
    assert found.target == 0 and found.importance.shape == (4,)
    assert _colour_of(found, names, int(np.argmax(found.importance))) == "red"
    assert found.order()[0] == int(np.argmax(found.importance))


def test_crops_are_seeded_squares_inside_the_photo(planted):
    _model, photos, _names, found = planted
    for index, (left, top, right, bottom) in found.crops:
        assert right - left == bottom - top == SIZE // 2
        assert 0 <= left and 0 <= top and right <= photos[index].width and bottom <= photos[index].height
    assert [index for index, _ in found.crops] == [i for i in range(len(photos)) for _ in range(4)]


def test_activations_are_the_positive_part_averaged_by_hand(planted):
    model, photos, _names, found = planted
    acts, crops = activations(model, photos[:3], "relu", crops_per_image=4, size=SIZE, mean_std=NONE, batch_size=5)
    assert crops == found.crops[:12]
    for row, (index, box) in enumerate(crops):
        piece = photos[index].crop(box).resize((SIZE, SIZE), Image.Resampling.BILINEAR, reducing_gap=3.0)
        x = torch.from_numpy(np.asarray(piece, dtype=np.float32) / 255).permute(2, 0, 1)[None]
        with torch.no_grad():
            expected = torch.relu(model.conv(x)).mean(dim=(2, 3))[0]
        np.testing.assert_allclose(acts[row], expected.numpy(), rtol=1e-5, atol=1e-6)


def test_the_nmf_is_scikit_learns_on_the_same_matrix(planted):
    model, photos, _names, found = planted
    acts, _ = activations(model, photos, "relu", crops_per_image=4, size=SIZE, mean_std=NONE, batch_size=5)
    nmf = NMF(n_components=4, init="nndsvda", max_iter=NMF_MAX_ITER, random_state=0)
    u = nmf.fit_transform(acts)
    np.testing.assert_allclose(found.bank, nmf.components_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(found.coefficients, u, rtol=1e-5, atol=1e-6)


def test_the_same_seed_gives_the_same_bank_and_another_seed_other_crops(planted):
    model, photos, _names, found = planted
    again = discover(model, photos, "relu", k=4, crops_per_image=4, size=SIZE, mean_std=NONE, batch_size=7)
    assert np.array_equal(again.bank, found.bank) and again.crops == found.crops
    other = discover(model, photos, "relu", k=4, crops_per_image=4, size=SIZE, mean_std=NONE, seed=1)
    assert other.crops != found.crops


def test_transform_is_an_independent_nnls():
    rng = np.random.default_rng(3)
    bank = rng.uniform(0, 1, (5, 12))
    acts = rng.uniform(0, 1, (20, 12)) + rng.normal(0, 0.5, (20, 12))
    mine = nnls(acts, bank).numpy()
    for row, a in enumerate(acts):
        expected, _ = scipy_nnls(bank.T, a)
        np.testing.assert_allclose(mine[row], expected, atol=1e-5)
    assert (mine == 0).any()  # some constraints are active: the non-negativity matters


def test_ablate_equals_a_hand_written_hook(planted):
    model, photos, _names, found = planted
    x = torch.from_numpy(np.asarray(photos[0], dtype=np.float32) / 255).permute(2, 0, 1)[None]
    bank = torch.from_numpy(found.bank).double()
    for i in range(4):
        def remove(_m, _a, out, i=i):
            pos = out.permute(0, 2, 3, 1).reshape(-1, 8).double()
            u = torch.stack([torch.from_numpy(scipy_nnls(bank.T.numpy(), p.clamp_min(0).numpy())[0]) for p in pos])
            return (pos - u[:, i:i + 1] * bank[i]).float().reshape(1, SIZE, SIZE, 8).permute(0, 3, 1, 2)

        handle = model.relu.register_forward_hook(remove)
        try:
            with torch.no_grad():
                expected = model(x)[0]
        finally:
            handle.remove()
        with torch.no_grad():
            plain = model(x)[0]
        result = ablate(model, x, "relu", found, i, target=0)
        assert result.logit == pytest.approx(float(expected[0]), abs=1e-4)
        assert result.before == pytest.approx(float(plain[0]), abs=1e-6)
        torch.testing.assert_close(result.logits, expected, atol=1e-4, rtol=1e-4)
    assert ablate(model, x, "relu", found, 0).target == int(plain.argmax())


def test_concept_maps_are_the_coefficients_at_each_position(planted):
    model, photos, names, found = planted
    x = torch.from_numpy(np.asarray(photos[1], dtype=np.float32) / 255).permute(2, 0, 1)[None]
    maps = concept_maps(model, x, found)
    assert maps.shape == (4, SIZE, SIZE)
    with torch.no_grad():
        a = torch.relu(model.conv(x))[0, :, 5, 7].numpy()
    np.testing.assert_allclose(maps[:, 5, 7].numpy(), scipy_nnls(found.bank.T.astype(np.float64), a)[0], atol=1e-5)
    mine = [i for i in range(4) if _colour_of(found, names, i) == names[1]][0]
    assert int(maps.mean(dim=(1, 2)).argmax()) == mine


def test_hooks_are_removed_and_state_kept_after_success_and_failure(planted):
    model, photos, _names, found = planted
    model.train()
    model.conv.weight.requires_grad_(True)
    discover(model, photos[:2], "relu", k=2, target=1, crops_per_image=2, size=SIZE, mean_std=NONE)
    x = torch.zeros(1, 3, SIZE, SIZE)
    ablate(model, x, "relu", found, 1)
    assert count_hooks(model) == 0 and model.training and model.conv.weight.requires_grad
    with pytest.raises(ConceptsError):
        discover(model, photos[:2], "relu", k=2, target=9, crops_per_image=2, size=SIZE, mean_std=NONE)
    assert count_hooks(model) == 0 and model.training
    model.eval()


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"layer": "nope"}, "no layer named 'nope'"),
    ({"k": 9}, "k = 9 concepts need at least 9 crops, but there are only 8"),
    ({"images": []}, "give at least one photo"),
    ({"crop": 1.5}, "crop must be"),
])
def test_bad_settings_are_one_sentence(planted, kwargs, needle):
    model, photos, _names, _found = planted
    args = {"images": photos[:2], "layer": "relu", "k": 2} | kwargs
    with pytest.raises((ConceptsError, UnknownLayerError)) as info:
        discover(model, args.pop("images"), args.pop("layer"), crops_per_image=4, size=SIZE, mean_std=NONE, **args)
    message = str(info.value)
    assert needle in message and message.count(". ") <= 1 and "\n" not in message


def test_ablate_refuses_another_layer_and_a_missing_concept(planted):
    model, _photos_, _names, found = planted
    x = torch.zeros(1, 3, SIZE, SIZE)
    with pytest.raises(ConceptsError, match="found at layer relu, not conv"):
        ablate(model, x, "conv", found, 0)
    with pytest.raises(ConceptsError, match="no concept 4"):
        ablate(model, x, "relu", found, 4)


def test_progress_counts_every_crop_then_every_photo(planted):
    model, photos, _names, _found = planted
    calls = []
    discover(model, photos[:3], "relu", k=2, target=0, crops_per_image=4, size=SIZE, mean_std=NONE, batch_size=5,
             progress=lambda done, total, stage: calls.append((done, total, stage)))
    assert calls == [(5, 12, "crops"), (10, 12, "crops"), (12, 12, "crops"),
                     (1, 3, "importance"), (2, 3, "importance"), (3, 3, "importance")]


class TokenNet(nn.Module):
    """A class token and 16 patch tokens (8 x 8 patches of a 32 x 32 picture), one linear block, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, 6, 8, 8)
        self.block = nn.Linear(6, 6)
        self.head = nn.Linear(6, 3)
        self.cls = nn.Parameter(torch.full((1, 1, 6), 3.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = self.block(torch.cat([self.cls.expand(len(x), 1, 6), tokens], 1))
        return self.head(tokens.mean(1))


def test_token_layers_average_their_tokens_and_map_over_the_patch_grid():
    torch.manual_seed(0)
    model = TokenNet()
    photos, _names = _photos(per_colour=1)
    acts, crops = activations(model, photos, "block", crops_per_image=2, size=SIZE, mean_std=NONE)
    index, box = crops[3]
    piece = photos[index].crop(box).resize((SIZE, SIZE), Image.Resampling.BILINEAR, reducing_gap=3.0)
    x = torch.from_numpy(np.asarray(piece, dtype=np.float32) / 255).permute(2, 0, 1)[None]
    with torch.no_grad():
        tokens = model.embed(x).flatten(2).transpose(1, 2)
        expected = model.block(torch.cat([model.cls, tokens], 1)).clamp_min(0).mean(1)[0]
    np.testing.assert_allclose(acts[3], expected.numpy(), rtol=1e-5, atol=1e-6)
    found = discover(model, photos, "block", k=2, crops_per_image=2, size=SIZE, mean_std=NONE)
    assert concept_maps(model, x, found).shape == (2, 4, 4)
    assert count_hooks(model) == 0


def test_concept_direction_is_the_strongest_crop_of_the_concept_and_steers_to_its_class(planted):
    from vizhooks.hooks.patching import steer

    model, photos, names, found = planted
    red = next(i for i in range(4) if _colour_of(found, names, i) == "red")
    direction = concept_direction(found, red)
    assert direction.dtype == torch.float32 and direction.shape == (8,)
    np.testing.assert_allclose(direction.numpy(), found.bank[red] * found.coefficients[:, red].max(), rtol=1e-6)
    # the right answer by construction: the activation (positive part, averaged) of the crop with most of the
    # concept, a red crop, which has only the two red channels
    acts, _crops = activations(model, photos, "relu", crops_per_image=4, size=SIZE, mean_std=NONE, batch_size=5)
    strongest = acts[int(np.argmax(found.coefficients[:, red]))]
    assert np.abs(strongest[2:]).max() < 1e-6
    np.testing.assert_allclose(direction.numpy(), strongest, atol=0.02 * float(strongest.max()))
    # steering a green photo along it at every position: class 0 (red) rises by the red channels' sum,
    # as a hand-written hook has it, and becomes the top class
    x = torch.from_numpy(np.asarray(photos[names.index("green")], dtype=np.float32) / 255).permute(2, 0, 1)[None]
    handle = model.relu.register_forward_hook(lambda _m, _a, out: out + direction.view(1, 8, 1, 1))
    try:
        with torch.no_grad():
            by_hand = model(x)[0]
    finally:
        handle.remove()
    result = steer(model, x, "relu", direction, 1.0, target=0)
    torch.testing.assert_close(result.logits, by_hand, rtol=0, atol=1e-5)
    assert result.change == pytest.approx(float(direction[:2].sum()), abs=1e-5)
    assert int(result.clean.argmax()) == 1 and int(result.logits.argmax()) == 0
    with pytest.raises(ConceptsError):
        concept_direction(found, 4)
    assert count_hooks(model) == 0
