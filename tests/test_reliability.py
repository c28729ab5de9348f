"""A whole class on one server: memory bounds, faults, fuzzed input, security settings."""

from __future__ import annotations

import io
import os
import random
import re
import threading
import time
import tomllib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_
from PIL import Image

import vizhooks as vz
import vizhooks.analysis as va
from tests.helpers import PAGE_FILES, ROOT, count_hooks
from vizhooks.analysis import analyse
from vizhooks.hooks.budget import CaptureTooLargeError, capture_bytes, check_capture
from vizhooks.models.images import MAX_PIXELS
from vizhooks.models.layers import architecture_convs, conv_layers
from vizhooks.ops import is_out_of_memory, release_memory
from vizhooks.page.cache import ByteLRU

SAMPLES = sorted(p for p in (ROOT / "sample_images").iterdir() if p.suffix in (".jpg", ".png"))


# --- memory budget ------------------------------------------------------------------------------


@pytest.mark.slow
def test_estimate_equals_a_real_capture(resnet18, resnet50):
    for bundle in (resnet18, resnet50):
        names = [c.name for c in conv_layers(bundle.model)]
        x = torch.randn(1, 3, 72, 104)
        real = sum(t.numel() * 4 for t in vz.capture(bundle.model, x, names).values())
        assert capture_bytes(bundle.name, names, (72, 104)) == real
    real_in = sum(t.numel() * 4 for t in vz.capture(resnet18.model, x, ["fc", "layer1.0.relu"], what="input").values())
    assert capture_bytes("resnet18", ["fc", "layer1.0.relu"], (72, 104), "input") == real_in


def test_huge_capture_is_refused_before_it_runs():
    names = [c.name for c in architecture_convs("resnet152")]
    with pytest.raises(CaptureTooLargeError) as info:
        check_capture("resnet152", names, (512, 1024))
    msg = str(info.value)
    assert "155 layers" in msg and "600 MB" in msg and "fewer layers" in msg and "\n" not in msg
    # every convolution of ResNet-50 at 512 px (a landscape photo) still fits
    assert check_capture("resnet50", [c.name for c in architecture_convs("resnet50")], (512, 768)) < 600e6


def test_analyse_refuses_without_running(monkeypatch, resnet18):
    monkeypatch.setattr("vizhooks.hooks.budget.MAX_CAPTURE_MB", 0.01)
    ran = []
    monkeypatch.setattr(va, "capture_with_output", lambda *a, **k: ran.append(1))
    with pytest.raises(CaptureTooLargeError):
        analyse(resnet18, Image.new("RGB", (300, 200)), 224, ["conv1"])
    assert ran == []


def test_byte_lru_is_bounded_and_least_recently_used():
    cache = ByteLRU(100)
    made = []

    def make(k, n):
        made.append(k)
        return (k, n)

    for k in "abc":
        cache.get_or_create(k, lambda k=k: make(k, 40), lambda v: v[1])
    assert len(cache) == 2 and cache.total_bytes == 80  # "a" was dropped
    cache.get_or_create("b", lambda: make("b", 40), lambda v: v[1])  # hit: "b" becomes newest
    cache.get_or_create("d", lambda: make("d", 40), lambda v: v[1])  # drops "c", the oldest
    cache.get_or_create("b", lambda: make("b", 40), lambda v: v[1])
    cache.get_or_create("c", lambda: make("c", 40), lambda v: v[1])
    assert made == ["a", "b", "c", "d", "c"]
    big = cache.get_or_create("huge", lambda: make("huge", 500), lambda v: v[1])
    assert big == ("huge", 500) and "huge" not in cache._items and cache.total_bytes <= 100


def test_byte_lru_threads():
    cache = ByteLRU(10_000)
    errors = []

    def work(i):
        try:
            for j in range(200):
                k = (i * 7 + j) % 50
                assert cache.get_or_create(k, lambda k=k: k * 2, lambda v: 100) == k * 2
        except BaseException as exc:  # asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a cache thread hung"
    assert not errors and cache.total_bytes == 100 * len(cache) <= 10_000



