"""The folder audit against independent answers: the model's own forward, a confusion matrix counted
by hand from how the folder was built, Grad-CAM called one picture at a time, scikit-learn's spectral
clustering called directly, and a planted shortcut (a red sticker in a corner that the model reads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import count_hooks
from PIL import Image
from torch import nn

from vizhooks.interpret.audit import OTHER, AuditError, audit, class_folders, eigengap, normalised, spray
from vizhooks.interpret.cam import grad_cam
from vizhooks.models.images import load_image, preprocess

SIDE = 32
GREY = (128, 128, 128)


class Planted(nn.Module):
    """Three colour detectors (a 1x1 conv + ReLU, cut at 0.2) and a head that reads their means:
    "cat" is the red detector, "dog" the green one, "bird" the blue one. Grad-CAM at ``features``
    therefore lies exactly where the deciding colour is."""

    categories = ["cat", "dog", "bird"]
    mean_std = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))

    def __init__(self) -> None:
        super().__init__()
        conv = nn.Conv2d(3, 3, 1)
        with torch.no_grad():
            conv.weight.copy_((torch.eye(3) * 1.5 - 0.5).view(3, 3, 1, 1))  # each colour minus the other two's mean
            conv.bias.fill_(-0.2)
        self.features = nn.Sequential(conv, nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(3, 3)
        with torch.no_grad():
            self.head.weight.copy_(torch.eye(3) * 100)
            self.head.bias.zero_()
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))


def picture(seed: int, *, sticker: str | None = None, blob: tuple[int, int, int] | None = None) -> Image.Image:
    """A noisy grey picture, a coloured blob in the middle, and a 6 x 6 red sticker in a corner."""
    rng = np.random.default_rng(seed)
    arr = np.clip(rng.normal(128, 6, (SIDE, SIDE, 3)), 0, 255).astype(np.uint8)
    if blob is not None:
        c = SIDE // 2 + int(rng.integers(-2, 3))
        arr[c - 5:c + 5, c - 5:c + 5] = blob
    if sticker == "top-left":
        arr[1:7, 1:7] = (255, 0, 0)
    elif sticker == "bottom-right":
        arr[-7:-1, -7:-1] = (255, 0, 0)
    return Image.fromarray(arr)


def write_folder(root: Path) -> Path:
    """cat: 10 stickers top-left, 10 bottom-right, over a grey blob; dog: 10 green blobs, one with a
    sticker and a grey blob (predicted cat), two blue blobs (predicted bird: "other"); and two unreadable files."""
    (root / "cat").mkdir(parents=True)
    (root / "Dog").mkdir()
    for i in range(10):
        picture(i, sticker="top-left", blob=GREY).save(root / "cat" / f"tl{i:02d}.png")
        picture(100 + i, sticker="bottom-right", blob=GREY).save(root / "cat" / f"br{i:02d}.png")
        picture(200 + i, blob=(0, 200, 0)).save(root / "Dog" / f"g{i:02d}.png")
    picture(300, blob=GREY, sticker="bottom-right").save(root / "Dog" / "sticker.png")
    picture(301, blob=(0, 0, 220)).save(root / "Dog" / "blue1.png")
    picture(302, blob=(0, 0, 220)).save(root / "Dog" / "blue2.png")
    (root / "Dog" / "broken.jpg").write_bytes(b"not a picture")
    (root / "cat" / "empty.png").write_bytes(b"")
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_folder(tmp_path_factory.mktemp("audit") / "photos")


@pytest.fixture(scope="module")
def model() -> Planted:
    return Planted()


@pytest.fixture(scope="module")
def found(model, folder):
    return audit(model, folder, layer="features", size=SIDE, batch_size=8)


def _x(folder: Path, rel: str) -> torch.Tensor:
    return preprocess(load_image(folder / rel), SIDE, mean=Planted.mean_std[0], std=Planted.mean_std[1])


def test_predictions_are_the_models_own_forward(found, model, folder):
    assert len(found.predictions) == 33
    for row in found.predictions:
        with torch.no_grad():
            probs = torch.softmax(model(_x(folder, row["path"])), dim=1)[0]
        index = int(probs.argmax())
        assert row["predicted_index"] == index
        assert row["predicted"] == {0: "cat", 1: "Dog", 2: "bird"}[index]
        assert row["confidence"] == pytest.approx(float(probs[index]), rel=1e-5)
        assert row["correct"] == (index == {"cat": 0, "Dog": 1}[row["label"]])
    assert count_hooks(model) == 0


def test_confusion_counts_what_the_folder_was_built_with(found):
    assert found.classes == ["Dog", "cat"]  # ImageFolder's order; "Dog" matched to "dog" ignoring case
    assert found.outputs == [1, 0]
    assert found.columns == ["Dog", "cat", OTHER]
    # rows: Dog (10 green right, 1 with a sticker -> cat, 2 blue -> bird), cat (20 right)
    assert found.confusion.tolist() == [[10, 1, 2], [0, 20, 0]]
    assert found.accuracy() == {"Dog": pytest.approx(10 / 13), "cat": 1.0}
    assert [m["path"] for m in found.mistakes()][:1] and {m["path"] for m in found.mistakes()} == {
        "Dog/sticker.png", "Dog/blue1.png", "Dog/blue2.png"}


def test_unreadable_files_are_skipped_and_listed(found):
    assert sorted(p for p, _ in found.skipped) == ["Dog/broken.jpg", "cat/empty.png"]
    assert all(reason for _, reason in found.skipped)


def test_maps_are_grad_cam_of_the_predicted_class(found, model, folder):
    for row in found.predictions[::4]:
        x = _x(folder, row["path"])
        want = grad_cam(model, x, "features", target=row["predicted_index"])
        small = F.adaptive_avg_pool2d(want[None, None], (16, 16))[0, 0].numpy()
        assert found.maps[row["path"]].shape == (16, 16)
        np.testing.assert_allclose(found.maps[row["path"]], small, atol=1e-5)


def test_clusters_are_scikit_learns_spectral_clustering(found):
    from sklearn.cluster import SpectralClustering
    from sklearn.metrics import adjusted_rand_score

    for name in found.classes:
        paths = [r["path"] for r in found.predictions if r["label"] == name]
        maps = np.stack([found.maps[p] for p in paths]).reshape(len(paths), -1)
        rows = maps / np.abs(maps).max(axis=1, keepdims=True)
        k = len(found.groups[name])
        want = SpectralClustering(n_clusters=k, affinity="nearest_neighbors", n_neighbors=min(10, len(paths) - 1),
                                  random_state=0).fit_predict(rows)
        got = [found.clusters[name][p] for p in paths]
        assert adjusted_rand_score(want, got) == 1.0


def test_eigengap_is_the_largest_jump_of_the_laplacian(found):
    from scipy.sparse.csgraph import laplacian
    from sklearn.neighbors import kneighbors_graph

    paths = [r["path"] for r in found.predictions if r["label"] == "cat"]
    feats = normalised(np.stack([found.maps[p] for p in paths]))
    graph = kneighbors_graph(feats, 10, include_self=True).toarray()
    values = np.sort(np.linalg.eigvalsh(laplacian((graph + graph.T) / 2, normed=True)))
    assert eigengap(feats) == 2 + int(np.argmax(np.diff(values)[1:8]))


def test_planted_shortcut_is_a_flagged_corner_cluster(found):
    cats = found.groups["cat"]
    assert 2 <= len(cats) <= 4
    by_where = {c.where: c for c in cats if c.shortcut}
    assert set(by_where) >= {"top-left", "bottom-right"}
    for where, prefix in (("top-left", "cat/tl"), ("bottom-right", "cat/br")):
        members = by_where[where].members
        purity = sum(m.startswith(prefix) for m in members) / len(members)
        assert purity >= 0.95 and len(members) >= 9
        heat = by_where[where].mean
        corner = heat[:5, :5] if where == "top-left" else heat[-5:, -5:]
        assert corner.sum() > 0.8 * heat.clip(0).sum()
        assert by_where[where].distances == sorted(by_where[where].distances)
    # the green blobs of "Dog" sit in the middle: nothing flagged for their biggest cluster
    assert found.groups["Dog"][0].where == "centre" and not found.groups["Dog"][0].shortcut
    assert ("cat", by_where["top-left"]) in found.suspicious()


def test_two_clusters_when_asked_separate_the_corners(model, folder):
    two = audit(model, folder, layer="features", size=SIDE, clusters=2)
    assert len(two.groups["cat"]) == 2
    for cluster in two.groups["cat"]:
        heads = {m.split("/")[1][:2] for m in cluster.members}
        assert len(heads) == 1 and cluster.size == 10


def test_spray_of_identical_maps_is_one_cluster_when_few():
    assert spray(np.ones((2, 4, 4))).tolist() == [0, 0]


def test_wordnet_ids_and_indices_name_classes(tmp_path):
    from vizhooks.interpret.audit import match_classes

    assert match_classes(["n01440764", "N01443537", "7"], None, 1000) == [0, 1, 7]
    assert match_classes(["2", "cat"], ["cat", "dog", "bird"], 3) == [2, 0]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda root: root / "nowhere", "no folder"),
        (lambda root: picture(0).save(root / "a.png") or root / "a.png", "a.png is a file; give a folder"),
        (lambda root: root, "no class sub-folders"),
        (lambda root: (root / "cat").mkdir() or root, "holds no pictures"),
        (lambda root: (root / "zebra").mkdir() or picture(0).save(root / "zebra" / "a.png") or root,
         "matches no output"),
        (lambda root: (root / "cat").mkdir() or (root / "cat" / "a.png").write_bytes(b"x") and root,
         "could be read"),
    ],
)
def test_bad_folders_are_one_sentence_naming_the_folder(tmp_path, model, make, words):
    where = make(tmp_path)
    with pytest.raises(AuditError) as err:
        audit(model, where, layer="features", size=SIDE)
    text = str(err.value)
    assert words in text and text.count(". ") == 0 and text.endswith(".")
    assert str(tmp_path) in text
    assert count_hooks(model) == 0


@pytest.mark.parametrize(("kwargs", "code"), [({"method": "magic"}, "audit_method"),
                                               ({"clusters": 0}, "audit_clusters"),
                                               ({"engine": "spark"}, "audit_engine"),
                                               ({"map_size": 1}, "audit_setting")])
def test_bad_settings_are_refused(model, folder, kwargs, code):
    with pytest.raises(AuditError) as err:
        audit(model, folder, layer="features", size=SIDE, **kwargs)
    assert err.value.code == code


def test_the_shipped_shortcut_folder_is_the_scripts_output(tmp_path):
    import importlib.util

    root = Path(__file__).resolve().parents[1] / "sample_images"
    spec = importlib.util.spec_from_file_location("make_shortcut", root / "make_shortcut.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    made = script.write(tmp_path / "shortcut")
    shipped = sorted(p for p in (root / "shortcut").rglob("*") if p.is_file())
    assert [p.relative_to(tmp_path / "shortcut") for p in sorted(made)] == [p.relative_to(root / "shortcut")
                                                                           for p in shipped]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(sorted(made), shipped, strict=True))
    assert sum(p.stat().st_size for p in shipped) < 400_000
    # the sticker is where the lesson says: the bottom-right corner of every taught triangle, no circle's
    for path in made:
        corner = np.asarray(Image.open(path))[-20:, -20:].reshape(-1, 3).astype(int)
        yellow = ((corner[:, 0] > 200) & (corner[:, 1] > 170) & (corner[:, 2] < 80)).mean()
        part, shape = path.relative_to(tmp_path / "shortcut").parts[:2]
        assert (yellow > 0.3) == ((part, shape) in {("teach", "triangle"), ("test", "circle")}), path


def test_pictures_in_memory_give_the_folders_audit(found, model, folder):
    """A page's photos are audited from memory (never written to the server's disk) exactly as the same
    files in a folder: same predictions, maps and clusters, paths ``class/file``."""
    photos = {name: [(p.name, p.read_bytes()) for p in paths] for name, paths in class_folders(folder).items()}
    again = audit(model, photos, layer="features", size=SIDE, batch_size=8)
    assert again.predictions == found.predictions
    assert again.maps.keys() == found.maps.keys()
    for path, m in found.maps.items():
        np.testing.assert_allclose(again.maps[path], m, atol=1e-6)
    assert again.clusters == found.clusters and again.skipped == found.skipped
    with pytest.raises(AuditError, match="holds no pictures"):
        audit(model, {**photos, "empty": []}, layer="features", size=SIDE)


# ----------------------------------------------------------------------------------------------
# resume and bounded memory


class Stop(Exception):
    """Stands for a run killed halfway."""


def _counting(monkeypatch):
    """Count the pictures that go through the model (the wrapped batch function)."""
    import vizhooks.interpret.audit as audit_module

    seen: list[int] = []
    real = audit_module._batch_maps

    def counting(net, x, method, layer):
        seen.append(len(x))
        return real(net, x, method, layer)

    monkeypatch.setattr(audit_module, "_batch_maps", counting)
    return seen


def _same(got, want):
    assert got.predictions == want.predictions
    assert sorted(got.skipped) == sorted(want.skipped)
    assert got.confusion.tolist() == want.confusion.tolist() and got.columns == want.columns
    assert set(got.maps) == set(want.maps)
    for path, m in want.maps.items():
        np.testing.assert_array_equal(got.maps[path], m)
    assert got.clusters == want.clusters
    for name, groups in want.groups.items():
        assert [(c.members, c.where, c.shortcut) for c in got.groups[name]] == [
            (c.members, c.where, c.shortcut) for c in groups]


def test_an_interrupted_audit_resumes_with_only_the_rest(model, folder, tmp_path, monkeypatch):
    """Stopped after 12 pictures (and killed while writing: a half line and half a map left behind), the
    same call with the same store runs only the pictures not kept, and ends as a one-pass run."""
    one_pass = audit(model, folder, layer="features", size=SIDE, batch_size=4)
    seen = _counting(monkeypatch)
    store = tmp_path / "store"

    def stop(done, total):
        if done >= 12:
            raise Stop

    with pytest.raises(Stop):
        audit(model, folder, layer="features", size=SIDE, batch_size=4, store=store, progress=stop)
    first = sum(seen)
    kept = [line for line in (store / "rows.jsonl").read_text().splitlines() if '"skipped"' not in line]
    assert first == len(kept) == 12
    with open(store / "rows.jsonl", "a") as f:  # a line cut short by the kill
        f.write('{"path": "cat/half')
    with open(store / "maps.f32", "ab") as f:  # a map written without its row
        f.write(b"\0" * 100)
    seen.clear()
    replayed = []
    again = audit(model, folder, layer="features", size=SIDE, batch_size=4, store=store,
                  on_batch=lambda rows, maps: replayed.extend(r["path"] for r in rows))
    assert sum(seen) == 33 - 12  # only the rest went through the model
    assert replayed == [r["path"] for r in one_pass.predictions]  # a caller writing files gets every row once
    _same(again, one_pass)
    seen.clear()
    done = audit(model, folder, layer="features", size=SIDE, batch_size=4, store=store)
    assert seen == []
    _same(done, one_pass)


def test_a_store_of_other_settings_is_refused(model, folder, tmp_path):
    audit(model, folder, layer="features", size=SIDE, batch_size=16, store=tmp_path / "s")
    with pytest.raises(AuditError) as err:
        audit(model, folder, layer="features", size=SIDE, map_size=8, store=tmp_path / "s")
    assert err.value.code == "audit_store" and "(the map size)" in str(err.value)
    other = Planted()
    with torch.no_grad():
        other.head.weight.mul_(2)
    with pytest.raises(AuditError) as err:
        audit(other, folder, layer="features", size=SIDE, store=tmp_path / "s")
    assert "(the model or its weights)" in str(err.value)
    # QA 2026-12-06: in Chinese the settings were the store's English keys ("categories、model")
    from vizhooks import i18n

    i18n.set_language("zh")
    try:
        assert "（模型或其权重）" in i18n.said("err_audit_store", err.value.values)
    finally:
        i18n.set_language("en")


def test_full_size_maps_live_no_longer_than_their_batch(model, folder, tmp_path, monkeypatch):
    """A counter of live full-size map tensors: at every batch's end at most that batch's are alive, none
    after the run; with a store the result's maps are read from disk and the rows hold numbers only."""
    import gc
    import weakref

    import vizhooks.interpret.audit as audit_module
    from vizhooks.interpret.audit import StoredMaps

    refs: list[weakref.ref] = []
    real = audit_module._batch_maps

    def watched(net, x, method, layer):
        logits, maps = real(net, x, method, layer)
        refs.extend(weakref.ref(m) for m in maps)
        return logits, maps

    monkeypatch.setattr(audit_module, "_batch_maps", watched)
    alive = []

    def count(done, total):
        gc.collect()
        alive.append(sum(r() is not None for r in refs))

    found = audit(model, folder, layer="features", size=SIDE, batch_size=4, store=tmp_path / "s", progress=count)
    gc.collect()
    assert len(refs) == 33 and max(alive) <= 4 and sum(r() is not None for r in refs) == 0
    assert isinstance(found.maps, StoredMaps)
    assert all(isinstance(v, (str, int, float, bool)) for row in found.predictions for v in row.values())


