"""Teaching the network new classes (vizhooks.teach): it learns what can be learned and nothing
else, agrees with scikit-learn's logistic regression, saves a checkpoint load_model reads back into
the same logits, explains the new classes with Grad-CAM, and never changes the shared backbone."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
import torch
from torch import nn

import vizhooks as vz
from tests.helpers import count_hooks, run_cli, shape_photos
from vizhooks._hooks import model_lock
from vizhooks.models.registry import meta_model, resolve_entry
from vizhooks.teaching import (
    TeachError,
    check_examples,
    features,
    find_head,
    fit_head,
    heldout_folds,
    taught_bundle,
    teach,
)

SIZE = 112  # large enough for a random ResNet-18 to tell the shapes apart, small enough for 2 cores


@pytest.fixture(scope="module")
def photos():
    return shape_photos(15)


@pytest.fixture(scope="module")
def taught(resnet18, photos):
    return teach(resnet18, photos, size=SIZE)


@pytest.mark.slow
def test_learns_shapes_a_random_backbone_can_tell_apart(taught):
    assert taught.method == "5-fold" and taught.heldout == 45  # every photo of 3 x 15, once
    assert taught.accuracy >= 0.9
    assert taught.confusion.sum() == taught.heldout and taught.confusion.shape == (3, 3)
    assert taught.bundle.categories == ["disc", "square", "triangle"]
    assert taught.head_path == "fc" and taught.head.out_features == 3


def test_shuffled_labels_are_learned_no_better_than_chance(resnet18, photos):
    everything = [p for group in photos.values() for p in group]
    random.Random(3).shuffle(everything)
    shuffled = {name: everything[i * 15:(i + 1) * 15] for i, name in enumerate(photos)}
    accuracy = teach(resnet18, shuffled, size=SIZE).accuracy  # 45 predictions
    assert accuracy <= 0.6  # chance is 1/3


@pytest.mark.slow
def test_the_head_agrees_with_scikit_learn_on_the_same_features(resnet18, photos):
    from sklearn.linear_model import LogisticRegression

    feats = features(resnet18, [p for g in photos.values() for p in g], size=SIZE).double()
    labels = torch.tensor([c for c, g in enumerate(photos.values()) for _ in g])
    _, [(train, test), *_] = heldout_folds(labels.tolist(), 3, seed=1)
    mean, std = feats[train].mean(0), feats[train].std(0, unbiased=False).clamp_min(1e-6)
    z = ((feats - mean) / std).numpy()
    decay = 1e-2
    oracle = LogisticRegression(C=1 / (decay * len(train)), max_iter=5000, tol=1e-10)
    oracle.fit(z[train], labels[train].numpy())
    head = fit_head(feats[train].float(), labels[train], 3, weight_decay=decay)
    with torch.no_grad():
        ours = head(feats.float()).argmax(1).numpy()
    theirs = oracle.predict(z)
    assert (ours[test] == theirs[test]).mean() >= 0.95
    assert (ours[train] == theirs[train]).mean() >= 0.95


def test_saved_checkpoint_loads_into_the_same_logits(taught, tmp_path):
    weights, labels = taught.save(tmp_path / "my_model.pth")
    assert labels.read_text(encoding="utf-8").split() == ["disc", "square", "triangle"]
    again = vz.load_model("resnet18", weights=weights, labels=labels, device="cpu")
    assert again.categories == taught.bundle.categories
    x = torch.randn(2, 3, 96, 96, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(again.model(x), taught.bundle.model(x), atol=1e-5)
        assert again.model(x).shape == (2, 3)


def test_grad_cam_of_a_taught_class_is_the_formula(taught, photos):
    model = taught.bundle.model
    x = taught.bundle.preprocess(photos["square"][0], size=SIZE)
    target = taught.bundle.categories.index("square")
    got = vz.grad_cam(model, x, "layer4", target=target)

    from torchvision.models.feature_extraction import create_feature_extractor

    extractor = create_feature_extractor(model, {"layer4": "a", "fc": "logits"})
    out = extractor(x)
    (grad,) = torch.autograd.grad(out["logits"][0, target], out["a"])
    cam = torch.relu((grad.mean(dim=(2, 3), keepdim=True) * out["a"]).sum(1, keepdim=True)).detach()
    cam = (cam - cam.min()) / (cam.max() - cam.min())
    expected = nn.functional.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    assert torch.allclose(got, expected, atol=1e-5)


def test_teaching_in_two_sessions_leaves_the_backbone_bit_identical(resnet18, photos):
    before = {k: v.clone() for k, v in resnet18.model.state_dict().items()}
    fc = resnet18.model.fc
    results: list[vz.Taught] = []
    picked = [{k: v[:6] for k, v in photos.items()}, {k: v[6:12] for k, v in list(photos.items())[:2]}]
    threads = [threading.Thread(target=lambda p=p: results.append(teach(resnet18, p, size=64))) for p in picked]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2
    after = resnet18.model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert resnet18.model.fc is fc and fc.out_features == 1000
    assert count_hooks(resnet18.model) == 0
    for result in results:  # each its own head, every other weight the backbone's own tensor
        assert result.bundle.model.fc is not fc
        assert result.bundle.model.layer1 is resnet18.model.layer1
        assert result.bundle.model.conv1.weight.data_ptr() == resnet18.model.conv1.weight.data_ptr()
        assert model_lock(result.bundle.model) is model_lock(resnet18.model)


def test_a_hook_on_the_taught_model_root_does_not_reach_the_backbone(taught, resnet18):
    handle = taught.bundle.model.register_forward_hook(lambda *a: None)
    try:
        assert count_hooks(resnet18.model) == 0 and len(taught.bundle.model._forward_hooks) == 1
    finally:
        handle.remove()


def test_teaching_again_after_one_more_photo_costs_one_forward(resnet18, photos):
    seen: list[int] = []
    handle = resnet18.model.conv1.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape[0]))
    cache: dict = {}
    small = {k: v[:4] for k, v in photos.items()}
    try:
        teach(resnet18, small, size=64, cache=cache)
        assert sum(seen) == 12
        seen.clear()
        small["disc"] = [*small["disc"], photos["disc"][4]]
        teach(resnet18, small, size=64, cache=cache)
        assert seen == [1]
    finally:
        handle.remove()


def test_leave_one_out_when_a_class_has_fewer_than_ten(resnet18, photos):
    result = teach(resnet18, {k: v[:5] for k, v in photos.items()}, size=64)
    assert result.method == "leave-one-out" and result.heldout == 15
    assert len(result.fold_accuracies) == 15 and set(result.fold_accuracies) <= {0.0, 1.0}
    p = result.accuracy
    assert result.spread == pytest.approx((p * (1 - p) / 15) ** 0.5)  # the binomial standard error


@pytest.mark.parametrize("counts, k", [((12, 12), 5), ((10, 23, 17), 5), ((30, 11), 3), ((10, 10, 10, 10), 4)])
def test_folds_hold_out_every_photo_once_and_each_class_evenly(counts, k):
    labels = [c for c, n in enumerate(counts) for _ in range(n)]
    method, folds = heldout_folds(labels, k, seed=7)
    assert method == f"{k}-fold" and len(folds) == k
    held = sorted(i for _, test in folds for i in test)
    assert held == list(range(len(labels)))  # each photo exactly once
    for train, test in folds:
        assert sorted(train + test) == list(range(len(labels)))
        for c, n in enumerate(counts):  # stratified: each fold holds floor or ceil of n / k of class c
            inside = sum(1 for i in test if labels[i] == c)
            assert n // k <= inside <= -(-n // k)
    assert max(len(t) for _, t in folds) - min(len(t) for _, t in folds) <= 1
    assert heldout_folds(labels, k, seed=7) == (method, folds)
    assert heldout_folds(labels, k, seed=8) != (method, folds)


def test_cross_validation_counts_like_scikit_learn_on_the_same_folds(resnet18, photos):
    """Pooled accuracy, per-fold scores and the spread equal scikit-learn's cross_validate run on the same
    folds with an estimator that is our head (fit_head), so only the bookkeeping is compared."""
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.model_selection import cross_val_predict, cross_val_score

    class Head(ClassifierMixin, BaseEstimator):
        def fit(self, x, y):
            self.head_ = fit_head(torch.as_tensor(x), torch.as_tensor(y), 3, weight_decay=1e-2)
            self.classes_ = np.arange(3)
            return self

        def predict(self, x):
            with torch.no_grad():
                return self.head_(torch.as_tensor(x)).argmax(1).numpy()

    taught = teach(resnet18, photos, size=SIZE, seed=2)
    feats = features(resnet18, [p for g in photos.values() for p in g], size=SIZE)
    labels = np.array([c for c, g in enumerate(photos.values()) for _ in g])
    _, folds = heldout_folds(labels.tolist(), 5, seed=2)
    cv = [(np.array(a), np.array(b)) for a, b in folds]
    scores = cross_val_score(Head(), feats.numpy(), labels, cv=cv)
    predicted = cross_val_predict(Head(), feats.numpy(), labels, cv=cv)
    assert taught.fold_accuracies == pytest.approx(list(scores))
    assert taught.spread == pytest.approx(float(np.std(scores)))
    assert taught.accuracy == pytest.approx(float((predicted == labels).mean()))
    confusion = np.zeros((3, 3), dtype=int)
    np.add.at(confusion, (labels, predicted), 1)
    assert (taught.confusion == confusion).all()


def test_progress_reports_features_then_training(resnet18, photos):
    calls: list[tuple[int, int, str]] = []
    teach(resnet18, {k: v[:3] for k, v in photos.items()}, size=64,
          progress=lambda done, total, stage: calls.append((done, total, stage)))
    stages = [c[2] for c in calls]
    assert stages[0] == "features" and stages[-1] == "training"
    assert calls[-1][0] == calls[-1][1]


@pytest.mark.parametrize(("examples", "code"), [
    ({"a": [1, 2]}, "teach_few_classes"),
    ({"a": [1], "b": [1, 2]}, "teach_few_photos"),
    ({"a": [1, 2], " ": [1, 2]}, "teach_empty_name"),
    ({"Mug": [1, 2], "mug ": [1, 2]}, "teach_same_name"),
    ({"a": [1, 2], "b": list(range(201))}, "teach_too_many"),
])
def test_bad_examples_get_one_sentence_and_stay_as_they_were(examples, code):
    kept = {k: list(v) for k, v in examples.items()}
    with pytest.raises(TeachError) as caught:
        check_examples(examples)
    assert caught.value.code == code
    assert str(caught.value).count(". ") == 0 and str(caught.value).endswith(".")
    assert examples == kept


@pytest.mark.parametrize(("name", "path"), [
    ("resnet18", "fc"), ("vgg16", "classifier.6"), ("mobilenet_v3_small", "classifier.3"),
    ("vit_b_16", "heads.head"), ("densenet121", "classifier"), ("efficientnet_b0", "classifier.1"),
])
def test_the_head_is_the_last_linear(name, path):
    model = meta_model(name)[0]
    found, module = find_head(model, 1000)
    assert found == path and module is model.get_submodule(path)


def test_a_model_that_ends_in_a_convolution_is_refused_by_name():
    with pytest.raises(TeachError) as caught:
        find_head(meta_model("squeezenet1_0")[0], 1000)
    assert caught.value.code == "teach_head"
    assert "classifier.1" in str(caught.value) and "Conv2d" in str(caught.value)


@pytest.mark.slow
def test_vit_features_are_the_class_token():
    bundle = vz.load_model("vit_b_16", weights="none", device="cpu")
    image = shape_photos(1)["disc"][0]
    got = features(bundle, [image])
    x = bundle.preprocess(image)
    model = bundle.model
    with torch.no_grad():  # torchvision's own ViT forward, written out up to the head
        tokens = model._process_input(x)
        tokens = torch.cat([model.class_token.expand(1, -1, -1), tokens], dim=1)
        expected = model.encoder(tokens)[:, 0]
    assert got.shape == (1, 768) and torch.allclose(got, expected, atol=1e-4)


def test_a_head_shared_again_gives_the_same_model(taught, resnet18):
    again = taught_bundle(resnet18, taught.head_path, taught.head, taught.bundle.categories)
    assert again.name == taught.bundle.name
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(again.model(x), taught.bundle.model(x))


def test_a_taught_name_resolves_to_its_backbone_but_is_not_loaded_by_name(taught):
    name = taught.bundle.name
    assert name.startswith("resnet18+my:") and resolve_entry(name).arch == "resnet18"
    with pytest.raises(ValueError, match="taught model"):
        vz.load_model(name)


@pytest.mark.slow
def test_cli_teaches_a_folder_of_class_folders(tmp_path, capsys):
    for name, group in shape_photos(12).items():
        (tmp_path / "photos" / name).mkdir(parents=True)
        for i, image in enumerate(group):
            image.save(tmp_path / "photos" / name / f"{i}.png")
    out = tmp_path / "my_model.pth"
    code, stdout, stderr = run_cli(capsys, "teach", tmp_path / "photos", "--model", "resnet18", "--weights", "none",
                                   "--size", SIZE, "--out", out)
    assert code == 0, stderr
    assert out.is_file() and (tmp_path / "my_model.txt").read_text().split() == ["disc", "square", "triangle"]
    lines = {line.split(":")[0].strip(): line for line in stdout.splitlines() if ":" in line}
    assert {"disc", "square", "triangle", "overall"} <= set(lines)
    overall = float(lines["overall"].split(":")[1].split("%")[0])
    assert overall >= 90
    again = vz.load_model("resnet18", weights=out, labels=tmp_path / "my_model.txt", device="cpu")
    assert again.model.fc.out_features == 3


def test_cli_refuses_a_folder_with_one_class(tmp_path, capsys):
    (tmp_path / "photos" / "only").mkdir(parents=True)
    shape_photos(2)["disc"][0].save(tmp_path / "photos" / "only" / "a.png")
    code, _, stderr = run_cli(capsys, "teach", tmp_path / "photos", "--weights", "none", "--out", tmp_path / "m.pth")
    assert code == 2 and "Traceback" not in stderr
    assert stderr.strip().count("\n") == 0 and "at least 2" in stderr
    assert not (tmp_path / "m.pth").exists()


def test_cli_says_a_photo_given_for_the_folder_is_a_file(tmp_path, capsys):
    """QA 2026-12-06: a photo given where the class folder goes was "There is no folder at PHOTO"."""
    shape_photos(2)["disc"][0].save(tmp_path / "a.png")
    code, _, stderr = run_cli(capsys, "teach", tmp_path / "a.png", "--weights", "none", "--out", tmp_path / "m.pth")
    assert code == 2 and stderr.strip() == (f"vizhooks: error: {tmp_path / 'a.png'} is a file; give a folder with one "
                                            "sub-folder of pictures per class.")


def test_held_out_predictions_are_counted_once(taught):
    assert np.all(taught.confusion >= 0)
    assert len(taught.per_class) == 3 and all(0 <= a <= 1 for a in taught.per_class)


@pytest.mark.parametrize("out,needle", [(".", "names the folder"), ("m.txt", "ends in .txt")])
def test_cli_refuses_an_out_that_would_lose_the_model_before_reading_a_photo(tmp_path, capsys, monkeypatch, out,
                                                                              needle):
    """QA 2026-12-06: --out NAME.txt wrote the class names over the checkpoint (the labels go to the .txt
    beside it) and exited 0; --out FOLDER was a traceback once the training was over. Both are one line
    now, before any photo is read or model built."""
    import vizhooks.cli as cli

    monkeypatch.setattr(cli, "load_model", lambda *a, **k: pytest.fail("a model was built"))
    for name, group in shape_photos(2).items():
        (tmp_path / "photos" / name).mkdir(parents=True)
        for i, image in enumerate(group):
            image.save(tmp_path / "photos" / name / f"{i}.png")
    code, stdout, stderr = run_cli(capsys, "teach", tmp_path / "photos", "--weights", "none", "--out", tmp_path / out)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1 and needle in stderr, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photos"]


def test_save_refuses_a_txt_path_and_says_a_refused_write_as_an_oserror(taught, tmp_path):
    """The library's own save: a .txt checkpoint would be replaced by its class names' file; a folder where
    the file should be is the operating system's refusal (an OSError naming the path, which the command line
    says in one line), not torch's RuntimeError."""
    with pytest.raises(ValueError, match=r"ends in \.txt"):
        taught.save(tmp_path / "m.txt")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "m.pth").mkdir()
    with pytest.raises(OSError) as refused:
        taught.save(tmp_path / "m.pth")
    assert refused.value.filename == str(tmp_path / "m.pth")
    weights, labels = taught.save(tmp_path / "ok" / "m.pth")
    assert torch.load(weights, weights_only=True).keys() == taught.state_dict().keys()
    assert labels.read_text().split() == list(taught.bundle.categories)