# --- single flight: identical requests at the same time compute once ------------------------------


def _race(n: int, call) -> list:
    """``call()`` from ``n`` threads released together; each thread's result or exception."""
    start = threading.Barrier(n)
    results: list = [None] * n

    def work(i: int) -> None:
        start.wait()
        try:
            results[i] = call()
        except BaseException as exc:  # returned for the test to look at
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a waiter hung"
    return results


def test_single_flight_computes_once_and_every_waiter_gets_that_object():
    cache, made = ByteLRU(10_000), []

    def create():
        made.append(1)
        time.sleep(0.3)  # long enough that every thread arrives while it runs
        return {"value": len(made)}

    results = _race(12, lambda: cache.get_or_create("k", create, lambda v: 100))
    assert len(made) == 1 and cache.computed == 1 and cache.hits == 11
    assert all(r is results[0] for r in results) and results[0] == {"value": 1}
    assert cache.in_flight == 0 and len(cache) == 1


def test_single_flight_too_large_value_still_reaches_every_waiter():
    cache, made = ByteLRU(10), []

    def create():
        made.append(1)
        time.sleep(0.2)
        return object()

    results = _race(6, lambda: cache.get_or_create("big", create, lambda v: 1_000))
    assert len(made) == 1 and all(r is results[0] for r in results) and len(cache) == 0


def test_single_flight_failure_reaches_every_waiter_and_is_not_kept():
    cache, made = ByteLRU(10_000), []

    def failing():
        made.append(1)
        time.sleep(0.3)
        raise ValueError("this photo cannot be read")

    results = _race(8, lambda: cache.get_or_create("k", failing, lambda v: 1))
    assert len(made) == 1
    assert all(isinstance(r, ValueError) and str(r) == "this photo cannot be read" for r in results)
    assert len(cache) == 0 and cache.in_flight == 0 and cache.computed == 0
    # not cached: the next request computes again, and this time it works
    assert cache.get_or_create("k", lambda: "fine", lambda v: 1) == "fine" and len(made) == 1


def test_single_flight_wait_is_bounded_and_the_first_request_still_finishes():
    from vizhooks.page.cache import StillComputingError

    cache, release = ByteLRU(10_000, wait_seconds=0.2), threading.Event()
    first: list = []
    runner = threading.Thread(target=lambda: first.append(
        cache.get_or_create("slow", lambda: release.wait(30) and "done", lambda v: 1)))
    runner.start()
    while cache.in_flight == 0:
        time.sleep(0.01)
    with pytest.raises(StillComputingError, match="another session"):
        cache.get_or_create("slow", lambda: "second", lambda v: 1)
    release.set()
    runner.join(timeout=30)
    assert first == ["done"] and cache.get_or_create("slow", lambda: "again", lambda v: 1) == "done"


def test_single_flight_create_may_ask_for_its_own_key_without_waiting_on_itself():
    cache = ByteLRU(10_000, wait_seconds=5)

    def create():
        return "inner:" + cache.get_or_create("k", lambda: "x", lambda v: 1)

    assert cache.get_or_create("k", create, lambda v: 1) == "inner:x"


def test_simultaneous_first_requests_of_the_page_run_one_analysis(fresh_results):
    """Six sessions asking the page's results for the same analysis at once: one forward pass."""
    from tests.helpers import whole_passes
    from vizhooks.page import results

    data = (ROOT / "sample_images" / "chelsea.jpg").read_bytes()
    results.get_bundle("resnet18")  # built before the race: the model cache is Streamlit's own
    args = ("resnet18", va.image_digest(data), data, 96, ("conv1", "layer2.0.conv1"), "output")
    with whole_passes() as passes:
        got = _race(6, lambda: results.get_analysis(*args))
    assert not any(isinstance(r, BaseException) for r in got), got
    assert len(passes) == 1 and all(r is got[0] for r in got)


# --- 300 requests in a row ----------------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        return int(re.search(r"VmRSS:\s+(\d+)", fh.read()).group(1)) / 1024


