"""Steering in the Intervene view (issue 31) through AppTest, in both languages: along a class's direction
(the sample photos the model puts in a class minus the others) and along a concept's (CRAFT over the sample
photos), compared with the library's calls and with hand-written forward hooks on the same random-weight
resnet18; the link keeps every setting."""

from __future__ import annotations

import pytest
import torch

import vizhooks as vz
from tests.helpers import ROOT, ok, open_page
from vizhooks.models.images import to_tensor
from vizhooks.models.labels import class_labels
from vizhooks.page.texts import EN, ZH

LAYERS = "conv1,layer2.0.conv1,layer4.0.conv1"
SIZE = 128
SAMPLES = sorted(p for p in (ROOT / "sample_images").glob("*.*") if p.suffix in (".jpg", ".png"))


def _reopen(at):
    return open_page(**{k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()})


def _prefix(texts: dict[str, str], key: str) -> str:
    return texts[key].split("{")[0]


def _photo(bundle: vz.ModelBundle) -> torch.Tensor:
    picture = bundle.resize(vz.load_image(ROOT / "sample_images/chelsea.jpg"), SIZE)
    return to_tensor(picture, bundle.input.mean, bundle.input.std)


def _steered_by_hand(model, layer: str, x: torch.Tensor, direction: torch.Tensor, scale: float) -> torch.Tensor:
    module = model.get_submodule(layer)
    handle = module.register_forward_hook(lambda m, args, out: out + scale * direction.view(1, -1, 1, 1))
    try:
        with torch.no_grad():
            return model(x)[0]
    finally:
        handle.remove()


