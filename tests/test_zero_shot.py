"""CLIP zero-shot (``zero_shot(arch, prompts)``) on tiny open_clip models registered from a config,
with random weights (``weights="none"``): logits against open_clip's own similarity, the prompt cache,
Grad-CAM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

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


#: The pieces of a tiny XLM-R tokenizer (open_clip's multilingual models read names with XLM-R's): Chinese
#: words and characters, some English; "-en" keeps only the English ones, so Chinese is unknown to it.
CHINESE_PIECES = ["一只", "猫", "狗", "的", "照片", "红色", "杯子", "鸟"]
ENGLISH_PIECES = ["▁a", "▁photo", "▁of", "▁cat", "▁dog", "▁", "a", "c", "t"]
LOST = "vizhooks-test/no-such-text-tower"
XLMR = {"vizhooks-tiny-xlmr": ENGLISH_PIECES + CHINESE_PIECES, "vizhooks-tiny-xlmr-en": ENGLISH_PIECES}


def _tiny_xlmr(folder: Path, pieces: list[str]) -> dict:
    """A tiny XLM-R text tower (config and tokenizer, no weights) in ``folder``, and the open_clip config
    of a CLIP model that reads names with it, as ``xlm-roberta-base-ViT-B-32`` does with XLM-R's."""
    import transformers

    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p, -float(i)) for i, p in enumerate(pieces)] + [("<mask>", 0.0)]
    transformers.XLMRobertaTokenizer(vocab=vocab).save_pretrained(folder)
    config = transformers.XLMRobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, intermediate_size=64, max_position_embeddings=24,
                                           pad_token_id=1)
    config.save_pretrained(folder)
    return {"embed_dim": 16, "vision_cfg": CONFIGS["vizhooks-tiny-vit"]["vision_cfg"],
            "text_cfg": {"hf_model_name": str(folder), "hf_tokenizer_name": str(folder),
                         "hf_pooler_type": "mean_pooler", "context_length": 16}}


@pytest.fixture(scope="module", autouse=True)
def tiny_configs(tmp_path_factory):
    import open_clip

    folder = tmp_path_factory.mktemp("open_clip_configs")
    configs = {**CONFIGS, **{name: _tiny_xlmr(tmp_path_factory.mktemp(name), pieces) for name, pieces in XLMR.items()},
               "vizhooks-tiny-lost": {**CONFIGS["vizhooks-tiny-vit"], "text_cfg": {
                   "hf_model_name": LOST, "hf_tokenizer_name": LOST}}}  # neither cached nor downloadable
    for name, cfg in configs.items():
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


def test_a_clip_name_carries_its_class_names_and_the_registry_knows_its_layers():
    from vizhooks.models.layers import architecture_layers, reference_hw
    from vizhooks.models.registry import clip_name, clip_parts, display_name, family, load_model, meta_model

    names = ["猫", "a photo of a dog", "红色的杯子"]
    bundle = zero_shot("vizhooks-tiny-vit", names, weights="none", device="cpu")
    assert bundle.name == clip_name("vizhooks-tiny-vit", names) and clip_parts(bundle.name) == ("vizhooks-tiny-vit",
                                                                                                tuple(names))
    meta = meta_model(bundle.name)[0]
    assert [n for n, _ in meta.named_modules()] == [n for n, _ in bundle.model.named_modules()]
    assert [i.name for i in architecture_layers(bundle.name) if i.kind == "block"] == [
        b.name for b in block_layers(bundle.model)]
    assert reference_hw(bundle.name) == (32, 32) and family(bundle.name) == "CLIP"
    # in a sentence: the architecture without the class names; any other model as it is named
    assert display_name(bundle.name) == "CLIP vizhooks-tiny-vit" and display_name("resnet18") == "resnet18"
    with pytest.raises(ValueError, match=r"vizhooks.zero_shot\('vizhooks-tiny-vit'"):
        load_model(bundle.name)


# --- Chinese class names: a multilingual text tower ------------------------------------------------------

CHINESE = ["一只猫的照片", "一只狗的照片", "红色杯子"]


def test_a_multilingual_model_reads_chinese_names_as_chinese_pieces_and_its_logits_are_open_clips():
    import open_clip

    from vizhooks.models.zero_shot import reads_chinese

    arch = "vizhooks-tiny-xlmr"
    tokenizer = open_clip.get_tokenizer(arch).tokenizer
    assert type(tokenizer).__name__ == "XLMRobertaTokenizer"
    vocab = tokenizer.get_vocab()
    ids = open_clip.get_tokenizer(arch)(CHINESE)
    # the pieces put in the vocabulary, in the names' order: no unknown token, each name its own ids
    assert ids[0, 1:6].tolist() == [vocab[p] for p in ("▁", "一只", "猫", "的", "照片")]
    assert ids[1, 1:6].tolist() == [vocab[p] for p in ("▁", "一只", "狗", "的", "照片")]
    assert tokenizer.unk_token_id not in ids.tolist()[0] + ids.tolist()[1] + ids.tolist()[2]
    # weights "none": the text tower from its config alone (its folder holds no weights to download)
    bundle = zero_shot(arch, CHINESE, weights="none", device="cpu")
    clip, x = bundle.clip, _x()
    assert isinstance(clip, open_clip.CustomTextCLIP) and bundle.categories == CHINESE
    with torch.no_grad():
        image = F.normalize(clip.encode_image(x), dim=-1)
        text = F.normalize(clip.encode_text(ids), dim=-1)
        expected = clip.logit_scale.exp() * image @ text.T
        ours = bundle.model(x)
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-5)
    assert (ours[0, 0] - ours[0, 1]).abs() > 1e-4  # 猫 and 狗 are different classes to it
    assert reads_chinese(arch)
    assert not reads_chinese("vizhooks-tiny-xlmr-en")  # an English vocabulary: Chinese is unknown to it
    assert not reads_chinese("vizhooks-tiny-vit")  # CLIP's own BPE tokenizer, as every English CLIP