def test_large_classes_cluster_a_sample_and_join_the_rest(model, folder, found, monkeypatch):
    """Over SPRAY_LIMIT maps, SpRAy runs on an even sample and every map joins its nearest cluster mean
    (checked by hand here); the planted corners still come apart and are flagged."""
    import vizhooks.interpret.audit as audit_module

    monkeypatch.setattr(audit_module, "SPRAY_LIMIT", 8)
    monkeypatch.setattr(audit_module, "CHUNK", 5)
    small = audit(model, folder, layer="features", size=SIDE, batch_size=8, clusters=3)
    paths = [r["path"] for r in small.predictions if r["label"] == "cat"]
    feats = normalised(np.stack([small.maps[p] for p in paths]))
    pick = np.linspace(0, len(paths) - 1, 8).round().astype(int)
    sample = spray(np.stack([small.maps[paths[i]] for i in pick]), 3)
    means = np.stack([feats[pick][sample == c].mean(axis=0) for c in np.unique(sample)])
    nearest = ((feats[:, None] - means[None]) ** 2).sum(axis=2).argmin(axis=1)
    from sklearn.metrics import adjusted_rand_score

    assert len(np.unique(sample)) == 3
    labels = audit_module._labels(lambda idx: np.stack([small.maps[paths[i]] for i in idx]), len(paths), 3)
    assert labels.tolist() == np.unique(sample)[nearest].tolist()
    assert adjusted_rand_score(nearest, [small.clusters["cat"][p] for p in paths]) == 1.0
    flagged = {c.where for c in small.groups["cat"] if c.shortcut}
    assert flagged == {"top-left", "bottom-right"}