@pytest.mark.slow
def test_300_requests_keep_memory_hooks_figures_and_temp_files_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    plt.close("all")
    bundles = [vz.load_model("resnet18", weights="none"), vz.load_model("resnet34", weights="none")]
    images = [vz.load_image(p) for p in SAMPLES]
    rng = random.Random(0)
    for i in range(3):
        arr = np.random.default_rng(i).integers(0, 255, (90 + 13 * i, 120, 3), dtype=np.uint8)
        images.append(Image.fromarray(arr))
    cache = ByteLRU(20e6)  # the page keeps recent results like this (bounded in bytes)
    rss = []
    for i in range(300):
        bundle = bundles[i % 2]
        names = [c.name for c in conv_layers(bundle.model)]
        layers = rng.sample(names, 3)
        size = rng.choice([48, 64, 80])  # small: the count of requests finds a leak, not their size
        image = images[rng.randrange(len(images))]
        a = cache.get_or_create((bundle.name, id(image), size, tuple(layers)),
                                lambda b=bundle, im=image, s=size, ly=layers: analyse(b, im, s, ly),
                                lambda a: a.nbytes)
        for name in layers[:2]:
            vz.figure_to_png(vz.feature_grid(a.activations[name], channels=rng.choice([4, 16, 64])))
        if i == 50:
            rss.append(_rss_mb())
    rss.append(_rss_mb())
    growth = rss[1] - rss[0]
    assert growth < 100, f"resident memory grew {growth:.0f} MB after warm-up"
    assert all(count_hooks(b.model) == 0 for b in bundles)
    assert plt.get_fignums() == []
    assert list(tmp_path.iterdir()) == []
    assert cache.total_bytes <= 20e6


# --- faults -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_failure_mid_backward_restores_everything(resnet18):
    model = resnet18.model
    before = [(p.requires_grad, p.grad) for p in model.parameters()]
    calls = {"n": 0}

    def boom(grad):
        calls["n"] += 1
        raise RuntimeError("simulated failure during backward")

    # a failing tensor hook on an intermediate value makes backward raise half way
    def arm(module, args, out):
        out.register_hook(boom)  # returns None: the forward output is left as it is

    handle = model.layer2.register_forward_hook(arm)
    try:
        with pytest.raises(RuntimeError, match="during backward"):
            vz.capture_gradients(model, torch.randn(1, 3, 64, 64), ["layer3.0.conv1", "conv1"])
    finally:
        handle.remove()
    assert calls["n"] == 1
    assert count_hooks(model) == 0 and not model.training
    assert [(p.requires_grad, p.grad) for p in model.parameters()] == before
    assert vz.capture_gradients(model, torch.randn(1, 3, 64, 64), ["conv1"])["conv1"].shape[1] == 64


def test_out_of_memory_is_recognised():
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    release_memory()  # callable without a GPU


# --- fuzzed images ------------------------------------------------------------------------------


def _valid_images() -> list[bytes]:
    out = []
    for fmt, mode in [("PNG", "RGB"), ("JPEG", "RGB"), ("GIF", "P"), ("BMP", "RGB"), ("WEBP", "RGB"),
                      ("TIFF", "RGB"), ("PNG", "RGBA")]:
        buf = io.BytesIO()
        Image.new(mode, (23, 17), 120).save(buf, fmt)
        out.append(buf.getvalue())
    return out


VALID = _valid_images()


def _check(data: bytes) -> None:
    try:
        im = vz.load_image(data)
    except vz.InvalidImageError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert im.mode == "RGB" and im.width * im.height <= MAX_PIXELS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st_.binary(max_size=4096))
def test_fuzz_random_bytes(data):
    _check(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st_.sampled_from(range(len(VALID))), st_.lists(st_.tuples(st_.integers(0, 10_000), st_.integers(0, 255)),
                                                       max_size=8), st_.integers(0, 10_000))
def test_fuzz_mutated_images(which, flips, cut):
    data = bytearray(VALID[which])
    for pos, value in flips:
        data[pos % len(data)] = value
    _check(bytes(data[: max(1, len(data) - cut % len(data))]))


