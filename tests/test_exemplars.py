"""Dataset exemplars: the atlas of a folder against a brute-force pass written here (vizhooks.capture on
each image alone, numpy for each channel's maximum and its position), receptive fields against hand
arithmetic and a perturbation oracle, shards, resume, reading back, and the command line."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from tests.helpers import EXEMPLAR_LAYERS, EXEMPLAR_SIZE, EXEMPLAR_TOP, run_cli, write_exemplar_folder
from tests.warm_python import run_python
from vizhooks import capture, load_image
from vizhooks.atlas import (
    AtlasError,
    PartialAtlas,
    TopK,
    build_atlas,
    load_atlas,
    receptive_field,
    receptive_fields,
    scan_paths,
)
from vizhooks.atlas.exemplars import list_images, read_progress
from vizhooks.cli import main
from vizhooks.i18n import t
from vizhooks.ops import hook_count

ROOT = Path(__file__).resolve().parents[1]
LAYERS, SIZE, TOP = EXEMPLAR_LAYERS, EXEMPLAR_SIZE, EXEMPLAR_TOP
ATOL = 1e-4  # batched and single passes differ by ~1e-6 on the CPU
BAD = {"broken.png", "sub/notes.jpg"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_exemplar_folder(tmp_path_factory.mktemp("photos"))


@pytest.fixture(scope="module")
def oracle(folder, resnet18) -> dict[str, dict[str, np.ndarray]]:
    """Brute force: every good image alone through vizhooks.capture; {path: {layer: (C, H, W) map}}."""
    maps = {}
    for path in list_images(folder):
        if path in BAD:
            continue
        x = resnet18.preprocess(load_image(folder / path), SIZE)
        maps[path] = {k: v[0].numpy() for k, v in capture(resnet18.model, x, LAYERS).items()}
    return maps


@pytest.fixture(scope="module")
def atlas(folder, resnet18, tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas")
    return build_atlas(folder, resnet18, LAYERS, out, top=TOP, size=SIZE, batch=8, progress=False)


RELEVANCE_TARGET = 3


@pytest.fixture(scope="module")
def by_relevance(folder, resnet18, tmp_path_factory):
    """The atlas ranked by relevance to class 3 (RELEVANCE_TARGET). One photo per pass, as the brute force:
    in float32 a batch rounds differently, which flips one near-zero ReLU gate of layer4.0 for img08 and
    moves its score 2.5 % (the ReLU's kink, not a bug; the double-precision test below shows a batch equals
    single passes)."""
    return build_atlas(folder, resnet18, LAYERS, tmp_path_factory.mktemp("rel"), top=TOP, size=SIZE, batch=1,
                       progress=False, rank="relevance", target=RELEVANCE_TARGET)


def _expected(oracle, paths, layer: str, channel: int) -> list[tuple[float, str]]:
    return sorted((-float(oracle[p][layer][channel].max()), p) for p in paths)[:TOP]


def _check_channel(got: list[tuple[str, float, int, int]], oracle, paths, layer: str, channel: int,
                   atol: float = ATOL) -> None:
    """``got``: (path, score, y, x) best first. Exact, except that two images whose scores are within
    ``atol`` may swap places (float noise of batching); positions likewise."""
    want = _expected(oracle, paths, layer, channel)
    assert len(got) == len(want) and len({g[0] for g in got}) == len(got)
    assert [(-g[1], g[0]) for g in got] == sorted((-g[1], g[0]) for g in got), "not best first, ties by path"
    for (path, score, y, x), (neg_want, want_path) in zip(got, want, strict=True):
        m = oracle[path][layer][channel]
        assert score == pytest.approx(float(m.max()), abs=atol), (layer, channel, path)
        assert score == pytest.approx(-neg_want, abs=atol), (layer, channel, path, want_path)
        if path != want_path:
            assert abs(float(oracle[want_path][layer][channel].max()) - float(m.max())) <= atol
        wy, wx = np.unravel_index(int(np.argmax(m)), m.shape)
        assert (y, x) == (wy, wx) or m[y, x] >= m.max() - atol, (layer, channel, path)


def _check_partial(state: PartialAtlas, oracle, paths, atol: float = ATOL) -> None:
    for layer in LAYERS:
        top = state.tops[layer]
        assert top.channels == next(iter(oracle.values()))[layer].shape[0]
        for channel in range(top.channels):
            _check_channel([e[:4] for e in top.entries(channel)], oracle, paths, layer, channel, atol)


def _same_index(a, b) -> None:
    """Two atlases agree: same rows, scores within ATOL, a path differs only where scores are near-equal."""
    assert a.layers == b.layers
    for layer in a.layers:
        for channel in range(a.channels(layer)):
            for x, y in zip(a.top(layer, channel), b.top(layer, channel), strict=True):
                assert x.score == pytest.approx(y.score, abs=ATOL)
                if x.path == y.path:
                    assert (x.y, x.x, x.box) == (y.y, y.x, y.box)


# ----------------------------------------------------------------------------------------------
# the index against brute force


@pytest.mark.slow
def test_index_equals_brute_force(atlas, oracle, folder):
    good = sorted(oracle)
    assert len(good) == 42
    assert atlas.layers == LAYERS and atlas.model == "resnet18"
    for layer in LAYERS:
        assert atlas.channels(layer) == oracle[good[0]][layer].shape[0]
        for channel in range(atlas.channels(layer)):
            got = [(e.path, e.score, e.y, e.x) for e in atlas.top(layer, channel)]
            _check_channel(got, oracle, good, layer, channel)
    manifest = json.loads((atlas.path / "manifest.json").read_text())
    assert manifest["images"] == 42 and manifest["size"] == SIZE and manifest["weights"] == "random"
    skipped = {s["path"]: s["reason"] for s in manifest["skipped"]}
    assert set(skipped) == BAD
    assert "text file" in skipped["sub/notes.jpg"] and "truncated" in skipped["broken.png"]
    assert manifest["folder"] == str(folder.resolve()) and manifest["vizhooks"]


def test_exact_ties_are_broken_by_path(atlas, oracle):
    """The twins have the same pixels; wherever both are kept they sit side by side, the smaller path first."""
    both = 0
    for layer in LAYERS:
        for channel in range(atlas.channels(layer)):
            paths = [e.path for e in atlas.top(layer, channel)]
            if "twin_b.png" in paths and "sub/twin_a.png" in paths:
                both += 1
                i = paths.index("sub/twin_a.png")
                assert paths[i + 1] == "twin_b.png"
    assert both > 0


def test_topk_merge_order_and_ties():
    """A TopK against Python's sorted() on synthetic scores with many exact ties, merged in every order."""
    rng = np.random.default_rng(3)
    channels, k = 5, 4
    parts = []
    for part in range(3):
        paths = [f"p{part}_{i}" for i in range(6)][::-1]  # not in path order
        scores = rng.integers(0, 3, (6, channels)).astype(np.float32)  # values 0, 1, 2: ties everywhere
        ys, xs = rng.integers(0, 9, (6, channels)), rng.integers(0, 9, (6, channels))
        boxes = rng.integers(0, 50, (6, channels, 4))
        parts.append((paths, scores, ys, xs, boxes))
    want = []
    for c in range(channels):
        rows = [(-float(s[i, c]), p[i], int(y[i, c]), int(x[i, c])) for p, s, y, x, _ in parts for i in range(6)]
        want.append([(p, -s, y, x) for s, p, y, x in sorted(rows)[:k]])
    tops = [TopK.from_batch(k, s, p, y, x, b) for p, s, y, x, b in parts]
    for order in itertools.permutations(tops):
        merged = TopK(k).merge(order[0]).merge(order[1]).merge(order[2])
        assert [[e[:4] for e in merged.entries(c)] for c in range(channels)] == want
    nested = tops[2].merge(tops[0].merge(tops[1]))
    for p, _, _, _, b in parts:  # boxes travel with their entries
        for c in range(channels):
            for path, _, _, _, box in nested.entries(c):
                if path in p:
                    assert box == tuple(int(v) for v in b[p.index(path), c])
    with pytest.raises(ValueError, match="top-4 with top-3"):
        tops[0].merge(TopK(3))