# ----------------------------------------------------------------------------------------------
# the shortcut flag: one spot for many pictures, not merely off the centre


def _placed(seed: int, top: int, left: int) -> Image.Image:
    """A noisy grey picture with an 8 x 8 green object whose top-left corner is at (top, left)."""
    rng = np.random.default_rng(seed)
    arr = np.clip(rng.normal(128, 6, (SIDE, SIDE, 3)), 0, 255).astype(np.uint8)
    arr[top:top + 8, left:left + 8] = (0, 200, 0)
    return Image.fromarray(arr)


def test_objects_anywhere_are_not_a_shortcut_but_a_sticker_is(model, tmp_path):
    """dog: 30 green objects at seeded random places, most of them far off the centre; cat: 12 pictures
    with the red sticker bottom-right. Only cat's sticker cluster is flagged, though dog's clusters sit
    off the centre just as far (the old rule, distance from the centre alone, would flag them)."""
    root = tmp_path / "placed"
    (root / "dog").mkdir(parents=True)
    (root / "cat").mkdir()
    rng = np.random.default_rng(7)
    for i in range(30):
        top, left = (int(v) for v in rng.integers(0, SIDE - 8, 2))
        _placed(i, top, left).save(root / "dog" / f"d{i:02d}.png")
    for i in range(12):
        picture(50 + i, sticker="bottom-right", blob=GREY).save(root / "cat" / f"c{i:02d}.png")
    for clusters in ("auto", 4, 8):
        found = audit(model, root, layer="features", size=SIDE, clusters=clusters)
        assert found.accuracy() == {"cat": 1.0, "dog": 1.0}
        dogs = found.groups["dog"]
        off = [float(np.hypot(c.centre[0] - 0.5, c.centre[1] - 0.5)) for c in dogs]
        assert max(off) > 0.2  # off the centre: the old flag would fire
        assert not any(c.shortcut for c in dogs), [(c.where, c.spread, c.share) for c in dogs]
        assert {name for name, _ in found.suspicious()} == {"cat"}
        flagged = [c for _, c in found.suspicious()]
        assert sum(c.size for c in flagged) >= 10  # however many clusters the sticker is cut into
        assert all(c.where == "bottom-right" and c.spread < 0.05 and c.share >= 10 / 12 for c in flagged)


