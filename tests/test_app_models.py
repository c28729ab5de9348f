"""The page on models other than ResNet (AppTest, random weights, offline): every view renders,
display-only changes run no forward pass, own checkpoints and the operator's model list."""

from __future__ import annotations

import pytest
import torch
import torchvision

from tests.helpers import ROOT, choose_view, layer_headings, ok, open_page, saw
from tests.warm_python import run_python


def _named_modules(model: str) -> dict[str, torch.nn.Module]:
    with torch.device("meta"):
        return dict(torchvision.models.get_model(model).named_modules())


@pytest.mark.slow
# ViT-B/32 rather than B/16: the same class and code path, a quarter of the tokens (of the work)
@pytest.mark.parametrize("model", ["vgg16", "mobilenet_v3_small", "efficientnet_b0", "densenet121",
                                   "convnext_tiny", "vit_b_32"])
def test_every_view_renders_for(model, forward_passes):
    at = open_page(model=model, size="128")
    ok(at)
    layers = at.multiselect(key="layers").value
    modules = _named_modules(model)
    assert layers and all(name in modules for name in layers)
    if model == "vit_b_32":  # an attention model shows its blocks first
        assert all(type(modules[n]).__name__ == "EncoderBlock" for n in layers)
        assert saw(at) == "What the model saw: 224 × 224 pixels"
        assert any("needs 224 × 224 pixels" in c.value for c in at.caption)
    else:
        assert isinstance(modules[layers[0]], torch.nn.Conv2d)
    assert layer_headings(at) == layers
    assert len(at.image) >= 1 + len(layers)
    assert len(forward_passes) == 1
    assert at.query_params["model"] == model

    at.selectbox(key="cmap").set_value("magma").run()
    at.select_slider(key="channels").set_value(4).run()
    choose_view(at, "inspector")
    ok(at)
    assert len(forward_passes) == 1  # display-only changes
    for view in ("gradients", "gradcam", "backward", "table", "code"):
        choose_view(at, view)
        ok(at)
        if view in ("gradients", "gradcam"):
            assert len(at.image) >= 1 + len(layers), view  # one grid or overlay per layer
        elif view in ("backward", "table"):
            assert len(at.dataframe) == 1 and len(at.dataframe[0].value) > 0, view
        else:
            assert f"models.{model}(" in next(c.value for c in at.code if c.language == "python")
    choose_view(at, "maps")
    ok(at)


@pytest.mark.slow
def test_link_to_vgg16_layers(forward_passes):
    at = open_page(model="vgg16", layers="features.0,features.28", size="128")
    ok(at)
    assert layer_headings(at) == ["features.0", "features.28"]
    captions = " ".join(c.value for c in at.caption)
    assert "16 of 64 channels" in captions and "16 of 512 channels" in captions


def _ten_class_checkpoint(tmp_path):
    torch.manual_seed(3)
    model = torchvision.models.resnet18(num_classes=10).eval()
    path = tmp_path / "ten.pth"
    torch.save(model.state_dict(), path)
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"kind {i}" for i in range(10)))
    return model, path, labels


@pytest.mark.slow
def test_operator_models_on_the_page(tmp_path, monkeypatch, forward_passes, fresh_caches):
    model, path, labels = _ten_class_checkpoint(tmp_path)
    config = tmp_path / "models.toml"
    config.write_text(
        '[[model]]\nname = "Ten kinds"\narch = "resnet18"\n'
        f'weights = "{path.name}"\nlabels = "{labels.name}"\ndescription = "A class exercise"\n\n'
        '[[model]]\nname = "Broken"\narch = "resnet18"\nweights = "missing.pth"\n'
    )
    monkeypatch.setenv("VIZHOOKS_MODELS", str(config))
    at = open_page()
    ok(at)
    options = at.selectbox(key="model").options
    assert any("Ten kinds" in o for o in options) and not any("Broken" in o for o in options)
    assert any("Broken" in w.value and "missing.pth" in w.value for w in at.warning)
    at.selectbox(key="model").set_value("Ten kinds").run()
    ok(at)
    assert any("A class exercise" in c.value for c in at.caption)
    texts = [p.proto.text for p in at.get("progress")]
    assert texts and all(t.startswith("kind ") for t in texts)  # the operator's labels in the top-5
    assert len(texts) == 5


def test_visitors_cannot_name_a_file(tmp_path, monkeypatch):
    _, path, _ = _ten_class_checkpoint(tmp_path)
    at = open_page(model=str(path))
    ok(at)
    assert at.query_params["model"] == "resnet18"
    assert any("model=" in i.value for i in at.info)  # reported as ignored from the link


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_link_to_a_model_the_menu_lacks_says_who_adds_models(lang):
    """QA 2026-12-06: `?model=timm:resnet18` and `?model=hf:...` were "ignored from the link" with no reason;
    a teacher now reads that the server's operator adds models."""
    from vizhooks.page.texts import EN, ZH

    texts = {"en": EN, "zh": ZH}[lang]
    at = open_page(model="timm:resnet18", lang=lang, size="128", layers="conv1")
    ok(at)
    assert at.selectbox(key="model").value == "resnet18"
    assert [i.value for i in at.info] == [texts["url_notice"].format(items="model=timm:resnet18") + "\n\n"
                                          + texts["url_model_not_offered"].format(model="timm:resnet18")]


