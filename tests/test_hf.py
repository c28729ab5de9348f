"""Hugging Face image classifiers as vizhooks models (``load_model("hf:ID_OR_DIR")``): tiny models
built from a config offline (random weights), saved with an image processor, and compared with the
Hugging Face model's own outputs."""

from __future__ import annotations

import os
import time

import pytest
import torch
from PIL import Image

from tests.helpers import HF_LABELS, count_hooks, run_cli, save_tiny_hf
from tests.warm_python import run_python
from vizhooks.hooks.capture import capture
from vizhooks.interpret.cam import grad_cam
from vizhooks.models import weights as weights_module
from vizhooks.models.layers import block_layers, conv_layers, resolve_layers
from vizhooks.models.maps import channels_last_modules
from vizhooks.models.registry import family, list_models, load_model, meta_model, operator_models
from vizhooks.models.weights import WeightsError

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: no test reaches the Hub

KINDS = ("vit", "convnext", "swin", "resnet")
LABELS = HF_LABELS


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """{kind: save_pretrained folder} of four tiny random models, each with its image processor."""
    return {kind: save_tiny_hf(kind, tmp_path_factory.mktemp(kind)) for kind in KINDS}


@pytest.fixture(scope="module")
def bundles(folders):
    return {kind: load_model(f"hf:{folder}", device="cpu") for kind, folder in folders.items()}


def _hf_own(folder):
    from transformers import AutoModelForImageClassification

    return AutoModelForImageClassification.from_pretrained(folder).eval()


def _x(seed: int = 0) -> torch.Tensor:
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", KINDS)
def test_logits_equal_the_hf_models_own_and_categories_come_from_id2label(kind, folders, bundles):
    bundle = bundles[kind]
    x = _x()
    with torch.no_grad():
        ours = bundle.model(x)
        theirs = _hf_own(folders[kind])(pixel_values=x).logits
    assert isinstance(ours, torch.Tensor)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert bundle.categories == LABELS
    assert (bundle.pretrained, bundle.weights_source) == (True, "file")
    assert family(bundle.name) == "Hugging Face"
    # the HF names under one prefix
    hf_names = {n for n, _ in _hf_own(folders[kind]).named_modules() if n}
    assert {n.removeprefix("hf.") for n, _ in bundle.model.named_modules() if n.startswith("hf.")} == hf_names


def _hidden_maps(kind, folder, x) -> list[torch.Tensor]:
    """The Hugging Face model's own per-block outputs as (1, C, H, W) maps (every test config has
    one block per stage for the staged families)."""
    model = _hf_own(folder)
    with torch.no_grad():
        if kind == "swin":
            out = model(pixel_values=x, output_hidden_states=True, output_hidden_states_before_downsampling=True)
            return list(out.reshaped_hidden_states[1:])
        out = model(pixel_values=x, output_hidden_states=True)
    states = list(out.hidden_states[1:])
    if kind == "vit":  # (1, 1 + 16, 32): class token first, then a 4 x 4 patch grid
        return [h[:, 1:, :].transpose(1, 2).reshape(1, 32, 4, 4) for h in states]
    return states


@pytest.mark.parametrize("kind", KINDS)
def test_captured_blocks_are_the_hidden_states_as_maps(kind, folders, bundles):
    bundle = bundles[kind]
    x = _x(1)
    blocks = [b.name for b in block_layers(bundle.model)]
    expected = _hidden_maps(kind, folders[kind], x)
    assert len(blocks) == len(expected)
    maps = capture(bundle.model, x, "blocks", as_maps=True)
    assert list(maps) == blocks
    for name, want in zip(blocks, expected, strict=True):
        torch.testing.assert_close(maps[name], want, rtol=1e-5, atol=1e-5)
    assert count_hooks(bundle.model) == 0