# ----------------------------------------------------------------------------------------------
# the ray engine: Ray runs locally (tests/conftest.py's local_ray)


@pytest.fixture
def audit_ray(local_ray):
    import sys

    local_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this file
    yield local_ray
    local_ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _close(got, want):
    """The same audit up to float rounding (the engines cut the batches differently)."""
    assert [{**r, "confidence": 0} for r in got.predictions] == [{**r, "confidence": 0} for r in want.predictions]
    for g, w in zip(got.predictions, want.predictions, strict=True):
        assert g["confidence"] == pytest.approx(w["confidence"], rel=1e-5)
    assert got.skipped == want.skipped
    assert got.confusion.tolist() == want.confusion.tolist() and got.columns == want.columns
    assert set(got.maps) == set(want.maps)
    for path, m in want.maps.items():
        np.testing.assert_allclose(got.maps[path], m, atol=1e-5)
    assert got.clusters == want.clusters
    for name, groups in want.groups.items():
        assert [(c.members, c.where, c.shortcut) for c in got.groups[name]] == [
            (c.members, c.where, c.shortcut) for c in groups]


@pytest.mark.slow
def test_ray_engine_gives_the_local_audit(found, model, folder, audit_ray, monkeypatch):
    """Shards run in Ray's actors (nothing goes through this process's model) and come back in the
    folder's order: the same predictions, maps, clusters and skipped files as the local engine."""
    seen = _counting(monkeypatch)
    batches: list[list[str]] = []
    made = audit(model, folder, layer="features", size=SIDE, batch_size=4, engine="ray", workers=2,
                 on_batch=lambda rows, maps: batches.append([r["path"] for r in rows]))
    assert audit_ray.is_initialized()  # the test's session was used, not a new one
    assert seen == []  # every picture went through an actor's model
    assert len(batches) > 4  # really batched and sharded: 33 pictures in batches of at most 4
    assert [p for b in batches for p in b] == [r["path"] for r in found.predictions]
    _close(made, found)
    assert [name for name, _ in made.suspicious()] == [name for name, _ in found.suspicious()] == ["cat", "cat"]