def test_batches_hold_one_shape_and_bounded_memory():
    from vizhooks.atlas.scan import Buckets as _Buckets

    rng = np.random.default_rng(5)
    buckets, out, most = _Buckets(batch=3), [], 0
    items = [{"path": f"{i}", "x": torch.zeros(3, 32, int(rng.integers(32, 42)))} for i in range(200)]
    for item in items:
        out += buckets.add(item)
        most = max(most, sum(len(b) for b in buckets.waiting.values()))
    out += buckets.rest()
    assert most <= 4 * 3  # never more than 4 batches' worth waiting, though there are 10 shapes
    assert all(len({tuple(i["x"].shape) for i in batch}) == 1 and 1 <= len(batch) <= 3 for batch in out)
    assert sorted(i["path"] for batch in out for i in batch) == sorted(i["path"] for i in items)


def test_shards_merge_in_any_order(folder, resnet18, oracle):
    """One image per pass computes exactly what the brute force computes, so the merged shards must
    equal it exactly, exact ties (the twins) included: they come from different shards, the larger
    path in the shard merged first."""
    files = [f for f in list_images(folder) if not f.endswith("twin_a.png") and f != "twin_b.png"]
    shards = [files[0::3] + ["sub/twin_a.png"], files[1::3], files[2::3] + ["twin_b.png"]]
    a, b, c = (scan_paths(resnet18, folder, s, LAYERS, top=TOP, size=SIZE, batch=1) for s in shards)
    assert set(a.skipped) | set(b.skipped) | set(c.skipped) == BAD
    one, two = a.merge(b).merge(c), c.merge(b.merge(a))
    assert one.done == two.done == sorted(oracle) and one.skipped == two.skipped
    for layer in LAYERS:
        for key in ("scores", "paths", "ys", "xs", "boxes"):
            assert np.array_equal(getattr(one.tops[layer], key), getattr(two.tops[layer], key))
    _check_partial(two, oracle, sorted(oracle), atol=0.0)
    with pytest.raises(ValueError, match="must not overlap"):
        a.merge(a)