def test_convs_are_found_and_channels_last_outputs_are_permuted(bundles):
    model = bundles["convnext"].model
    assert [c.name for c in conv_layers(model)][0] == "hf.convnext.embeddings.patch_embeddings"
    inner = "hf.convnext.encoder.stages.1.layers.0.pwconv2"  # (1, 4, 4, 24) inside the block
    maps = capture(model, _x(2), [inner], as_maps=True)
    raw = capture(model, _x(2), [inner])
    assert raw[inner].shape == (1, 4, 4, 24)
    torch.testing.assert_close(maps[inner], raw[inner].permute(0, 3, 1, 2))
    # known, not guessed (a (1, 8, 8, 8) output would be ambiguous); the block and its dwconv are NCHW
    known = channels_last_modules(model)
    assert inner in known and "hf.convnext.encoder.stages.1.layers.0.layernorm" in known
    assert not known & {"hf.convnext.encoder.stages.1.layers.0", "hf.convnext.encoder.stages.1.layers.0.dwconv"}


@pytest.mark.parametrize("kind", KINDS)
def test_grad_cam_runs_and_leaves_no_hooks(kind, bundles):
    bundle = bundles[kind]
    layer = block_layers(bundle.model)[-1].name
    x = _x(3)
    cam, target = grad_cam(bundle.model, x, layer, return_target=True)
    assert cam.shape == (32, 32) and torch.isfinite(cam).all()
    assert target == int(bundle.model(x).argmax())
    assert count_hooks(bundle.model) == 0
    assert all(p.grad is None for p in bundle.model.parameters())


def test_preprocessing_comes_from_the_saved_image_processor(folders, bundles):
    from transformers import AutoImageProcessor

    vit, convnext = bundles["vit"].input, bundles["convnext"].input
    assert (vit.fixed_size, vit.interpolation, vit.mean, vit.std) == (32, "bilinear", (0.5, 0.4, 0.3),
                                                                       (0.2, 0.25, 0.3))
    assert vit.squash and vit.resize_rule == "transformers"
    # ConvNeXt's processor below 384: the shorter side to int(32 / crop_pct 0.875) = 36, then a 32 crop
    assert (convnext.fixed_size, convnext.resize_side, convnext.squash, convnext.interpolation) == (32, 36, False,
                                                                                                     "bicubic")
    # a picture already the model's size: the processor's own tensor, pixel for pixel
    g = torch.Generator().manual_seed(4)
    image = Image.fromarray(torch.randint(0, 256, (32, 32, 3), generator=g, dtype=torch.uint8).numpy())
    theirs = AutoImageProcessor.from_pretrained(folders["vit"])(image, return_tensors="pt").pixel_values
    torch.testing.assert_close(bundles["vit"].preprocess(image), theirs, rtol=0, atol=1e-5)


def test_random_weights_are_built_from_the_config_and_the_meta_model_lists_the_same_layers(folders, bundles):
    name = f"hf:{folders['resnet']}"
    random = load_model(name, weights="none", device="cpu")
    assert (random.pretrained, random.weights_source, random.categories) == (False, "random", LABELS)
    assert not torch.equal(random.model(_x()), bundles["resnet"].model(_x()))
    meta, _ = meta_model(name)
    assert [b.name for b in block_layers(meta)] == [b.name for b in block_layers(bundles["resnet"].model)]
    assert resolve_layers(meta, "blocks") == [f"hf.resnet.encoder.stages.{i}.layers.0" for i in (0, 1)]


def test_a_hub_id_offline_fails_in_one_sentence():
    with pytest.raises(WeightsError) as info:
        load_model("hf:someone/not-on-this-machine", device="cpu")
    message = str(info.value)
    assert "HF_HUB_OFFLINE" in message and "someone/not-on-this-machine" in message and "\n" not in message