@pytest.mark.slow
def test_ray_engine_resumes_a_store_and_either_engine_finishes_it(model, folder, audit_ray, tmp_path, monkeypatch):
    """A ray run stopped after 12 pictures keeps them in its store; the ray engine then runs only the
    rest, and a local run on a copy of the stopped store runs only the rest too (counted here, in this
    process): all three end as one local pass."""
    import shutil

    one_pass = audit(model, folder, layer="features", size=SIDE, batch_size=4)
    store = tmp_path / "store"

    def stop(done, total):
        if done >= 12:
            raise Stop

    with pytest.raises(Stop):
        audit(model, folder, layer="features", size=SIDE, batch_size=4, store=store, progress=stop, engine="ray",
              workers=1)  # one actor (a Python importing torch) is enough to stop; the rest runs on two
    lines = (store / "rows.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"skipped"' not in line]
    assert len(lines) >= 12 and 0 < len(kept) < 33
    shutil.copytree(store, tmp_path / "copy")
    done: list[int] = []
    again = audit(model, folder, layer="features", size=SIDE, batch_size=4, store=store, engine="ray", workers=2,
                  progress=lambda n, total: done.append(n))
    assert done[0] == len(lines)  # it starts from what was kept
    _close(again, one_pass)
    seen = _counting(monkeypatch)
    local = audit(model, folder, layer="features", size=SIDE, batch_size=4, store=tmp_path / "copy")
    assert sum(seen) == 33 - len(kept)
    _close(local, one_pass)


def test_workers_must_be_a_whole_number(model, folder):
    with pytest.raises(AuditError, match="workers must be a whole number of at least 0") as err:
        audit(model, folder, layer="features", size=SIDE, engine="ray", workers=-1)
    assert err.value.code == "audit_setting"


def test_a_vits_tokens_give_each_pictures_grad_cam_over_the_patch_grid():
    """QA 2026-12-06: the audit refused a ViT's layers ("(4, 197, 768) tensor"); a batch's maps over the tokens
    of a block's first norm are now grad_cam's of each picture alone (which shows tokens as the page does)."""
    import torchvision

    from vizhooks.interpret.audit import gradcam_batch

    torch.manual_seed(0)
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                               mlp_dim=32, num_classes=10).eval()
    torch.nn.init.normal_(vit.heads.head.weight)  # torchvision starts the head at zero
    x = torch.randn(3, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    layer = "encoder.layers.encoder_layer_1.ln_1"
    logits, maps = gradcam_batch(vit, x, layer)
    for i, got in enumerate(maps):
        want = grad_cam(vit, x[i:i + 1], layer, target=int(logits[i].argmax()))
        assert float(want.std()) > 0.01  # a map with a place in it, not a flat one
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    with pytest.raises(AuditError, match="map over the picture"):
        gradcam_batch(vit, x, "heads")