def test_a_text_tower_whose_files_are_missing_is_one_sentence():
    from vizhooks.models.zero_shot import reads_chinese

    with pytest.raises(WeightsError, match=r"no-such-text-tower.*make weights CLIP=vizhooks-tiny-lost") as info:
        zero_shot("vizhooks-tiny-lost", PROMPTS, weights="none", device="cpu")
    assert "\n" not in str(info.value)
    assert not reads_chinese("vizhooks-tiny-lost")


# --- the page: "Your own class names (CLIP)" ---------------------------------------------------------


def _page_top5(names: list[str], size: int, arch: str = "vizhooks-tiny-vit") -> list[str]:
    """The top-5 lines the page should show, from zero_shot called directly on the sample photo."""
    from vizhooks.analysis import top_classes
    from vizhooks.models.images import load_image
    from vizhooks.page.sources.sample import default_sample, samples_dir

    bundle = zero_shot(arch, names, device="cpu")  # as the page: weights "auto" (random here)
    x = bundle.preprocess(load_image((samples_dir() / default_sample()).read_bytes()), size)
    with torch.no_grad():
        logits = bundle.model(x)
    return [f"{p.label} · {p.probability:.1%}" for p in top_classes(logits, list(names), 5)]


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "names"), [
    ("en", ["a photo of a cat", "a photo of a dog", "a photo of a teapot", "a photo of a bus"]),
    ("zh", ["猫", "狗", "红色的杯子"]),
])
def test_the_pages_own_class_names_choice_shows_zero_shots_top5(monkeypatch, lang, names):
    from tests.helpers import choose_view, ok, open_page
    from vizhooks.lesson.i18n import in_language
    from vizhooks.page.results import get_bundle

    monkeypatch.setenv("VIZHOOKS_CLIP", "vizhooks-tiny-vit")
    at = open_page(lang=lang)
    menu = at.selectbox(key="model")
    label = "自己输入类别名" if lang == "zh" else "Your own class names"
    menu.select_index(next(i for i, o in enumerate(menu.options) if label in o)).run()
    ok(at)
    at.text_area(key="clip_names").input("\n".join(names)).run()
    ok(at)
    shown = [p.proto.text for p in at.get("progress")]
    assert shown == _page_top5(names, int(at.slider(key="size").value))
    assert any("CLIP" in c.value and ("英文" if lang == "zh" else "English") in c.value for c in at.caption)
    # the input's note names the model as a sentence does (QA: "clip:RN50 猫 狗 咖啡 需要 ...", the class names in it)
    note = in_language(lang, lambda: get_bundle(at.session_state["model"]).input_note())
    assert note and note.startswith("CLIP vizhooks-tiny-vit ") and note in [c.value for c in at.caption]
    assert not any(name in note for name in names)
    # Chinese names for a model that reads English only: a warning names the first, and says what to do
    told = [w.value for w in at.warning if "VIZHOOKS_CLIP" in w.value]
    assert told == ([f"“{names[0]}”不是英文，而这个 CLIP 模型只读得懂英文：请改用英文输入（可以借助翻译工具），"
                     f"或请管理员换一个多语言的 CLIP 模型（VIZHOOKS_CLIP）。"] if lang == "zh" else [])
    # the link carries the model and its class names: a new visitor sees the same names and classes
    link = at.query_params["model"]
    link = link[0] if isinstance(link, list) else link
    assert link.split("\n")[1:] == names
    again = open_page(lang=lang, model=link)
    ok(again)
    assert again.text_area(key="clip_names").value == "\n".join(names)
    assert [p.proto.text for p in again.get("progress")] == shown
    # a bad list keeps the last good names, and says why
    again.text_area(key="clip_names").input(names[0]).run()
    assert again.query_params["model"] in (link, [link]) and len(again.warning) >= 1
    for view in ("gradcam", "overview"):
        choose_view(at, view)
        ok(at)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_multilingual_model_on_the_page_takes_chinese_names_and_shows_zero_shots_top5(monkeypatch, lang):
    from tests.helpers import ok, open_page
    from vizhooks.page.texts import LANGUAGES

    monkeypatch.setenv("VIZHOOKS_CLIP", "vizhooks-tiny-xlmr")
    at = open_page(lang=lang)
    menu = at.selectbox(key="model")
    menu.select_index(next(i for i, o in enumerate(menu.options) if "vizhooks-tiny-xlmr" in o)).run()
    ok(at)
    at.text_area(key="clip_names").input("\n".join(CHINESE)).run()
    ok(at)
    assert [p.proto.text for p in at.get("progress")] == _page_top5(CHINESE, int(at.slider(key="size").value),
                                                                     "vizhooks-tiny-xlmr")
    many = "读得懂多种语言，包括中文" if lang == "zh" else "reads many languages, Chinese included"
    assert any(many in c.value for c in at.caption)
    assert LANGUAGES[lang]["hf_clip_english"] not in [c.value for c in at.caption]  # not "reads English only"
    assert not any("VIZHOOKS_CLIP" in w.value for w in at.warning)