def test_a_hub_download_waits_a_bounded_time(monkeypatch):
    import huggingface_hub
    import huggingface_hub.constants  # lazy submodules: not attributes until imported
    import huggingface_hub.errors

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("VIZHOOKS_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(weights_module, "DOWNLOAD_TIMEOUT_S", 0.3)
    monkeypatch.setattr(weights_module, "_offline_since", None)
    def silent_server(*args, local_files_only=False, **kwargs):
        if local_files_only:  # transformers looking in the cache (it calls the same function)
            raise huggingface_hub.errors.LocalEntryNotFoundError("not in the cache")
        time.sleep(5)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", silent_server)
    start = time.monotonic()
    with pytest.raises(WeightsError, match="No answer from the download server within 0.3 s"):
        load_model("hf:someone/silent-server", device="cpu")
    assert time.monotonic() - start < 3
    # remembered: the next load does not wait again
    with pytest.raises(WeightsError, match="failed a moment ago"):
        load_model("hf:someone/silent-server", device="cpu")


def test_a_model_the_hub_does_not_have_holds_back_no_other_download(monkeypatch):
    """A mistyped Hub id: the Hub answers (here: no config.json there), so the network works and the next
    downloads (an ImageNet checkpoint, another Hub model) are still tried, unlike after a silent server."""
    import huggingface_hub
    import huggingface_hub.constants  # lazy submodules: not attributes until imported
    import huggingface_hub.errors

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("VIZHOOKS_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(weights_module, "_offline_since", None)

    def no_such_file(*args, local_files_only=False, **kwargs):
        if local_files_only:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not in the cache")
        raise huggingface_hub.errors.EntryNotFoundError("404 Client Error: Entry Not Found for config.json")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_such_file)
    with pytest.raises(WeightsError, match="The download of Hugging Face model someone/typo failed .*Entry Not Found"):
        load_model("hf:someone/typo", device="cpu")
    assert weights_module._offline_since is None and weights_module.download_allowed([])


def test_an_operator_file_offers_hf_entries(folders, tmp_path, monkeypatch):
    (tmp_path / "models.toml").write_text(
        '[[model]]\nname = "Tiny ViT (小模型)"\ndescription = "猫, 狗, 杯子"\n'
        f'hf = "{os.path.relpath(folders["vit"], tmp_path)}"\n\n'
        '[[model]]\nname = "Broken"\nhf = "x/y"\narch = "resnet18"\n\n'
        '[[model]]\nname = "Missing"\nhf = "someone/missing_model"\n\n'
        '[[model]]\nname = "Unreadable"\nhf = "unreadable"\n\n'
        '[[model]]\nname = "No config"\nhf = "no_config"\n', encoding="utf-8")
    (tmp_path / "unreadable").mkdir()
    (tmp_path / "unreadable" / "config.json").write_text("{not json")
    (tmp_path / "no_config").mkdir()
    monkeypatch.setenv("VIZHOOKS_MODELS", str(tmp_path / "models.toml"))
    entries, warnings = operator_models()
    entry = entries["Tiny ViT (小模型)"]
    assert entry.arch == f"hf:{folders['vit'].resolve()}" and entry.description == "猫, 狗, 杯子"
    assert len(warnings) == 4 and "Broken" in warnings[0] and "'hf' entry takes no 'arch'" in warnings[0]
    # a Hub id whose config is neither cached nor downloadable (HF_HUB_OFFLINE): not offered, and said why;
    # loading it by name still says why it cannot be loaded
    assert "Missing" not in entries and "Missing" not in list_models()
    assert warnings[0].startswith("VIZHOOKS_MODELS entry 2 (Broken) is not offered: ")  # as each warning names it
    assert warnings[1].startswith("VIZHOOKS_MODELS entry 3 (Missing) is not offered: ")
    assert "HF_HUB_OFFLINE" in warnings[1]
    assert "Unreadable" not in entries and "its config.json could not be read" in warnings[2]  # a broken config
    assert "No config" not in entries and "has no config.json" in warnings[3]  # a folder: nothing to download
    with pytest.raises(WeightsError, match="HF_HUB_OFFLINE is set.*someone/missing_model"):
        load_model("Missing", device="cpu")
    bundle = load_model("Tiny ViT (小模型)", device="cpu")
    torch.testing.assert_close(bundle.model(_x()), _hf_own(folders["vit"])(pixel_values=_x()).logits)


def test_the_page_keeps_working_when_an_operators_hub_model_cannot_be_fetched(tmp_path, monkeypatch):
    """A classroom server that cannot reach the Hugging Face Hub (HF_HUB_OFFLINE here): its link to that model
    is reported as ignored, the sidebar says why the model is not offered, and the page shows resnet18."""
    from tests.helpers import layer_headings, ok, open_page
    from vizhooks.page.texts import ZH

    (tmp_path / "models.toml").write_text('[[model]]\nname = "Missing"\nhf = "someone/missing_model"\n')
    monkeypatch.setenv("VIZHOOKS_MODELS", str(tmp_path / "models.toml"))
    at = open_page(model="Missing", lang="zh", size="128", layers="conv1")
    ok(at)
    assert at.selectbox(key="model").value == "resnet18" and "conv1" in layer_headings(at)
    assert [i.value for i in at.info] == [ZH["url_notice"].format(items="model=Missing")]
    assert [w.value for w in at.sidebar.warning if "Missing" in w.value and "HF_HUB_OFFLINE" in w.value]


def test_the_cli_draws_an_hf_models_blocks(folders, tmp_path, capsys):
    photo = tmp_path / "photo.png"
    Image.new("RGB", (40, 48), (200, 30, 30)).save(photo)
    name = f"hf:{folders['vit']}"
    code, out, err = run_cli(capsys, photo, "--model", name, "--layers", "hf.vit.layers.1", "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "hf.vit.layers.1.png").is_file()
    code, out, _ = run_cli(capsys, "--list-layers", "--model", name)
    assert code == 0 and "hf.vit.layers.0" in out and "hf.vit.embeddings.patch_embeddings.projection" in out
    code, _, err = run_cli(capsys, photo, "--model", "hf:no/such-model")
    assert code == 2 and "HF_HUB_OFFLINE" in err and "Traceback" not in err


@pytest.mark.slow
def test_the_page_shows_an_operators_hf_model_in_its_views(folders, tmp_path, monkeypatch):
    from tests.helpers import choose_view, layer_headings, ok, open_page

    (tmp_path / "models.toml").write_text(f'[[model]]\nname = "Tiny ViT"\nhf = "{folders["vit"]}"\n')
    monkeypatch.setenv("VIZHOOKS_MODELS", str(tmp_path / "models.toml"))
    at = open_page(model="Tiny ViT")
    ok(at)
    assert layer_headings(at) == ["hf.vit.layers.0", "hf.vit.layers.1"]  # the blocks, by their HF names
    for view in ("explain", "overview"):
        choose_view(at, view)
        ok(at)


@pytest.mark.slow
@pytest.mark.parametrize("pretrained", [True, False])
def test_the_lessons_code_for_an_hf_model_runs_and_prints_the_pages_numbers(folders, tmp_path, pretrained):
    """The code under "How this was made" for an hf: model: transformers' own loading code, wrapped to return
    logits, run by a fresh Python (no vizhooks) on the saved folder; its logits and Grad-CAM are the page's."""
    _lesson_code_is_the_pages(f"hf:{folders['vit']}", ["hf.vit.layers.0", "hf.vit.layers.1"], tmp_path, pretrained)


@pytest.mark.slow
def test_the_lessons_code_for_mobilevit_follows_its_processor(mobilevit, tmp_path):
    """MobileViT's code resizes the shorter side to 40 before the 32 crop (the longer side rounded down, as
    transformers does) and flips the channels, as the page."""
    name = f"hf:{mobilevit}"
    layers = [b.name for b in block_layers(load_model(name, device="cpu").model)][-2:]
    code = _lesson_code_is_the_pages(name, layers, tmp_path, True)
    assert "flip=True" in code and "new_w, new_h = 40, int(40 * h / w)" in code


def _lesson_code_is_the_pages(name: str, layers: list[str], tmp_path, pretrained: bool) -> str:
    import json

    from tests.helpers import ROOT
    from vizhooks.analysis import analyse
    from vizhooks.hooks.gradients import gradient_pass
    from vizhooks.interpret.cam import cams_from
    from vizhooks.lesson.code import view_code
    from vizhooks.models.images import load_image

    image = "sample_images/chelsea.jpg"
    code = view_code("gradcam", model=name, image=image, size=128, layers=layers, pretrained=pretrained).full
    assert "vizhooks" not in code and "models.hf" not in code and "AutoModelForImageClassification" in code
    path = tmp_path / "snippet.py"
    path.write_text(code + '\nimport json\n\nprint("@@", json.dumps(model(x)[0].tolist()))\n')  # its logits
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VIZHOOKS_OFFLINE": "1"}
    run = run_python(path=path, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    printed = torch.tensor(json.loads(next(line for line in lines if line.startswith("@@"))[3:]))
    # the page: the same model (its folder's weights, or the seeded random ones), the same photo and size
    bundle = load_model(name, weights="auto" if pretrained else "none", device="cpu")
    analysis = analyse(bundle, load_image(ROOT / image), 128, layers)
    torch.testing.assert_close(printed, analysis.logits[0], rtol=1e-4, atol=1e-4)
    result = gradient_pass(bundle.model, analysis.x, layers, target=int(analysis.logits[0].argmax()), as_maps=True)
    cams = cams_from(result, tuple(analysis.x.shape[-2:]))
    for layer in layers:
        line = next(line for line in lines if line.startswith(f"{layer} Grad-CAM"))
        shape, mean = line.split(" Grad-CAM ")[1].split(" mean ")
        assert shape == str(tuple(cams[layer].shape))
        assert abs(float(mean.split(" peak")[0]) - float(cams[layer].mean())) <= 1e-3, (layer, line)
    return code


# --- each processor's own preprocessing (MobileViT: no mean/std, [0, 1], BGR; a resize before the crop) ---------

def _smooth_picture(width: int, height: int) -> Image.Image:
    """Colour ramps, each channel its own direction (a flipped channel order shows), no sharp edges (a
    resampling backend's rounding stays small)."""
    ys, xs = torch.meshgrid(torch.linspace(0, 1, height), torch.linspace(0, 1, width), indexing="ij")
    rgb = torch.stack([xs, ys, (xs + ys) / 2 * 0.6 + 0.2], -1)
    return Image.fromarray((rgb * 255).round().to(torch.uint8).numpy())


def _save_with_processor(kind: str, processor, folder):
    return save_tiny_hf(kind, folder, processor)


@pytest.fixture(scope="module")
def mobilevit(tmp_path_factory):
    """A tiny MobileViT saved with MobileViT's own image processor: shorter side 40, centre crop 32."""
    from transformers import MobileViTImageProcessor

    processor = MobileViTImageProcessor(size={"shortest_edge": 40}, crop_size={"height": 32, "width": 32}, resample=2)
    return _save_with_processor("mobilevit", processor, tmp_path_factory.mktemp("mobilevit"))


def _their_pixels(folder, image: Image.Image, backend: str | None = None) -> torch.Tensor:
    from transformers import AutoImageProcessor

    kwargs = {"backend": backend} if backend else {}
    return AutoImageProcessor.from_pretrained(folder, **kwargs)(image, return_tensors="pt").pixel_values


@pytest.mark.parametrize("size", [(60, 80), (80, 60), (48, 48)])
def test_mobilevit_gets_its_own_processors_tensor_and_the_hf_models_logits(mobilevit, size):
    """MobileViT's processor does not normalise, rescales to [0, 1], resizes the shorter side to 40 before a
    32 crop and flips RGB to BGR: the bundle's tensor (RGB, as every vizhooks tensor) is the processor's with
    its channels flipped back, and the bundle's logits on it are the HF model's own on the processor's."""
    bundle = load_model(f"hf:{mobilevit}", device="cpu")
    image = _smooth_picture(*size)
    ours = bundle.preprocess(image, 128)  # the page's size does not apply: the processor's sizes do
    exact = _their_pixels(mobilevit, image, "pil")  # PIL's resampling, as vizhooks'
    assert ours.shape == exact.shape == (1, 3, 32, 32)
    torch.testing.assert_close(ours.flip(1), exact, rtol=0, atol=1e-5)
    default = _their_pixels(mobilevit, image)  # transformers' default backend resamples with torchvision
    torch.testing.assert_close(ours.flip(1), default, rtol=0, atol=0.02)
    with torch.no_grad():
        theirs = _hf_own(mobilevit)(pixel_values=exact).logits
        torch.testing.assert_close(bundle.model(ours), theirs, rtol=1e-5, atol=1e-5)
        # the logits answer the input: the channels' order alone moves them far beyond the tolerance
        assert (theirs - _hf_own(mobilevit)(pixel_values=exact.flip(1)).logits).abs().max() > 1e-3
    spec = bundle.input
    assert (spec.mean, spec.std, spec.channels) == ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), "BGR")
    assert (spec.fixed_size, spec.resize_side, spec.interpolation) == (32, 40, "bilinear")


def _processor(kind: str):
    """Each resize rule of transformers' processors, at a side a tiny model takes."""
    import transformers as tf

    from tests.helpers import tiny_hf_processor

    if kind == "convnext384":  # ConvNeXt at 384 and above: squashed to a square, no crop
        return tf.ConvNextImageProcessor(size={"shortest_edge": 384}, resample=3)
    if kind == "beit":  # a {"height", "width"} size squashed, then a centre crop
        return tf.BeitImageProcessor(size={"height": 40, "width": 40}, crop_size={"height": 32, "width": 32},
                                     do_center_crop=True, resample=3, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return tiny_hf_processor(kind)  # vit, deit: {"height": 32, "width": 32}; convnext, resnet: shortest_edge 32


@pytest.mark.parametrize("kind", ["vit", "deit", "beit", "convnext", "convnext384", "resnet"])
# 113 x 301: the longer side int(36 * 301 / 113) = 95, not round()'s 96, and a reduction of more than 3 times
# (PIL's reducing_gap=3, which transformers does not use, would change the pixels)
@pytest.mark.parametrize("size", [(120, 80), (113, 301)])
def test_a_non_square_photo_gets_its_processors_own_tensor_and_the_hf_models_logits(kind, size, tmp_path):
    """ViT and DeiT squash the photo to 32 x 32 (no crop), BEiT squashes to 40 x 40 then crops 32, ConvNeXt and
    ResNet (ConvNeXt's processor) resize the shorter side to int(32 / 0.875) = 36 then crop 32, ConvNeXt at 384
    squashes to 384 x 384: on a non-square photo each gives a different tensor, and ours is the processor's own."""
    folder = save_tiny_hf(kind.removesuffix("384"), tmp_path, _processor(kind))
    bundle = load_model(f"hf:{folder}", device="cpu")
    image = _smooth_picture(*size)
    ours, exact = bundle.preprocess(image, 128), _their_pixels(folder, image, "pil")  # PIL's resampling, as ours
    side = 384 if kind == "convnext384" else 32
    assert ours.shape == exact.shape == (1, 3, side, side)
    torch.testing.assert_close(ours, exact, rtol=0, atol=1e-5)
    # transformers' default backend resamples with torchvision: the same picture up to its rounding
    torch.testing.assert_close(ours, _their_pixels(folder, image), rtol=0, atol=0.05)
    assert bundle.input.channels == "RGB" and not bundle.model.flip_channels
    with torch.no_grad():
        theirs = _hf_own(folder)(pixel_values=exact).logits
        torch.testing.assert_close(bundle.model(ours), theirs, rtol=1e-5, atol=1e-5)
        assert (theirs - _hf_own(folder)(pixel_values=exact.flip(1)).logits).abs().max() > 1e-3


def test_poolformers_crop_pct_rule_gives_its_processors_tensor():
    """PoolFormer's processor (its own crop_pct rule: the shorter side to int(32 / 0.9) = 35, then the crop)."""
    import tempfile

    import transformers as tf

    from vizhooks.models.architectures import hf_processor
    from vizhooks.models.images import fit_to_model, processor_spec, to_tensor

    processor = tf.PoolFormerImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    with tempfile.TemporaryDirectory() as folder:
        processor.save_pretrained(folder)
        spec = processor_spec(hf_processor(folder))
        for size in [(120, 80), (113, 301)]:
            image = _smooth_picture(*size)
            ours = to_tensor(fit_to_model(image, 128, spec), spec.mean, spec.std)
            torch.testing.assert_close(ours, _their_pixels(folder, image, "pil"), rtol=0, atol=1e-5)
    assert (spec.fixed_size, spec.resize_side, spec.squash) == (32, 35, False)


def test_an_old_mobilevit_processor_file_is_read_as_transformers_reads_it(tmp_path):
    """apple/mobilevit-small's file: single numbers for size and crop, no mean, std or do_normalize."""
    import json

    from transformers import AutoImageProcessor

    from vizhooks.models.architectures import hf_processor
    from vizhooks.models.images import fit_to_model, processor_spec, to_tensor

    (tmp_path / "preprocessor_config.json").write_text(json.dumps(
        {"crop_size": 256, "do_center_crop": True, "do_flip_channel_order": True, "do_resize": True,
         "feature_extractor_type": "MobileViTFeatureExtractor", "resample": 2, "size": 288}))
    spec = processor_spec(hf_processor(str(tmp_path)))
    image = _smooth_picture(300, 400)
    ours = to_tensor(fit_to_model(image, 224, spec), spec.mean, spec.std)
    processor = AutoImageProcessor.from_pretrained(tmp_path, backend="pil")
    torch.testing.assert_close(ours.flip(1), processor(image, return_tensors="pt").pixel_values, rtol=0, atol=1e-5)
    assert (spec.fixed_size, spec.resize_side, spec.channels, spec.std) == (256, 288, "BGR", (1.0, 1.0, 1.0))


def test_the_readmes_and_the_manual_name_every_processor_field_used():
    from tests.helpers import ROOT
    from vizhooks.models.architectures import HF_PROCESSOR_FIELDS

    for doc in ("README.md", "README.zh-CN.md", "docs/models.md", "docs/models.zh.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert [f for f in HF_PROCESSOR_FIELDS if f"`{f}`" not in text] == [], doc


def test_rescaling_without_normalising_is_folded_into_mean_and_std():
    from vizhooks.models.images import processor_spec

    raw = processor_spec({"do_rescale": False, "do_normalize": False, "size": {"height": 32, "width": 32}})
    assert raw.mean == (0.0, 0.0, 0.0) and raw.std == pytest.approx((1 / 255,) * 3)  # pixels 0-255 as they are
    halved = processor_spec({"rescale_factor": 1 / 510, "image_mean": [0.5] * 3, "image_std": [0.25] * 3})
    assert halved.mean == pytest.approx((1.0,) * 3) and halved.std == pytest.approx((0.5,) * 3)


def test_a_model_that_takes_only_non_square_pictures_is_refused_in_one_sentence(tmp_path, capsys, monkeypatch):
    """A ViT built for 32 x 16 pictures: the Hugging Face model itself refuses the square picture vizhooks would
    make, so loading it (library and CLI) says why in one sentence instead of failing at the first forward pass.
    A non-square size followed by a square crop still gives a square input, and loads."""
    import transformers as tf

    from vizhooks.errors import CodedError
    from vizhooks.models.images import processor_spec

    config = tf.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                          image_size=(32, 16), patch_size=8, num_labels=3)
    tf.ViTForImageClassification(config).save_pretrained(tmp_path / "tall")
    tf.ViTImageProcessor(size={"height": 32, "width": 16}).save_pretrained(tmp_path / "tall")
    own = _hf_own(tmp_path / "tall")
    assert own(pixel_values=torch.zeros(1, 3, 32, 16)).logits.shape == (1, 3)
    with pytest.raises(ValueError, match="doesn't match"):
        own(pixel_values=torch.zeros(1, 3, 32, 32))
    with pytest.raises(CodedError) as refused:
        load_model(f"hf:{tmp_path / 'tall'}", device="cpu")
    assert (refused.value.code, refused.value.values) == ("model_not_square", {"height": 32, "width": 16})
    with monkeypatch.context() as m:  # refused before its weights are read (or, for a Hub id, downloaded)
        m.setattr("vizhooks.models.registry.hf_pretrained", lambda ref: pytest.fail("the weights were read"))
        with pytest.raises(CodedError, match="16 x 32"):
            load_model(f"hf:{tmp_path / 'tall'}", device="cpu")
    assert "16 x 32 pixels only" in str(refused.value) and str(refused.value).count(".") == 1
    photo = tmp_path / "photo.png"
    Image.new("RGB", (40, 48), (200, 30, 30)).save(photo)
    for listing in ((), ("--list-layers",)):
        code, _, err = run_cli(capsys, photo, "--model", f"hf:{tmp_path / 'tall'}", "--out", tmp_path / "out", *listing)
        assert code == 2 and err.strip().endswith("of any size.") and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
    # an operator's entry of it is not offered, and the warning says why
    (tmp_path / "models.toml").write_text('[[model]]\nname = "Tall"\nhf = "tall"\n', encoding="utf-8")
    monkeypatch.setenv("VIZHOOKS_MODELS", str(tmp_path / "models.toml"))
    entries, warnings = operator_models()
    assert "Tall" not in entries and warnings == [f"VIZHOOKS_MODELS entry 1 (Tall) is not offered: {refused.value}"]
    # without a processor the config's image_size says the same
    for pair in ([32, 16], (32, 16)):  # a config's image_size, a processor's size pair (transformers: height, width)
        with pytest.raises(CodedError, match="16 x 32"):
            processor_spec(None, pair)
        with pytest.raises(CodedError, match="16 x 32"):
            processor_spec({"size": pair})
    assert processor_spec(None, (32, 32)).fixed_size == 32
    square = processor_spec({"size": (32, 32)})
    assert (square.fixed_size, square.squash) == (32, True)  # as transformers squashes a {"height", "width"} size
    # squashed to a non-square size, then cropped to a square: the model sees a square
    folder = save_tiny_hf("vit", tmp_path / "cropped", tf.BeitImageProcessor(
        size={"height": 40, "width": 24}, crop_size={"height": 32, "width": 32}, do_center_crop=True))
    assert load_model(f"hf:{folder}", device="cpu").input.fixed_size == 32
    with pytest.raises(CodedError, match="24 x 32"):  # a non-square crop is refused
        processor_spec({"size": {"height": 40, "width": 40}, "do_center_crop": True,
                        "crop_size": {"height": 32, "width": 24}})


def test_a_folder_without_config_or_weights_says_what_the_folder_lacks(folders, tmp_path, capsys):
    """An empty folder: "has no config.json", not transformers' guess about a missing model_type in a file that is
    not there. A folder with a config but no weights: random weights, and the fix is about the folder (no advice
    to load it on a machine with internet)."""
    import shutil

    (tmp_path / "empty").mkdir()
    with pytest.raises(WeightsError, match=r"^Hugging Face model folder \S+empty has no config.json \("):
        load_model(f"hf:{tmp_path / 'empty'}", device="cpu")
    photo = tmp_path / "photo.png"
    Image.new("RGB", (40, 48), (200, 30, 30)).save(photo)
    code, _, err = run_cli(capsys, photo, "--model", f"hf:{tmp_path / 'empty'}", "--out", tmp_path / "out")
    assert code == 2 and err.strip().endswith("has no config.json (save_pretrained writes one).")
    assert "model_type" not in err
    from vizhooks import i18n
    from vizhooks.page.texts import ZH

    i18n.set_language("zh")  # in Chinese the same, in a Chinese sentence
    code, _, err = run_cli(capsys, photo, "--model", f"hf:{tmp_path / 'empty'}", "--out", tmp_path / "out")
    assert (code, err) == (2, f"vizhooks：错误：{ZH['err_hf_no_config'].format(ref=tmp_path / 'empty')}\n")
    i18n.set_language("en")
    (tmp_path / "config_only").mkdir()
    shutil.copy(folders["vit"] / "config.json", tmp_path / "config_only")
    bundle = load_model(f"hf:{tmp_path / 'config_only'}", device="cpu")
    assert not bundle.pretrained and bundle.weights_source == "random"
    assert "save the model into the folder with save_pretrained" in bundle.weights_status
    assert "internet" not in bundle.weights_status and ".)" not in bundle.weights_status


def test_the_input_rules_are_read_again_when_the_processor_file_changes(tmp_path):
    """input_spec is kept per model while its files stay as they are (the page asks it on every run), and read
    again when the saved processor changes: a model saved anew in the same folder gets its new rules."""
    import transformers as tf

    from vizhooks.models.registry import input_spec

    folder = save_tiny_hf("vit", tmp_path / "vit")
    assert input_spec(f"hf:{folder}").mean == (0.5, 0.4, 0.3)
    assert input_spec(f"hf:{folder}") is input_spec(f"hf:{folder}")
    tf.ViTImageProcessor(size={"height": 32, "width": 32}, image_mean=[0.1, 0.2, 0.3], image_std=[0.2, 0.25, 0.3],
                         ).save_pretrained(folder)
    assert input_spec(f"hf:{folder}").mean == (0.1, 0.2, 0.3)