# ----------------------------------------------------------------------------------------------
# resume


def _assert_complete(made, oracle, atlas) -> None:
    assert made.manifest["images"] == 42 and {s["path"] for s in made.manifest["skipped"]} == BAD
    _same_index(made, atlas)
    for layer in LAYERS:
        for channel in range(made.channels(layer)):
            got = [(e.path, e.score, e.y, e.x) for e in made.top(layer, channel)]
            _check_channel(got, oracle, sorted(oracle), layer, channel)


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_index(folder, resnet18, oracle, atlas, tmp_path):
    out, killed = tmp_path / "atlas", tmp_path / "killed"
    seen: dict[int, int] = {}
    on_disk: dict[int, int] = {}

    def interrupt(batches: int, state: PartialAtlas) -> None:
        seen[batches] = len(state.done)
        saved = read_progress(out)
        on_disk[batches] = len(saved[0].done) if saved else 0
        if batches == 3:  # what a killed process would leave: the checkpoint of batch 2
            killed.mkdir()
            for name in ("progress.npz", "progress.log"):
                (killed / name).write_bytes((out / name).read_bytes())
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_atlas(folder, resnet18, LAYERS, out, top=TOP, size=SIZE, batch=4, checkpoint_every=2,
                    on_batch=interrupt, progress=False)
    assert hook_count(resnet18.model) == 0
    assert on_disk == {1: 0, 2: seen[2], 3: seen[2]}  # the checkpoint after batch 2 was on disk during batch 3
    state, config = read_progress(out)  # the interrupt saved batch 3 too
    assert 0 < seen[2] < seen[3] == len(state.done) < 42 and config["layers"] == LAYERS
    _check_partial(state, oracle, state.done)  # the finished part is the top-k of exactly those images
    assert not (out / "index.parquet").exists()
    with pytest.raises(AtlasError, match="unfinished"):
        load_atlas(out)
    _assert_complete(build_atlas(folder, resnet18, LAYERS, out, top=TOP, size=SIZE, batch=4, progress=False),
                     oracle, atlas)

    # killed: the log may hold lines a later checkpoint wrote before it died; they are not counted
    unsaved = [p for p in sorted(oracle) if p not in read_progress(killed)[0].done][0]
    with open(killed / "progress.log", "a") as fh:
        fh.write(json.dumps({"path": unsaved}) + "\n")
    assert len(read_progress(killed)[0].done) == seen[2]
    _assert_complete(build_atlas(folder, resnet18, LAYERS, killed, top=TOP, size=SIZE, batch=4, progress=False),
                     oracle, atlas)
    after, _ = read_progress(killed)  # the checkpoint of the finished run names every file once
    assert sorted(after.done) == sorted(oracle) and set(after.skipped) == BAD
    assert len((killed / "progress.log").read_text().splitlines()) == 44
    with pytest.raises(AtlasError, match=r"other settings \(--top\)") as refused:
        build_atlas(folder, resnet18, LAYERS, out, top=TOP + 1, size=SIZE, progress=False)
    from vizhooks import i18n  # QA 2026-12-06: the Chinese command line said this refusal in English

    i18n.set_language("zh")
    try:
        said = i18n.said(f"err_{refused.value.code}", refused.value.values)
        assert said.startswith(f"{out} 里的图谱是用别的设置（--top）")
    finally:
        i18n.set_language("en")
    (killed / "progress.log").write_text("")
    with pytest.raises(AtlasError, match="damaged"):
        read_progress(killed)