def _top5(logits: torch.Tensor, lang: str, bundle: vz.ModelBundle) -> list[str]:
    labels = class_labels(bundle.categories, lang)
    probs = logits.softmax(-1)
    return [f"{labels[i]} · {float(probs[i]):.1%}" for i in probs.topk(5).indices.tolist()]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_intervene_steers_along_a_class_direction_as_the_library_and_a_hook_do(lang):
    from vizhooks.hooks.patching import class_direction, steer

    texts = EN if lang == "en" else ZH
    layer = "layer2.0.conv1"
    at = open_page(view="intervene", size=str(SIZE), layers=LAYERS, lang=lang, iv_mode="steer", iv_layer=layer,
                   iv_dir="class", iv_scale="2")
    ok(at)
    assert any(c.value.startswith(_prefix(texts, "steer_class_caption")) for c in at.caption)
    toward = int(at.selectbox(key="iv_toward").value)
    # by hand: every sample photo squashed to this photo's size, its class by a plain forward, and the mean
    # of the layer's output over the photos of the chosen class minus that over the others, per channel
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = _photo(bundle)
    size = (int(x.shape[-1]), int(x.shape[-2]))
    photos = torch.cat([to_tensor(vz.load_image(p).resize(size), bundle.input.mean, bundle.input.std)
                        for p in SAMPLES])
    kept = []
    handle = bundle.model.get_submodule(layer).register_forward_hook(lambda m, args, out: kept.append(out.clone()))
    with torch.no_grad():
        classes = bundle.model(photos).argmax(-1)
        before = bundle.model(x)[0]
    handle.remove()
    assert len(set(classes.tolist())) >= 2 and toward in classes.tolist()
    means = kept[0].mean(dim=(2, 3))
    direction = means[classes == toward].mean(0) - means[classes != toward].mean(0)
    by_hand = _steered_by_hand(bundle.model, layer, x, direction, 2.0)
    library = steer(bundle.model, x, layer, class_direction(bundle.model, photos, layer, toward), 2.0, target=toward)
    torch.testing.assert_close(library.logits, by_hand, rtol=0, atol=1e-4)
    bars = [p.text for p in at.progress]
    assert bars[-5:] == _top5(by_hand, lang, bundle) and bars[-10:-5] == _top5(before, lang, bundle)
    assert at.metric[0].value == f"{float(by_hand[toward]):.3f}"
    assert at.metric[0].delta == f"{float(by_hand[toward] - before[toward]):+.3f}"
    again = _reopen(at)  # the link keeps every setting
    ok(again)
    assert (again.selectbox(key="iv_mode").value, again.radio(key="iv_dir").value) == ("steer", "class")
    assert again.select_slider(key="iv_scale").value == 2.0 and again.selectbox(key="iv_toward").value == toward
    assert [p.text for p in again.progress][-5:] == bars[-5:]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_intervene_steers_along_a_concept_direction_as_the_library_and_a_hook_do(lang):
    from vizhooks.interpret.concepts import concept_direction, discover
    from vizhooks.page.results import CONCEPT_CROPS, CONCEPT_SEED
    from vizhooks.page.views.intervene import STEER_CONCEPTS

    texts = EN if lang == "en" else ZH
    layer = "conv1"
    at = open_page(view="intervene", size=str(SIZE), layers=LAYERS, lang=lang, iv_mode="steer", iv_layer=layer,
                   iv_dir="concept", iv_scale="-1.5")
    ok(at)
    assert any(c.value.startswith(_prefix(texts, "steer_concept_caption")) for c in at.caption)
    concept = int(at.selectbox(key="iv_concept").value)
    options = at.selectbox(key="iv_concept").options  # numbered from 1 by importance, as the Concepts view's cards
    head = texts["steer_concept_option"].split("{")[0]
    assert [o.removeprefix(head).split("（")[0].split(" ")[0] for o in options] == \
        [str(n) for n in range(1, STEER_CONCEPTS + 1)]
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = _photo(bundle)
    with torch.no_grad():
        before = bundle.model(x)[0]
    target = int(before.argmax())  # the class picker's default: this photo's top-1
    found = discover(bundle, [vz.load_image(p) for p in SAMPLES], layer, k=STEER_CONCEPTS, target=target,
                     crops_per_image=CONCEPT_CROPS, size=SIZE, seed=CONCEPT_SEED)
    assert concept == found.order()[0]  # the most important concept first
    direction = found.bank[concept] * found.coefficients[:, concept].max()
    torch.testing.assert_close(concept_direction(found, concept), torch.from_numpy(direction))
    by_hand = _steered_by_hand(bundle.model, layer, x, torch.from_numpy(direction), -1.5)
    bars = [p.text for p in at.progress]
    assert bars[-5:] == _top5(by_hand, lang, bundle) and bars[-10:-5] == _top5(before, lang, bundle)
    assert at.metric[0].value == f"{float(by_hand[target]):.3f}"
    again = _reopen(at)
    ok(again)
    assert again.radio(key="iv_dir").value == "concept" and again.selectbox(key="iv_concept").value == concept
    assert again.select_slider(key="iv_scale").value == -1.5


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_intervene_steers_along_a_class_gradient_as_autograd_and_a_hook_do(lang):
    texts = EN if lang == "en" else ZH
    layer, target = "layer2.0.conv1", 281
    at = open_page(view="intervene", size=str(SIZE), layers=LAYERS, lang=lang, iv_mode="steer", iv_layer=layer,
                   iv_dir="gradient", iv_scale="3", target=str(target))
    ok(at)
    assert any(c.value.startswith(_prefix(texts, "steer_gradient_caption")) for c in at.caption)
    # by hand: the layer's output kept by a forward hook, the class's logit differentiated with respect to
    # it by autograd, averaged over positions and scaled to the length of the output's mean per channel
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = _photo(bundle)
    kept = []
    handle = bundle.model.get_submodule(layer).register_forward_hook(lambda m, args, out: kept.append(out))
    logits = bundle.model(x)
    handle.remove()
    (grad,) = torch.autograd.grad(logits[0, target], kept[0])
    mean = kept[0].detach().mean(dim=(0, 2, 3))
    direction = grad.mean(dim=(0, 2, 3)) * (mean.norm() / grad.mean(dim=(0, 2, 3)).norm())
    before = logits[0].detach()
    by_hand = _steered_by_hand(bundle.model, layer, x, direction, 3.0)
    bars = [p.text for p in at.progress]
    assert bars[-5:] == _top5(by_hand, lang, bundle) and bars[-10:-5] == _top5(before, lang, bundle)
    assert bars[-5:] != bars[-10:-5]  # the steering changed the top-5
    assert float(at.metric[0].value) == pytest.approx(float(by_hand[target]), abs=2e-3)
    assert float(by_hand[target]) > float(before[target])  # uphill along the gradient: the class's score rises
    # the later layer's maps with the steering, and how much they changed, by hand
    later = bundle.model.get_submodule("layer4.0.conv1")
    maps: list[torch.Tensor] = []
    handle = later.register_forward_hook(lambda m, args, out: maps.append(out.detach().clone()))
    with torch.no_grad():
        bundle.model(x)
    _steered_by_hand(bundle.model, layer, x, direction.detach(), 3.0)
    handle.remove()
    change = float((maps[1] - maps[0]).abs().mean() / (maps[0].abs().mean() + 1e-12))
    assert any(c.value == texts["iv_later"] for c in at.caption)
    assert any(c.value == texts["iv_change"].format(change=change) for c in at.caption)
    assert any(h.value == "layer4.0.conv1" for h in at.subheader)
    at.select_slider(key="iv_scale").set_value(-2.0).run()  # downhill: it falls
    ok(at)
    assert float(at.metric[0].value) < float(before[target])
    again = _reopen(at)  # the link keeps every setting
    ok(again)
    assert (again.selectbox(key="iv_mode").value, again.radio(key="iv_dir").value) == ("steer", "gradient")
    assert again.select_slider(key="iv_scale").value == -2.0


def test_steer_links_are_checked_value_by_value():
    from vizhooks.page.urlstate import parse_query, to_query

    assert parse_query({"iv_dir": "gradient"}, [])[0] == {"iv_dir": "gradient"}
    good, bad = parse_query({"iv_mode": "steer", "iv_dir": "concept", "iv_scale": "-1.5", "iv_toward": "281",
                             "iv_concept": "3"}, ["chelsea.jpg"])
    assert bad == []
    assert good == {"iv_mode": "steer", "iv_dir": "concept", "iv_scale": -1.5, "iv_toward": 281, "iv_concept": 3}
    assert to_query(good)["iv_scale"] == "-1.5" and to_query(good)["iv_dir"] == "concept"
    _, bad = parse_query({"iv_dir": "photo", "iv_scale": "2.25", "iv_toward": "-1", "iv_concept": "x"}, [])
    assert sorted(key for key, _ in bad) == ["iv_concept", "iv_dir", "iv_scale", "iv_toward"]