def test_a_link_to_another_clip_model_or_bad_names_is_refused(monkeypatch):
    from vizhooks.models.registry import clip_name
    from vizhooks.page.clip import offered

    monkeypatch.setenv("VIZHOOKS_CLIP", "vizhooks-tiny-vit")
    assert offered(clip_name("vizhooks-tiny-vit", ["a", "b"]))
    assert not offered(clip_name("vizhooks-tiny-rn", ["a", "b"]))  # the server's model only
    assert not offered(clip_name("vizhooks-tiny-vit", ["a"]))
    assert not offered(clip_name("vizhooks-tiny-vit", ["a", "a"]))
    assert not offered(clip_name("vizhooks-tiny-vit", [str(i) for i in range(21)]))
    monkeypatch.setenv("VIZHOOKS_CLIP", "off")
    assert not offered(clip_name("vizhooks-tiny-vit", ["a", "b"]))


@pytest.mark.slow
def test_make_weights_clip_offline_fails_in_one_sentence(tmp_path, monkeypatch, capsys):
    """``make weights CLIP=RN50:openai`` fetches open_clip's weights; offline it says so in one sentence;
    a misspelt name (the same command, run here in this process) gets the name it meant."""
    from vizhooks.__main__ import main

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}  # an empty cache
    make = [shutil.which("make") or "make", "-s", "-o", ".venv/.runtime", "weights"]  # -o: no pip install
    done = subprocess.run([*make, "CLIP=RN50:openai"], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    ours = [line for line in done.stderr.splitlines() if line.startswith("vizhooks:")]
    assert done.returncode != 0 and len(ours) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "HF_HUB_OFFLINE" in ours[0] and "openai weights of RN50" in ours[0] and "HF_HOME" in ours[0]
    monkeypatch.setenv("HF_HOME", env["HF_HOME"])
    assert main(["--download-weights", "clip:RN5"]) == 2
    said = capsys.readouterr().err
    assert "Did you mean: RN50" in said and "Traceback" not in said


def test_fetch_clip_offline_names_what_is_missing(monkeypatch):
    from vizhooks.models.zero_shot import fetch_clip

    with pytest.raises(WeightsError, match=r"HF_HUB_OFFLINE is set.*yfcc15m weights of RN50") as info:
        fetch_clip("RN50:yfcc15m")
    assert "\n" not in str(info.value)
    with pytest.raises(WeightsError, match="openai weights of RN50"):  # no tag: the model's first one
        fetch_clip("RN50")
    with pytest.raises(WeightsError, match="no weights 'nope' for RN50"):
        fetch_clip("RN50:nope")
    with pytest.raises(WeightsError, match="lists no pretrained weights for vizhooks-tiny-rn"):
        fetch_clip("vizhooks-tiny-rn")


def test_load_model_and_the_cli_say_how_a_clip_model_is_built(capsys):
    """CLIP needs its class names: load_model and `python -m vizhooks --model clip:ARCH` refuse in one sentence that
    gives the call that builds it (with the names the name carries, or an example) and the page's way."""
    from tests.helpers import ROOT, run_cli
    from vizhooks.models.registry import clip_name, load_model

    with pytest.raises(ValueError, match=r"^CLIP RN50 needs .*vizhooks\.zero_shot\('RN50', \['猫', 'a dog'\]\)"):
        load_model(clip_name("RN50", ["猫", "a dog"]), device="cpu")
    code, out, err = run_cli(capsys, ROOT / "sample_images" / "chelsea.jpg", "--model", "clip:ViT-B-32", "--weights",
                             "none")
    assert (code, out) == (2, "") and "Traceback" not in err
    assert err.endswith("vizhooks.zero_shot('ViT-B-32', ['a cat', 'a dog']) in Python, or type the names on the "
                        "page; load_model and the command line do not build it.\n"), err
    from vizhooks import i18n
    from vizhooks.page.texts import ZH

    i18n.set_language("zh")  # the command line in Chinese: the same call, in a Chinese sentence
    code, out, err = run_cli(capsys, ROOT / "sample_images" / "chelsea.jpg", "--model", "clip:ViT-B-32", "--weights",
                             "none")
    call = "vizhooks.zero_shot('ViT-B-32', ['a cat', 'a dog'])"
    assert (code, err) == (2, f"vizhooks：错误：{ZH['err_clip_needs_names'].format(arch='ViT-B-32', call=call)}\n")