@pytest.mark.parametrize("refusing", ["architecture_layers", "reference_hw"])
def test_a_model_whose_input_rules_refuse_when_chosen_is_one_sentence(monkeypatch, refusing):
    """An operator's entry whose files changed after the menu listed it (its layers cannot be listed, as when its
    processor turned non-square; or its layers were kept from before and its input rules refuse now) is refused
    in the page's words when chosen, under the page's title and its Present switch, with no error box; choosing
    another model works; a link naming it opens the default model and says the link's model was not used."""
    from vizhooks.errors import CodedError
    from vizhooks.page import urlstate
    from vizhooks.page.texts import EN

    real = getattr(urlstate, refusing)

    def listing(model, *args):
        if model == "resnet34":
            raise CodedError(code="model_not_square", width=32, height=16)
        return real(model, *args)

    monkeypatch.setattr(urlstate, refusing, listing)
    at = open_page()
    at.selectbox(key="model").set_value("resnet34").run()
    assert not at.exception
    reason = EN["err_model_not_square"].format(width=32, height=16)
    assert [e.value for e in at.error] == [EN["bad_model"].format(reason=reason)]
    assert [x.value for x in at.title] == [EN["title"]] and len(at.toggle) >= 1
    at.selectbox(key="model").set_value("resnet18").run()
    ok(at)
    assert layer_headings(at)
    link = open_page(model="resnet34")
    assert not link.exception and not link.error and link.query_params["model"] == "resnet18"
    assert any("model=resnet34" in i.value for i in link.info)  # reported as not used


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "other_architecture", "pickle_payload"])
def test_a_broken_operator_checkpoint_is_one_sentence(tmp_path, monkeypatch, damage, fresh_caches):
    _, path, labels = _ten_class_checkpoint(tmp_path)
    bad = tmp_path / "bad.pth"
    marker = tmp_path / "ran"
    if damage == "truncated":
        bad.write_bytes(path.read_bytes()[:5000])
    elif damage == "other_architecture":
        torch.save(torchvision.models.mobilenet_v2(num_classes=10).state_dict(), bad)
    else:
        torch.save({"fc.weight": torch.zeros(1), "payload": _Payload(str(marker))}, bad)
    config = tmp_path / "models.toml"
    config.write_text(f'[[model]]\nname = "Damaged"\narch = "resnet18"\nweights = "{bad.name}"\n')
    monkeypatch.setenv("VIZHOOKS_MODELS", str(config))
    at = open_page(model="Damaged")
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("This model can't be loaded:") and "\n" not in errors[0]
    assert not marker.exists()  # weights_only=True: the payload never ran
    at.selectbox(key="model").set_value("resnet18").run()  # the page keeps working
    ok(at)
    assert layer_headings(at)
    if damage == "truncated":  # the same on the Chinese page: a Chinese sentence, the details in the log
        from tests.helpers import allowed_names, english_in
        from vizhooks.page.texts import ZH

        zh = open_page(model="Damaged", lang="zh")
        assert [e.value for e in zh.error] == [ZH["bad_model"].format(reason=ZH["err_generic"])]
        assert english_in(zh, allowed_names(zh)) == []


class _Payload:
    """Unpickling this would create a file: proof that a checkpoint ran code."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.slow
@pytest.mark.parametrize("model,layers", [
    ("vit_b_32", ["conv_proj", "encoder.layers.encoder_layer_5"]),
    ("swin_t", ["features.0.0", "features.3.1"]),
    ("efficientnet_b0", ["features.0.0", "features.4.0"]),
])
def test_code_view_snippet_runs_and_matches_the_page(model, layers):
    """The plain-PyTorch code shown for a non-ResNet model runs in a fresh Python (tests/warm_python.py) and prints
    the shapes that vizhooks captures (as maps) for the same photo."""
    import ast

    import vizhooks as vz
    from vizhooks.lesson.code import snippet

    code = snippet("maps", model=model, image="sample_images/chelsea.jpg", size=128, layers=layers)
    run = run_python(code, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    printed = dict(line.split(" ", 1) for line in run.stdout.strip().splitlines())
    bundle = vz.load_model(model, weights="none", device="cpu")
    x = bundle.preprocess(vz.load_image(ROOT / "sample_images/chelsea.jpg"), 128)
    acts = vz.capture(bundle.model, x, layers, as_maps=True)
    assert {k: tuple(v.shape) for k, v in acts.items()} == {k: ast.literal_eval(v) for k, v in printed.items()}