# --- security -----------------------------------------------------------------------------------


def test_streamlit_config_is_safe():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["enableXsrfProtection"] is True
    assert cfg["server"].get("enableCORS", True) is True
    # the server's limit is the largest upload, a clip; each photo uploader sets its own 20 MB
    from vizhooks.video import MAX_VIDEO_MB

    assert cfg["server"]["maxUploadSize"] == MAX_VIDEO_MB <= 100
    upload = (ROOT / "vizhooks" / "page" / "sources" / "upload.py").read_text()
    assert re.search(r"^PHOTO_MB = 20\b", upload, re.M) and upload.count("max_upload_size=PHOTO_MB") == 1
    # one photo uploader (the sidebar's and the Compare view's) and the video's, the Teach view's
    # photos (20 MB each, as the photo uploader) and taught checkpoint, and the Concepts view's photos
    # (20 MB each); no other
    uploaders = {p.relative_to(ROOT).as_posix(): n for p in PAGE_FILES if (n := p.read_text().count("file_uploader("))}
    assert uploaders == {"vizhooks/page/sources/upload.py": 1, "vizhooks/page/sources/video.py": 1,
                         "vizhooks/page/views/teach.py": 2, "vizhooks/page/views/concepts.py": 1}
    for view in ("teach", "concepts"):
        code = (ROOT / "vizhooks" / "page" / "views" / f"{view}.py").read_text()
        assert code.count("max_upload_size=PHOTO_MB") == 1, view
    assert cfg["client"]["showErrorDetails"] == "none"
    assert cfg["browser"]["gatherUsageStats"] is False


def _sources() -> dict[Path, str]:
    files = [*PAGE_FILES, *sorted((ROOT / "vizhooks").glob("*.py"))]
    return {p: p.read_text() for p in files}


def test_nothing_reaches_a_shell_eval_or_pickle():
    pattern = re.compile(r"(?<![.\w])(eval|exec)\(|os\.system|subprocess|pickle\.loads?\(|shell=True|__import__")
    for path, text in _sources().items():
        assert not pattern.search(text), path.name


def test_weights_are_only_loaded_safely_and_only_from_operator_paths():
    for path, text in _sources().items():
        for call in re.findall(r"torch\.load\([^)]*\)", text):
            assert "weights_only=True" in call, (path.name, call)
    page = "\n".join(p.read_text() for p in PAGE_FILES if not p.name.startswith("texts"))  # code, not sentences
    loads = re.findall(r"load_model\(([^)]*)\)", page)
    assert loads == ["name"]  # the page never passes a weights path; only env / CLI can
    assert "write_bytes" not in page and not re.search(r"open\([^)]*['\"]w", page)  # uploads stay in memory


@pytest.mark.slow
def test_env_weights_problems_are_one_sentence(tmp_path, monkeypatch, capsys):
    from vizhooks.cli import main

    bad = {"missing": tmp_path / "nope.pth", "truncated": tmp_path / "cut.pth", "wrong": tmp_path / "r50.pth"}
    torch.save(vz.load_model("resnet18", weights="none").model.state_dict(), bad["truncated"])
    bad["truncated"].write_bytes(bad["truncated"].read_bytes()[:3000])
    torch.save(vz.load_model("resnet50", weights="none").model.state_dict(), bad["wrong"])
    for kind, path in bad.items():
        monkeypatch.setenv("VIZHOOKS_WEIGHTS", str(path))
        bundle = vz.load_model("resnet18")  # auto: keeps running on random weights, and says why
        assert not bundle.pretrained and "VIZHOOKS_WEIGHTS" in bundle.weights_status, kind
        code = main([str(SAMPLES[0]), "--weights", "imagenet", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and str(path) in err, (kind, err)
    assert not (tmp_path / "o").exists()
    cache = Path(os.environ["TORCH_HOME"]) / "hub" / "checkpoints"
    assert not cache.exists() or not any(cache.iterdir())