# ----------------------------------------------------------------------------------------------
# receptive fields


def _sees(net: nn.Module, side: int) -> torch.Tensor:
    """Brute force: ``sees[y, x, i, j]`` is True when raising input pixel (i, j) changes channel 0
    of the output at (y, x)."""
    x = torch.rand(1, 3, side, side, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        base = net(x)[0, 0]
        sees = torch.zeros(*base.shape, side, side, dtype=torch.bool)
        for i, j in itertools.product(range(side), range(side)):
            bumped = x.clone()
            bumped[0, :, i, j] += 100
            sees[:, :, i, j] = net(bumped)[0, 0] != base
    return sees


class _ChannelsLastBlock(nn.Module):
    """A ConvNeXt block in small: depthwise conv, then LayerNorm and two Linears on a permuted
    (N, H, W, C) copy, permuted back and added to the input."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.norm, self.up, self.down = nn.LayerNorm(c), nn.Linear(c, 2 * c), nn.Linear(2 * c, c)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.down(F.gelu(self.up(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


def test_receptive_field_by_hand_and_by_perturbation():
    net = nn.Sequential(nn.Conv2d(3, 1, 3, stride=1, padding=1, bias=False),
                        nn.Conv2d(1, 1, 3, stride=2, padding=1, bias=False), nn.MaxPool2d(2, 2))
    # by hand, per axis: r = 1, j = 1, left = 0
    #   conv 3 s1 p1: r = 1 + 2*1 = 3, j = 1, left = 0 - 1*1 = -1
    #   conv 3 s2 p1: r = 3 + 2*1 = 5, j = 2, left = -1 - 1*1 = -2
    #   pool 2 s2 p0: r = 5 + 1*2 = 7, j = 4, left = -2        centre of position 0: -2 + (7 - 1) / 2 = 1
    rf = receptive_field(net, "2", (16, 16))
    assert (rf.size, rf.jump, rf.start) == ((7, 7), (4, 4), (1.0, 1.0))
    assert rf.box(1, 2) == (6, 2, 13, 9)  # (4x - 2, 4y - 2, 4x + 5, 4y + 5)
    # the oracle: with positive weights, raising one input pixel changes exactly the outputs that see it
    for conv in (net[0], net[1]):
        nn.init.uniform_(conv.weight, 0.5, 1.0)
    sees = _sees(net, 16)
    for y, x_ in itertools.product(range(sees.shape[0]), range(sees.shape[1])):
        left, top, right, bottom = rf.box(y, x_)
        want = torch.zeros(16, 16, dtype=torch.bool)
        want[max(top, 0):bottom, max(left, 0):right] = True
        assert torch.equal(sees[y, x_], want), (y, x_)


@pytest.mark.slow
def test_receptive_field_through_permute_and_channel_mixing():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 2, stride=2), _ChannelsLastBlock(4)).eval()
    # by hand: conv 2 s2 -> r 2, j 2, left 0; depthwise 3 s1 p1 -> r 6, j 2, left -2; LayerNorm and
    # Linear mix channels only; the residual's union with the identity (r 2, left 0) is the main path
    rf = receptive_field(net, "1", (12, 12))
    assert (rf.size, rf.jump, rf.start) == ((6, 6), (2, 2), (0.5, 0.5))
    sees = _sees(net, 12)
    for y, x_ in itertools.product(range(6), range(6)):
        left, top, right, bottom = rf.box(y, x_)
        want = torch.zeros(12, 12, dtype=torch.bool)
        want[max(top, 0):bottom, max(left, 0):right] = True
        assert torch.equal(sees[y, x_], want), (y, x_)
    # mixing over the map gives no local field, and the brute force agrees that position (0, 0) sees
    # pixels far outside any small box: GroupNorm's statistics, and a Linear over the width
    group = nn.Sequential(nn.Conv2d(3, 4, 2, stride=2), nn.GroupNorm(2, 4)).eval()
    assert receptive_field(group, "1", (12, 12)) is None
    assert _sees(group, 12)[0, 0, 11, 11]
    width = nn.Sequential(nn.Conv2d(3, 4, 2, stride=2), nn.Linear(6, 6)).eval()
    assert receptive_field(width, "1", (12, 12)) is None
    assert _sees(width, 12)[0, 0, 0, 11]


@pytest.mark.slow
def test_convnext_receptive_fields():
    from torchvision.models import convnext_tiny

    fields = receptive_fields(convnext_tiny(), ["features.0", "features.1.0", "features.1.0.block.3", "features.2"],
                              (64, 64))
    # stem 4/4 -> r 4, j 4, left 0; each block's 7x7 depthwise conv adds 6 * 4 = 24 (left -12 each),
    # the Linear inside the block keeps the depthwise conv's field; three blocks -> r 76, left -36;
    # the 2/2 downsampling conv -> r 80, j 8 (its LayerNorm mixes channels only)
    assert [(f.size[0], f.jump[0]) for f in fields.values()] == [(4, 4), (28, 4), (28, 4), (80, 8)]
    assert fields["features.1.0"].box(0, 0)[:2] == (-12, -12)


def test_resnet18_receptive_fields(resnet18):
    fields = receptive_fields(resnet18.model, ["conv1", "layer2.0.conv2", "fc"], (64, 64))
    assert (fields["conv1"].size, fields["conv1"].jump, fields["conv1"].start) == ((7, 7), (2, 2), (0.0, 0.0))
    # main path by hand: conv1 7/2/3 -> r 7, j 2, left -3; maxpool 3/2/1 -> r 11, j 4, left -5;
    # four 3x3 s1 convs of layer1 -> r 43, j 4, left -21; layer2.0.conv1 3/2/1 -> r 51, j 8, left -25;
    # layer2.0.conv2 3/1/1 -> r 67, j 8, left -33 (the 1x1 shortcut sees less, so the union is the main path)
    assert (fields["layer2.0.conv2"].size, fields["layer2.0.conv2"].jump) == ((67, 67), (8, 8))
    assert fields["layer2.0.conv2"].box(0, 0)[:2] == (-33, -33)
    assert fields["fc"] is None  # after the global pool a position sees everything


def test_conv1_boxes_in_original_pixels(tmp_path, resnet18):
    rng = np.random.default_rng(11)
    for name, (width, height) in {"wide.png": (90, 50), "tall.png": (50, 90), "square.png": (40, 40)}.items():
        Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(tmp_path / name)
    state = scan_paths(resnet18, tmp_path, list_images(tmp_path), ["conv1"], top=3, size=SIZE)
    top = state.tops["conv1"]
    for channel in range(top.channels):
        for path, _, y, x, box in top.entries(channel):
            image = load_image(tmp_path / path)
            w0, h0 = image.size
            h_in, w_in = resnet18.preprocess(image, SIZE).shape[-2:]
            left, top_, right, bottom = max(2 * x - 3, 0), max(2 * y - 3, 0), min(2 * x + 4, w_in), min(2 * y + 4, h_in)
            want = (int(np.floor(left * w0 / w_in)), int(np.floor(top_ * h0 / h_in)),
                    int(np.ceil(right * w0 / w_in)), int(np.ceil(bottom * h0 / h_in)))
            assert box == want, (path, y, x)
    inside = tmp_path / "atlas"  # an atlas written inside the folder it reads is not read back as images
    for _ in range(2):
        made = build_atlas(tmp_path, resnet18, ["conv1"], inside, top=3, size=SIZE, progress=False)
        assert made.manifest["images"] == 3 and made.manifest["skipped"] == []
        assert [e.box for e in made.top("conv1", 5)] == [e[4] for e in top.entries(5)]
    # QA 2026-12-06: a second atlas into another folder read the first one's 3 x 64 crops as photos
    again = build_atlas(tmp_path, resnet18, ["conv1"], tmp_path / "atlas2", top=3, size=SIZE, progress=False)
    assert again.manifest["images"] == 3


def test_conv1_boxes_of_a_squashed_model_cover_the_whole_picture(tmp_path, resnet18):
    """A Hugging Face ViT's processor squashes the photo to a square (no crop): a box in its input maps
    back by each side's own scale, with no crop offset."""
    import dataclasses

    from vizhooks.models.images import InputSpec

    squashed = dataclasses.replace(resnet18, input=InputSpec(fixed_size=64, squash=True, resize_rule="transformers"))
    Image.fromarray(np.random.default_rng(3).integers(0, 256, (50, 90, 3), dtype=np.uint8)).save(tmp_path / "w.png")
    top = scan_paths(squashed, tmp_path, ["w.png"], ["conv1"], top=1, size=SIZE).tops["conv1"]
    for channel in range(top.channels):
        for _, _, y, x, box in top.entries(channel):
            left, top_, right, bottom = max(2 * x - 3, 0), max(2 * y - 3, 0), min(2 * x + 4, 64), min(2 * y + 4, 64)
            assert box == (left * 90 // 64, top_ * 50 // 64, -(-right * 90 // 64), -(-bottom * 50 // 64)), (y, x)


# ----------------------------------------------------------------------------------------------
# reading an atlas back


def test_load_atlas_round_trip(atlas, tmp_path):
    import pyarrow.parquet as pq

    again = load_atlas(atlas.path)
    assert again.layers == LAYERS and again.model == "resnet18"
    table = pq.read_table(atlas.path / "index.parquet")
    assert table.num_rows == TOP * (64 + 128)
    assert table.column_names[:4] == ["layer", "channel", "rank", "path"]
    for layer in LAYERS:
        for channel in (0, atlas.channels(layer) - 1):
            got = again.top(layer, channel)
            assert got == atlas.top(layer, channel) and len(got) == TOP
            for rank, e in enumerate(got):
                assert e.crop == atlas.path / "crops" / layer / f"{channel}_{rank}.jpg"
                with Image.open(e.crop) as crop:
                    assert crop.format == "JPEG" and crop.size == (e.box[2] - e.box[0], e.box[3] - e.box[1])
    with pytest.raises(KeyError, match="layer1.0.conv1"):
        again.top("layer9", 0)
    with pytest.raises(IndexError, match="0 to 63"):
        again.top("layer1.0.conv1", 64)

    (tmp_path / "empty").mkdir()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "manifest.json").write_bytes((atlas.path / "manifest.json").read_bytes())
    (damaged / "index.parquet").write_bytes(b"PAR1 not really")
    for path, needle in ((tmp_path / "nope", "no atlas folder"), (tmp_path / "empty", "not an atlas"),
                         (damaged, "damaged")):
        with pytest.raises(AtlasError, match=needle) as info:
            load_atlas(path)
        assert len(str(info.value).splitlines()) == 1


# ----------------------------------------------------------------------------------------------
# the command line


def test_cli_writes_parquet_manifest_and_crops(folder, tmp_path, capsys, atlas):
    out = tmp_path / "cli-atlas"
    code, stdout, err = run_cli(capsys, "exemplars", folder, "--weights", "none", "--layers", LAYERS[0], "--top", TOP,
                                "--size", SIZE, "--out", out, "--batch", 16, "--workers", 1)
    assert code == 0, err
    assert stdout.strip() == str(out)
    assert (out / "index.parquet").is_file() and (out / "manifest.json").is_file()
    assert len(list((out / "crops" / "layer1.0.conv1").glob("*.jpg"))) == 64 * TOP
    assert "skipped broken.png" in err and "skipped sub/notes.jpg" in err and "images/s" in err
    got = load_atlas(out)
    assert got.layers == LAYERS[:1] and got.manifest["images"] == 42
    for channel in range(64):
        assert [(e.path, e.y, e.x, e.box) for e in got.top(LAYERS[0], channel)] == \
            [(e.path, e.y, e.x, e.box) for e in atlas.top(LAYERS[0], channel)]


@pytest.mark.parametrize("argv,needle", [
    (["{missing}"], "no folder"),
    (["{file}"], "is a file"),
    (["{empty}"], "no image files"),
    (["{folder}", "--layers", "layer1.0.conv9"], "layer1.0.conv1"),
    (["{folder}", "--top", "0"], "--top"),
    (["{folder}", "--top", "many"], "--top"),
    (["{folder}", "--batch", "0"], "--batch"),
    (["{folder}", "--engine", "spark"], "invalid choice"),
    (["{folder}", "--size", "8"], "--size"),
    (["{folder}", "--rank", "relevance"], "--target CLASS"),
    (["{folder}", "--target", "3"], "--rank relevance"),
    (["{folder}", "--rank", "relevance", "--target", "1000"], "from 0 to 999"),
    (["{folder}", "--rank", "relevance", "--target", "-1"], "--target"),
    (["{folder}", "--rank", "relevance", "--target", "zebra crossing"], "no class 'zebra crossing'"),
    (["{folder}", "--rank", "peak"], "invalid choice"),
])
def test_cli_bad_input_exits_2_with_one_line(folder, tmp_path, capsys, argv, needle):
    (tmp_path / "empty").mkdir()
    (tmp_path / "just.txt").write_text("a file")
    fill = {"missing": tmp_path / "nope", "file": tmp_path / "just.txt", "empty": tmp_path / "empty", "folder": folder}
    size = [] if "--size" in argv else ["--size", "64"]
    argv = ["exemplars", *[a.format(**fill) for a in argv], *size, "--weights", "none", "--workers", "0",
            "--out", str(tmp_path / "o")]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vizhooks: error:"), err
    assert needle.lower() in lines[0].lower()
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_cli_a_folder_of_unreadable_pictures_is_no_atlas(tmp_path, capsys):
    """QA 2026-12-06: a folder where no picture can be read gave an empty atlas and exit 0, which a script
    takes for success; it is exit 2 with explain's and concepts' sentence, after the skipped files."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.jpg").write_bytes(b"not a picture")
    (tmp_path / "bad" / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n cut")
    code, out, err = run_cli(capsys, "exemplars", tmp_path / "bad", "--size", "64", "--layers", "conv1", "--weights",
                             "none", "--workers", "0", "--out", tmp_path / "o")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert lines[-1] == "vizhooks: error: " + t("cli_none_readable", n=2, folder=tmp_path / "bad")
    assert sum("a.jpg" in line or "b.png" in line for line in lines[:-1]) == 2  # each skipped file, said first


def test_cli_help_and_light_import(capsys):
    with pytest.raises(SystemExit) as info:
        main(["exemplars", "--help"])
    assert info.value.code == 0
    assert "--top" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "exemplars" in capsys.readouterr().out
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys, vizhooks; print(sorted(m for m in ('pyarrow', 'pandas', 'streamlit') if m in sys.modules))"
    done = run_python(code, cwd=ROOT, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_rate_line_shows_count_rate_time_left_and_a_closing_line(monkeypatch, capsys):
    """The progress line both engines share: at most twice a second, time left from the rate so far."""
    from vizhooks.atlas import state

    clock = iter([100.0, 101.0, 101.2, 102.0, 104.0])
    monkeypatch.setattr(state.time, "monotonic", lambda: next(clock))
    line = state.RateLine(total=40, show=True)  # started at 100.0
    line.update(10)  # 101.0: 10 images in 1 s -> 30 left take 3 s
    line.update(11)  # 101.2: too soon, nothing written
    line.update(20)  # 102.0: 20 in 2 s -> 20 left take 2 s
    line.finish()  # 104.0: 40 in 4 s
    err = capsys.readouterr().err.split("\r")[1:]
    assert err[0].strip() == "10/40 images, 10.0 images/s, 0m03s left"
    assert err[1].strip() == "20/40 images, 10.0 images/s, 0m02s left"
    assert err[2].strip() == "40/40 images, 10.0 images/s, done."
    assert len(err) == 3
    monkeypatch.setattr(state.time, "monotonic", lambda: 200.0)
    quiet = state.RateLine(total=40, show=False)
    quiet.update(5)
    quiet.finish()
    assert capsys.readouterr().err == ""


# ----------------------------------------------------------------------------------------------
# ranked by relevance (RelMax)


def _taylor_by_hand(model: nn.Module, x: torch.Tensor, layer: str, target: int) -> np.ndarray:
    """(C, H, W) activation x gradient of logit[target], by a plain hook and torch.autograd.grad."""
    kept = []
    handle = model.get_submodule(layer).register_forward_hook(lambda m, a, out: kept.append(out))
    try:
        xg = x.clone().requires_grad_(True)
        logits = model(xg)
    finally:
        handle.remove()
    (grad,) = torch.autograd.grad(logits[0, target], kept[0])
    return (kept[0].detach() * grad)[0].numpy()


def test_relevance_ranking_equals_taylor_by_hand_and_differs_from_activation(folder, resnet18, atlas, by_relevance):
    target = RELEVANCE_TARGET
    products = {p: {layer: _taylor_by_hand(resnet18.model, resnet18.preprocess(load_image(folder / p), SIZE),
                                           layer, target) for layer in LAYERS}
                for p in list_images(folder) if p not in BAD}
    differ = 0
    for layer in LAYERS:
        for channel in range(by_relevance.channels(layer)):
            got = by_relevance.top(layer, channel)
            want = sorted((-float(products[p][layer][channel].sum()), p) for p in products)[:TOP]
            for entry, (neg, _path) in zip(got, want, strict=True):
                m = products[entry.path][layer][channel]
                # a signed sum with cancellation: its float noise scales with the summed magnitudes
                tol = 1e-4 * float(np.abs(m).sum()) + 1e-6
                assert entry.score == pytest.approx(float(m.sum()), abs=tol), (layer, channel, entry.path)
                assert entry.score == pytest.approx(-neg, abs=2 * tol), (layer, channel)
                assert m[entry.y, entry.x] >= m.max() - tol  # the box sits where the evidence is largest
            differ += [e.path for e in got] != [e.path for e in atlas.top(layer, channel)]
    assert differ > 0  # what excites a channel is not what made it matter
    assert by_relevance.manifest["rank"] == "relevance" and by_relevance.manifest["target"] == target
    assert "rank" not in atlas.manifest


def test_relevance_ranking_needs_a_class():
    with pytest.raises(AtlasError, match="target"):
        build_atlas(ROOT / "sample_images", None, LAYERS, "unused", rank="relevance")  # type: ignore[arg-type]
    with pytest.raises(AtlasError, match="rank must be"):
        build_atlas(ROOT / "sample_images", None, LAYERS, "unused", rank="peak")  # type: ignore[arg-type]


def test_relevance_of_a_batch_equals_single_passes_in_double_precision(folder, resnet18):
    """A batch's scores are each photo's own (eval mode: the photos do not mix; one class for all; the
    summed backward gives each photo its own gradient). In float32 a batch's convolutions round
    differently from a single photo's, which can flip a ReLU whose input is ~1e-5 from zero and move a
    score by a few percent (img08 at 64 px: 0.0979 batched, 0.0955 alone: one gate of layer4.0); in
    float64 nothing flips, so the batch must equal per-photo autograd.grad to the rounding of
    the float32 scores the atlas keeps."""
    import copy

    from vizhooks.atlas.scan import _batch_relevance

    model = copy.deepcopy(resnet18.model).double()
    xs = [resnet18.preprocess(load_image(folder / p), SIZE).double() for p in list_images(folder) if p not in BAD]
    same = [x for x in xs if x.shape == xs[0].shape][:8]
    assert len(same) >= 4
    batch = torch.cat(same)
    target = 3
    got = _batch_relevance(model, LAYERS, batch, target)
    for layer in LAYERS:
        for i, x in enumerate(same):
            kept: list[torch.Tensor] = []
            handle = model.get_submodule(layer).register_forward_hook(lambda m, a, out, kept=kept: kept.append(out))
            try:
                logits = model(x.clone().requires_grad_(True))
            finally:
                handle.remove()
            (grad,) = torch.autograd.grad(logits[0, target], kept[0])
            want = (kept[0].detach() * grad)[0].sum(dim=(1, 2)).numpy()
            np.testing.assert_allclose(got[layer][0][i], want, rtol=1e-6, atol=1e-8, err_msg=f"{layer} photo {i}")


@pytest.mark.slow
def test_cli_rank_relevance_writes_the_relevance_atlas(folder, by_relevance, tmp_path, capsys):
    """``--rank relevance --target C`` gives the atlas build_atlas(rank="relevance") gives (for both
    layers; the CLI's is of the first), whose scores the test above checks against autograd.grad; the
    manifest says which ranking it holds."""
    target = RELEVANCE_TARGET
    code, stdout, err = run_cli(capsys, "exemplars", folder, "--weights", "none", "--layers", LAYERS[0], "--top", TOP,
                                "--size", SIZE, "--batch", 1, "--workers", 0, "--rank", "relevance", "--target", target,
                                "--out", tmp_path / "cli")
    assert code == 0, err
    got = load_atlas(stdout.strip())
    assert got.manifest["rank"] == "relevance" and got.manifest["target"] == target
    want = by_relevance
    for channel in range(want.channels(LAYERS[0])):
        assert [(e.path, e.y, e.x) for e in got.top(LAYERS[0], channel)] == \
            [(e.path, e.y, e.x) for e in want.top(LAYERS[0], channel)]


@pytest.mark.parametrize("given", ["3", "tiger shark"])
def test_cli_target_is_a_class_number_or_name_as_for_concepts(folder, tmp_path, capsys, monkeypatch, given):
    """QA 2026-12-06: `exemplars --target` took only a number while `concepts --target` takes a class name too;
    both give the build the class's index."""
    import vizhooks.atlas as atlas_package
    from vizhooks.models.registry import imagenet_categories

    asked = []
    monkeypatch.setattr(atlas_package, "build_atlas", lambda *a, **k: asked.append(k["target"]) or 1 / 0)
    assert imagenet_categories()[3] == "tiger shark"
    with pytest.raises(ZeroDivisionError):
        run_cli(capsys, "exemplars", folder, "--weights", "none", "--layers", LAYERS[0], "--size", "64", "--workers", 0,
                "--rank", "relevance", "--target", given, "--out", tmp_path / "o")
    assert asked == [3]


def test_a_setting_only_the_saved_atlas_has_is_named(monkeypatch, tmp_path):
    """Review 2026-12-06: a relevance atlas continued without --rank said "made with other settings ()": only
    the new run's settings were compared."""
    from vizhooks.atlas import store

    monkeypatch.setattr(store, "read_progress", lambda out: (None, {"top": 3, "rank": "relevance", "target": 5}))
    with pytest.raises(AtlasError, match=r"other settings \(--rank, --target\)"):
        store.resume(tmp_path, {"top": 3}, ["conv1"], 3)
